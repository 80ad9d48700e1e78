# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The on-node rollout step: write, restart, wait for health, soak, and restore on failure, under a node lock.

Everything here runs on the node, so a node never depends on the controller to be put back:
the reservations role runs the step detached (its ``detach``, _step_detach), and a step that is itself
killed leaves a journal that the next step on the node finds and acts on before anything else.

* The node lock is an flock on the state directory (the same kind of lock ``_file_io`` uses, so
  no lock file is left); ``holder.json`` beside it names the holder (pid, start time, controller)
  for a run that waits and then refuses.
* The journal ``step.json`` is written (through ``_file_io``) after the backup is durable and
  before the config is replaced; it names the target, the backup (or that the file is new) and the
  SHA-256 of what the step writes. It is removed once the node is verified or restored.
* A restore puts back only the backup its own step made, only while the file still holds what that
  step wrote, and only when the backup parses as a KubeletConfiguration.

Health mirrors what the kubelet itself exposes: systemd's ``ActiveState``, ``MainPID`` and
``NRestarts`` of the unit (``systemctl show``), the kubelet's ``/healthz`` (``ok``, served by
``pkg/kubelet/server/server.go`` ``InstallDefaultHandlers`` through ``healthz.InstallHandler``), and
the kubepods memory limit the container manager sets from node allocatable
(``pkg/kubelet/cm/node_container_manager_linux.go`` ``enforceNodeAllocatableCgroups``).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import http.client
import json
import os
import socket
import subprocess
import time
import urllib.parse

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_file as files
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

JOURNAL = 'step.json'
# After a restart, health is asked again this soon, then at twice the interval each time up to poll_seconds: a kubelet
# that is healthy within a second starts its soak then, not up to a whole poll interval later (more checks, never
# fewer: no two are further apart than poll_seconds).
FIRST_RECHECK_SECONDS = 0.25
HOLDER = 'holder.json'
# The kernel rounds a cgroup v1 limit down to a whole page.
LIMIT_SLACK_BYTES = 4096


class StepError(NodeallocError):
    """The step could not be carried out; the message says what was waited for and what was seen."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path):
    try:
        with open(path, 'rb') as handle:
            return sha256(handle.read())
    except FileNotFoundError:
        return None


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def controller_name(given=None, environ=None):
    """The controller as the node sees it: the option, else the SSH client address, else unknown."""
    if given:
        return given
    connection = (environ if environ is not None else os.environ).get('SSH_CONNECTION', '')
    return connection.split()[0] if connection else 'unknown'


def _read_json(path):
    """The JSON in ``path``; None when absent or unreadable. One that is not root's alone (a link, another user's, in
    a directory others can write) raises ``_safe_open.UnsafePathError``: a journal names what a restore writes."""
    try:
        return json.loads(_safe_open.read_bytes(path))
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def node_lock(state_dir, timeout_seconds, holder, poll_seconds=0.5, clock=time.monotonic, sleep=time.sleep):
    """Hold the node lock for a whole step; wait up to ``timeout_seconds``, then refuse naming the holder.

    Yields what the wait saw: ``seconds`` waited and the ``holder`` waited for, if any.
    """
    try:
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        # Root's alone, or refused: the journal and records kept there decide what a later step restores.
        fd = _safe_open.open_directory(state_dir)
    except OSError as exc:
        raise StepError('%s: cannot open the node lock directory: %s' % (state_dir, exc.strerror or exc))
    except _safe_open.UnsafePathError as exc:
        raise StepError('the node lock directory is refused, nothing done: %s' % exc)
    holder_path = os.path.join(state_dir, HOLDER)
    waited = {}
    try:
        start = clock()
        deadline = start + timeout_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = {}
                with contextlib.suppress(_safe_open.UnsafePathError):  # only named in the message
                    other = _read_json(holder_path) or {}
                if other:
                    waited['holder'] = other
                if clock() >= deadline:
                    raise StepError(
                        'another nodealloc step holds the node lock on %s (pid %s, started %s, from controller %s); '
                        'waited %.0f s (node_lock_timeout), nothing done'
                        % (socket.gethostname(), other.get('pid', '?'), other.get('started', '?'),
                           other.get('controller', '?'), timeout_seconds))
                sleep(poll_seconds)
        if clock() > start:
            waited['seconds'] = round(clock() - start, 1)
        _file_io.write_atomic(holder_path, json.dumps(holder, sort_keys=True) + '\n', mode=0o600)
        try:
            yield waited
        finally:
            with contextlib.suppress(OSError):
                _file_io.remove_durably(holder_path)
    finally:
        os.close(fd)


def read_journal(state_dir):
    path = os.path.join(state_dir, JOURNAL)
    if not os.path.lexists(path):
        return None
    try:
        entry = _read_json(path)
    except _safe_open.UnsafePathError as exc:
        raise StepError('%s; nothing restored or changed: remove it after checking the kubelet config by hand' % exc)
    if entry is None:
        # write_atomic never leaves a partial journal; an unreadable one was not written by us.
        raise StepError('%s: not a nodealloc journal; remove it after checking the kubelet config by hand' % path)
    return entry


def write_journal(state_dir, entry):
    _file_io.write_atomic(os.path.join(state_dir, JOURNAL), json.dumps(entry, sort_keys=True) + '\n', mode=0o600)


def clear_journal(state_dir):
    path = os.path.join(state_dir, JOURNAL)
    with contextlib.suppress(FileNotFoundError):
        _file_io.remove_durably(path)


def read_state(state_dir, name):
    """A record a step keeps in the state directory between steps (None when absent or unreadable)."""
    return _read_json(os.path.join(state_dir, name))


def write_state(state_dir, name, record):
    _file_io.write_atomic(os.path.join(state_dir, name), json.dumps(record, sort_keys=True) + '\n', mode=0o600)


def remove_state(state_dir, name):
    with contextlib.suppress(FileNotFoundError):
        _file_io.remove_durably(os.path.join(state_dir, name))


def check_backup(backup_file):
    """The backup's bytes, once they parse as a KubeletConfiguration; a restore never puts back anything else."""
    try:
        files.load_config(backup_file)
    except NodeallocError as exc:
        raise StepError('the backup %s is not a KubeletConfiguration, not restored: %s' % (backup_file, exc))
    with open(backup_file, 'rb') as handle:
        return handle.read()


def restore(target, backup_file, created, written_sha):
    """Put the step's own backup back (or remove the drop-in it created), only over what it wrote.

    Returns a sentence for the operator. Raises StepError when the file holds something else.
    """
    current = file_sha256(target)
    if written_sha is not None and current != written_sha:
        raise StepError('%s no longer holds what this step wrote (someone changed it since); not restored'
                        % target)
    if created:
        if current is not None:
            _file_io.remove_durably(target)
        return 'Removed %s, which this step had created' % target
    data = check_backup(backup_file)
    stat = os.stat(backup_file)
    _file_io.write_atomic(target, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid,
                          follow_symlinks=True)  # the kubelet's config, where it lives
    return 'Restored %s from %s' % (target, backup_file)


def newest_backup(target):
    directory, name = os.path.split(os.path.realpath(target))
    if not os.path.isdir(directory):
        return None  # no kubelet directory at all (a node without a kubelet): no backup either
    found = sorted(n for n in os.listdir(directory) if n.startswith(name + '.') and n.endswith('.nodealloc.bak'))
    return os.path.join(directory, found[-1]) if found else None


class Node:
    """The node's side of health: systemd, /healthz and the kubepods limit. Methods are swapped out in tests."""

    def __init__(self, unit, healthz_url, limit_file=None, clock=time.monotonic, sleep=time.sleep):
        self.unit = unit
        self.healthz_url = healthz_url
        self.limit_file = limit_file
        self.clock = clock
        self.sleep = sleep

    def restart(self):
        # A kubelet that crash-looped (on a config it refused, say) may have hit systemd's start limit
        # (StartLimitBurst starts within StartLimitIntervalSec): systemd then refuses `restart` until the
        # unit's failed state is reset, and a restore would leave the node down. Resetting it is harmless
        # otherwise.
        subprocess.run(['systemctl', 'reset-failed', self.unit], capture_output=True, text=True, check=False)
        completed = subprocess.run(['systemctl', 'restart', self.unit], capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            return 'systemctl restart %s exited %d: %s' % (self.unit, completed.returncode,
                                                           (completed.stderr or completed.stdout).strip())
        return None

    def unit_state(self):
        completed = subprocess.run(['systemctl', 'show', self.unit, '--property=ActiveState,SubState,MainPID,NRestarts'],
                                   capture_output=True, text=True, check=False)
        state = dict(line.split('=', 1) for line in completed.stdout.splitlines() if '=' in line)
        return {'active_state': state.get('ActiveState', 'unknown'), 'sub_state': state.get('SubState', 'unknown'),
                'main_pid': int(state.get('MainPID') or 0), 'n_restarts': int(state.get('NRestarts') or 0)}

    def healthz(self):
        """(ok, what was seen), asked with http.client: the URL is the node's own (default 127.0.0.1:10248)."""
        url = urllib.parse.urlsplit(self.healthz_url)
        connection_class = http.client.HTTPSConnection if url.scheme == 'https' else http.client.HTTPConnection
        try:
            connection = connection_class(url.hostname, url.port, timeout=2)
            try:
                connection.request('GET', url.path or '/')
                response = connection.getresponse()
                body = response.read(200).decode('utf-8', 'replace').strip()
            finally:
                connection.close()
        except (OSError, ValueError, http.client.HTTPException) as exc:
            return False, 'no answer (%s)' % exc
        return response.status == 200 and body == 'ok', 'HTTP %d %r' % (response.status, body)

    def kubepods_limit(self):
        try:
            with open(self.limit_file) as handle:
                text = handle.read().strip()
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise
        return None if text == 'max' else int(text)


def wait_healthy(node, expected_limit, timeout_seconds, poll_seconds):
    """Wait until the unit is active, /healthz answers ok and the kubepods limit is the expected one.

    Returns the unit state at that moment; raises StepError saying what it waited for and what it saw.
    """
    start = node.clock()
    interval = min(poll_seconds, FIRST_RECHECK_SECONDS)
    while True:
        state = node.unit_state()
        healthz_ok, healthz_seen = node.healthz() if state['active_state'] == 'active' else (False, 'not asked')
        check_limit = bool(node.limit_file) and expected_limit is not None
        limit = node.kubepods_limit() if check_limit else None
        limit_ok = not check_limit or (limit is not None and abs(limit - int(expected_limit)) < LIMIT_SLACK_BYTES)
        if state['active_state'] == 'active' and healthz_ok and limit_ok:
            state['healthy_after_seconds'] = round(node.clock() - start, 1)
            return state
        if node.clock() - start >= timeout_seconds:
            waited = ['unit %s active' % node.unit, '%s answering ok' % node.healthz_url]
            seen = ['ActiveState=%s SubState=%s' % (state['active_state'], state['sub_state']), healthz_seen]
            if check_limit:
                waited.append('%s = %d' % (node.limit_file, int(expected_limit)))
                seen.append('%s' % ('missing' if limit is None else limit))
            raise StepError('waited %.0f s for %s; saw %s' % (timeout_seconds, ', '.join(waited), ', '.join(seen)))
        node.sleep(interval)
        interval = min(poll_seconds, interval * 2)


def soak(node, healthy_state, seconds, poll_seconds):
    """For ``seconds`` after the first healthy answer: same MainPID, same NRestarts, active, /healthz ok."""
    start = node.clock()
    checks = 0
    while True:
        elapsed = node.clock() - start
        state = node.unit_state()
        healthz_ok, healthz_seen = node.healthz()
        checks += 1
        problems = []
        if state['active_state'] != 'active':
            problems.append('ActiveState=%s' % state['active_state'])
        if state['main_pid'] != healthy_state['main_pid']:
            problems.append('MainPID %d -> %d' % (healthy_state['main_pid'], state['main_pid']))
        if state['n_restarts'] != healthy_state['n_restarts']:
            problems.append('NRestarts %d -> %d' % (healthy_state['n_restarts'], state['n_restarts']))
        if not healthz_ok:
            problems.append('/healthz %s' % healthz_seen)
        if problems:
            raise StepError('the kubelet did not stay healthy for the %d s soak (reservations_health_soak_seconds): '
                            'waited for unit %s to stay active with MainPID %d and NRestarts %d and %s to keep '
                            'answering ok; after %.0f s saw %s'
                            % (seconds, node.unit, healthy_state['main_pid'], healthy_state['n_restarts'],
                               node.healthz_url, elapsed, ', '.join(problems)))
        if elapsed >= seconds:
            return {'soak_seconds': seconds, 'soak_checks': checks}
        node.sleep(min(poll_seconds, max(0.0, seconds - elapsed)))


def verify(node, expected_limit, timeout_seconds, poll_seconds, soak_seconds, restart=True):
    """Restart (optionally), wait for health, soak: returns what was observed, raises StepError."""
    if restart:
        failure = node.restart()
        if failure:
            raise StepError(failure)
    state = wait_healthy(node, expected_limit, timeout_seconds, poll_seconds)
    observed = dict(state)
    if soak_seconds > 0:
        observed.update(soak(node, state, soak_seconds, poll_seconds))
    return observed
