# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The on-node step's sequence (the logic of kubelet_reservations_apply), all under the node lock.

``run`` takes the node lock, first undoes a change an earlier, killed step left unverified (its journal), then
applies (``state=applied``: optionally give the kubelet a ``--config-dir``, write the reservations, restart, wait
for health, soak, restore on failure) or rolls back (``state=restored``), and last writes or removes the status
files the caller asked for on success or on failure. ``state=kept`` (the decision is keep) only writes the status.

It reuses the one home of each part: ``_config_change.plan``/``apply`` decide and write (the journal goes
in through ``apply``'s hook, after the backup is durable and before the file is replaced), ``_step_primitives.restore``
puts a backup back, ``_step_primitives.verify`` restarts and waits for health, ``_config_dir_flag`` makes and undoes
the ``--config-dir`` edits. docs/rollout.md describes the sequence and the journal.
"""

from __future__ import annotations

import contextlib
import json
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_dir_flag as flags
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change as change
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_primitives as step
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._file_io import directory_lock
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._probe import probe_node

CONFIG_DIR_RECORD = 'config_dir.json'
# A status file is read by the node's sampler (node_exporter's textfile collector reads what the sampler renders).
STATUS_MODE = 0o644


def run(params, check_mode, diff, result):
    """Carry the step out: fills ``result`` (the module's return), raises NodeallocError or ValueError on failure.

    ``params`` are the module's, with the kubelet maps as strings (change.string_maps). The status files of
    ``params['status']`` are written after the outcome, failure included, in real runs only.
    """
    if params['state'] == 'kept':
        # The decision is to keep the reservations: no lock, no read of the kubelet, no restart; only the status.
        written = write_status(params['status'], 'on_success', check_mode)
        result['changed'] = bool(written)
        if written:
            result['status_changed'] = written
        return
    applied = False
    try:
        with _null_lock() if check_mode else step.node_lock(params['state_dir'], params['node_lock_timeout'],
                                                            result['step']) as waited:
            if waited and waited.get('holder'):
                holder = waited['holder']
                result['waited_for_node_lock'] = (
                    'waited %.0f s for the node lock held by another step (pid %s, started %s, from controller %s)'
                    % (waited.get('seconds', 0), holder.get('pid'), holder.get('started'), holder.get('controller')))
            recovered = _recover(params, check_mode)
            if recovered:
                result['recovered'] = recovered
            if params['state'] == 'applied' and waited and waited.get('holder') and not params['apply_after_wait']:
                # The step that held the lock may have changed this node since our caller measured it.
                result['msg'] = ('not changed: %s, which may have changed this node since it was measured; '
                                 'left as that step verified it (run again to measure anew)' % result['waited_for_node_lock'])
            elif params['state'] == 'applied':
                applied = _apply(params, check_mode, diff, result)
            else:
                applied = _restore(params, check_mode, result)
    except (NodeallocError, ValueError) as exc:
        if not check_mode:
            try:
                write_status(params['status'], 'on_failure')
            except NodeallocError as status_exc:
                raise step.StepError('%s; and the status file was not written: %s' % (exc, status_exc))
        raise
    if not check_mode:
        # A step that left the node as it was (it waited for another, or the config moved since it was measured)
        # did not put the asked-for config in force: the status says it is still pending, as after a failure.
        written = write_status(params['status'], 'on_success' if applied else 'on_failure')
        if written:
            # Beside changed, which stays the config's: a step that changed nothing there says "not changed".
            result['status_changed'] = written


def write_status(status, outcome, check_mode=False):
    """Carry out each entry of ``status[outcome]``; returns the paths changed (or, in check mode, that would be).

    ``{'path', 'content'}`` writes ``content`` atomically, as Ansible's ``to_nice_json`` renders it; ``{'path',
    'state': 'absent'}`` removes the file (what the sampler must forget). A file that already holds that content, or
    is already absent, is left alone, so a run that changes nothing reports no change.

    The role wrote these with ``ansible.builtin.copy`` of ``content | to_nice_json`` and a newline (indent 4, sorted
    keys, ``', '``/``': '`` separators, ASCII): the same bytes, so a file a role of an earlier release wrote is
    not rewritten.
    """
    changed = []
    for entry in (status or {}).get(outcome) or []:
        path = entry['path']
        if entry.get('state') == 'absent':
            if os.path.lexists(path):
                changed.append(path)
                if not check_mode:
                    _remove_status(path)
            continue
        text = json.dumps(entry['content'], indent=4, sort_keys=True, separators=(',', ': ')) + '\n'
        if _status_text(path) == text:
            continue
        changed.append(path)
        if check_mode:
            continue
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        except OSError as exc:
            raise _file_io.WriteError('%s: cannot make its directory: %s' % (path, exc.strerror or exc))
        _file_io.write_atomic(path, text, mode=STATUS_MODE)
    return changed


def _status_text(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None  # absent, or unreadable: written anew


def _remove_status(path):
    try:
        _file_io.remove_durably(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _file_io.WriteError('%s: cannot remove it: %s' % (path, exc.strerror or exc))


def check_status(status):
    """Why ``status`` is not a status option (None when it is).

    ``{'on_success'|'on_failure': [entry]}``, each entry ``{'path', 'content' (a dict)}`` (write) or ``{'path',
    'state': 'absent'}`` (remove).
    """
    if not status:
        return None
    unknown = sorted(set(status) - {'on_success', 'on_failure'})
    if unknown:
        return 'status takes on_success and on_failure, not %s' % ', '.join(unknown)
    for outcome, entries in status.items():
        for entry in entries or []:
            writes = isinstance(entry, dict) and set(entry) == {'path', 'content'} and isinstance(entry['content'], dict)
            removes = isinstance(entry, dict) and entry == {'path': entry.get('path'), 'state': 'absent'}
            if not (writes or removes):
                return 'status.%s entries are {path, content (a dict)} or {path, state: absent}, got %r' % (
                    outcome, entry)
            if not os.path.isabs(str(entry['path'])):
                return 'status.%s path %r is not absolute' % (outcome, entry['path'])
    return None


def _node(params, unit=None):
    return step.Node(unit or params['unit'], params['healthz_url'], params['kubepods_limit_file'])


def _moved_since_measured(measured, previous):
    """What differs between the reservations the caller measured and those in force now ('' if nothing)."""
    if not measured:
        return ''
    moved = []
    for option, field in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
        if option not in measured:
            continue
        then = change.string_map(measured[option] or {})
        now = change.string_map(previous.get(field) or {})
        if then != now:
            moved.append('%s %s, now %s' % (field, then, now))
    return '; '.join(moved)


def _expected_limit(allocatable):
    return (allocatable or {}).get('kubepods_memory_limit_bytes')


def _undo(params, entry):
    """Restore what a journal entry wrote, restart and check health: returns a sentence; raises StepError."""
    edits = entry.get('config_dir_edits') or []
    # A directory the step removed comes back before the file in it; one it created goes after the file in it.
    remade = [e for e in edits if e['kind'] == 'dir' and not e['created']]
    parts = flags.undo(remade)
    if entry.get('target'):
        with directory_lock(os.path.dirname(entry['target']), params['config_lock_timeout']):
            parts.append(step.restore(entry['target'], entry.get('backup_file'), entry.get('created', False),
                                      entry['written_sha256']))
    parts.extend(flags.undo([e for e in edits if e not in remade]))
    done = '; '.join(parts) or 'Nothing to undo'
    node = step.Node(entry['unit'], entry['healthz_url'], entry.get('kubepods_limit_file'))
    try:
        step.verify(node, entry.get('expected_limit_before'), params['health_timeout'], params['health_poll'], 0)
    except step.StepError as exc:
        raise step.StepError('%s, but the kubelet is not healthy on it either: %s' % (done, exc))
    return done + ' and the kubelet is healthy again'


def _recover(params, check_mode):
    entry = step.read_journal(params['state_dir'])
    if entry is None:
        return None
    if check_mode:
        return 'would first undo the unverified change to %s left by step pid %s (started %s)' % (
            entry.get('target') or '--config-dir', entry.get('pid'), entry.get('started'))
    try:
        done = _undo(params, entry)
    except step.StepError as exc:
        if 'no longer holds' not in str(exc):
            raise step.StepError('an earlier step (pid %s, started %s) was killed before verifying %s; undoing it '
                                 'failed: %s' % (entry.get('pid'), entry.get('started'),
                                                 entry.get('target') or '--config-dir', exc))
        done = str(exc)
    step.clear_journal(params['state_dir'])
    _discard_undo_copy(entry)
    return 'an earlier step (pid %s, started %s, from %s) was killed before verifying its change: %s' % (
        entry.get('pid'), entry.get('started'), entry.get('controller'), done)


def _read_config_dir_record(params):
    """What a step did to give the kubelet O(drop_in_dir) as its --config-dir, if a step did (else None)."""
    record = step.read_state(params['state_dir'], CONFIG_DIR_RECORD)
    if record and params['drop_in_dir'] and record.get('config_dir') == os.path.realpath(params['drop_in_dir']):
        return record
    return None


def _journal_entry(params, result, **fields):
    return dict(unit=params['unit'], healthz_url=params['healthz_url'], kubepods_limit_file=params['kubepods_limit_file'],
                **dict(fields, **result['step']))


def _enable_config_dir(params, check_mode, result):
    """Make the directory and add --config-dir to the extra-args file, journalled first; returns the edits."""
    if not params['enable_config_dir']:
        return []
    config_dir = os.path.realpath(params['enable_config_dir'])
    edits = flags.plan_enable(params['extra_args_file'], config_dir)
    if edits:
        result['changed'] = True
        result['config_dir_edits'] = [flags.describe(e) for e in edits]
    if edits and not check_mode:
        # Journalled before the first edit: a step killed from here on is undone by the next one.
        step.write_journal(params['state_dir'], _journal_entry(
            params, result, config_dir_edits=flags.journal_form(edits), expected_limit_before=None))
        try:
            flags.apply(edits)
        except (OSError, NodeallocError):
            flags.undo(flags.journal_form(edits))
            step.clear_journal(params['state_dir'])
            raise
    return edits


def _apply(params, check_mode, diff, result):
    """state=applied; returns True when the asked-for config is in force (verified) once it returns."""
    node_facts = probe_node(params)  # before any edit: a node that cannot be read is left untouched
    target_dir = params['drop_in_dir'] or os.path.dirname(params['path'])
    enabled = _enable_config_dir(params, check_mode, result)
    # Check mode before the role's reservations_enable_config_dir has made the drop-in directory: plan it as the
    # empty directory the real run creates; there is nothing to lock, and check mode writes nothing.
    pending_dir = check_mode and not os.path.lexists(target_dir)
    with _null_lock() if pending_dir else directory_lock(target_dir, params['config_lock_timeout']):
        decision = change.plan_on_node(dict(params, state='present'), node_facts,
                                       missing_drop_in_dir_is_empty=pending_dir, check_cgroups=False)
        if pending_dir:
            result['msg'] = '%s does not exist yet: planned as the empty directory the run would create' % target_dir
        if not check_mode:
            stale = change.clean_up(decision)
            if stale:
                result['removed_temporary_files'] = stale
        result.update(path=decision['target'], previous=decision['previous'], new=decision['new'],
                      allocatable_before=decision['allocatable_before'], allocatable_after=decision['allocatable_after'],
                      changed=decision['changed'] or bool(enabled))
        if diff:
            result['diff'] = change.diff(decision)
        moved = _moved_since_measured(params['measured_reserved'], decision['previous'])
        if moved:
            if enabled and not check_mode:
                flags.undo(flags.journal_form(enabled))  # nothing restarted on it yet
                step.clear_journal(params['state_dir'])
            result['changed'] = False
            result.pop('config_dir_edits', None)
            result['msg'] = ('not changed: the config changed since this node was measured (%s), probably by another '
                             'run; run again to measure anew' % moved)
            return False
        if not (decision['changed'] or enabled) or check_mode:
            return True
        target = os.path.realpath(decision['target'])
        entry = _journal_entry(params, result, config_dir_edits=flags.journal_form(enabled), written_sha256=None,
                               expected_limit_before=_expected_limit(decision['allocatable_before']))

        def journal(backup_file, created, written_sha256):
            # After the backup is durable, before the file is replaced: a step killed from here on is undone.
            entry.update(target=target, backup_file=backup_file, created=created, written_sha256=written_sha256)
            step.write_journal(params['state_dir'], entry)

        try:
            if decision['changed']:
                change.apply(dict(decision, target=target), backup=True, journal=journal)
            else:
                step.write_journal(params['state_dir'], entry)
        except (OSError, NodeallocError):
            flags.undo(entry['config_dir_edits'])
            step.clear_journal(params['state_dir'])
            raise
    result.update(backup_file=entry.get('backup_file'), created=entry.get('created', False),
                  written_sha256=entry['written_sha256'])
    try:
        result['health'] = step.verify(_node(params), _expected_limit(decision['allocatable_after']),
                                       params['health_timeout'], params['health_poll'], params['soak_seconds'])
    except step.StepError as exc:
        failure = str(exc)
        try:
            done = _undo(params, entry)
        except step.StepError as undo_exc:
            step.clear_journal(params['state_dir'])
            raise step.StepError('%s. %s.' % (failure, undo_exc))
        step.clear_journal(params['state_dir'])
        raise step.StepError('%s. %s.' % (failure, done))
    if enabled:
        # What a rollback past this step takes back: only what this step made (never someone else's directory).
        step.write_state(params['state_dir'], CONFIG_DIR_RECORD, dict(
            config_dir=os.path.realpath(params['enable_config_dir']), edits=flags.journal_form(enabled)))
    step.clear_journal(params['state_dir'])
    return True


def _restore_target(params):
    """Our drop-in when O(drop_in_dir) holds it (or the step being undone created it), else the main file."""
    if params['drop_in_dir']:
        drop_in = os.path.join(params['drop_in_dir'], params['drop_in_name'])
        if params['created'] or os.path.exists(drop_in):
            return os.path.realpath(drop_in), True
    return os.path.realpath(params['path']), False


def _limit_in_force(params, drop_in_dir):
    """The kubepods limit the effective config (main file and, with ``drop_in_dir``, drop-ins) sets now."""
    decision = change.plan_on_node(dict(params, state='present', kube_reserved=None, system_reserved=None,
                                        drop_in_dir=drop_in_dir), probe_node(params), check_cgroups=False)
    return _expected_limit(decision['allocatable_before'])


def _restore(params, check_mode, result):
    """state=restored; returns True when the node runs what was asked for (restored, or already on it)."""
    target, is_drop_in = _restore_target(params)
    result['path'] = target
    current = step.file_sha256(target)
    if params['only_if_sha256'] and current != params['only_if_sha256']:
        result['msg'] = '%s no longer holds what the step wrote; left as it is' % target
        return True
    backup_file = None if params['created'] else (params['backup_file'] or step.newest_backup(target))
    disable, record = [], None
    # Our drop-in with no backup was created by us: before it, there was none, so undoing is removing it.
    remove = params['created'] or (is_drop_in and backup_file is None)
    if remove:
        # Back to before the first change: where a step gave the kubelet this --config-dir, take that back too.
        record = _read_config_dir_record(params)
        if record:
            disable, left = flags.plan_disable(record['edits'])
            if left:
                result['config_dir_left'] = left
        if current is None and not disable:
            return True
        written_sha256 = None
    else:
        if backup_file is None:
            raise step.StepError('no nodealloc backup (*.nodealloc.bak) next to %s, nothing restored' % target)
        result['backup_file'] = backup_file
        written_sha256 = step.sha256(step.check_backup(backup_file))
        if current == written_sha256:
            return True
    result['changed'] = True
    if disable:
        result['config_dir_edits'] = [flags.describe(e) for e in disable]
    if check_mode:
        return True
    # The flag goes with the drop-in, under the journal; the directory only once the kubelet is verified without it
    # (until then it holds the copy of the drop-in an undo would put back).
    disable_files = [e for e in disable if e['kind'] == 'file']
    # The limit the config the kubelet runs now sets: what health is checked against should the rollback be undone.
    limit_before = _limit_in_force(params, params['drop_in_dir'])
    with directory_lock(os.path.dirname(target), params['config_lock_timeout']):
        # What the kubelet runs now, kept (not as a *.nodealloc.bak, which the next rollback would take for a backup)
        # and journalled like a rollout's change, so that a restore that fails, or is killed, is undone.
        undo_copy = None if current is None else _keep_undo_copy(target)
        entry = _journal_entry(params, result, target=target, backup_file=undo_copy, created=current is None,
                               undo_copy=undo_copy, written_sha256=written_sha256,
                               config_dir_edits=flags.journal_form(disable_files), expected_limit_before=limit_before)
        step.write_journal(params['state_dir'], entry)
        step.restore(target, backup_file, remove, None)
    flags.apply(disable_files)
    try:
        # The limit the restored effective config sets, worked out as the kubelet does.
        # Without the flag the kubelet reads no drop-in directory any more.
        limit_after = _limit_in_force(params, None if disable_files else params['drop_in_dir'])
        result['health'] = step.verify(_node(params), limit_after, params['health_timeout'], params['health_poll'],
                                       params['soak_seconds'])
    except (step.StepError, NodeallocError, ValueError) as exc:
        failure = 'the rollback to %s failed: %s' % (result.get('backup_file') or 'no drop-in', exc)
        try:
            done = _undo(params, entry)
        except step.StepError as undo_exc:
            done = str(undo_exc)
        step.clear_journal(params['state_dir'])
        _discard_undo_copy(entry)
        raise step.StepError('%s. Put back what the kubelet ran before the rollback: %s.' % (failure, done))
    step.clear_journal(params['state_dir'])
    _discard_undo_copy(entry)
    if record and disable:
        for sentence in flags.apply([e for e in disable if e['kind'] == 'dir']):
            if 'not empty' in sentence:
                result.setdefault('config_dir_left', []).append(sentence)
        step.remove_state(params['state_dir'], CONFIG_DIR_RECORD)
    return True


def _keep_undo_copy(target):
    """Copy ``target`` (content, mode, owner) durably to ``target.nodealloc.undo``; returns the copy's path."""
    undo_copy = target + '.nodealloc.undo'
    with open(target, 'rb') as handle:
        data = handle.read()
    stat = os.stat(target)
    _file_io.write_atomic(undo_copy, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid,
                          follow_symlinks=True)  # beside the kubelet's config, where it lives
    return undo_copy


def _discard_undo_copy(entry):
    if entry.get('undo_copy') and os.path.exists(entry['undo_copy']):
        _file_io.remove_durably(entry['undo_copy'])


@contextlib.contextmanager
def _null_lock():
    """Check mode locks nothing (and a directory still to be made cannot be locked)."""
    yield {}
