# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The on-node step detached from its SSH session by the step itself: one pipelined module run starts it.

Why. The step must outlive its controller and its connection (docs/rollout.md, "When the controller dies"): it
finishes or restores by itself. Ansible's ``async`` does that, but its start is six SSH operations per node (the home
directory, a temporary directory, two file copies, a chmod, the run: ``ansible -vvv``), where a pipelined module run
is one. In a batch of 8 nodes on a 2-CPU controller the ``async`` start took 2.7-3.9 s against 0.7 s for one node, most
of the batch's 4.3 s over one node's rollout (docs/benchmarks.md, issue 48). Here the module itself, run pipelined,
forks the step off and returns: one SSH operation per node.

What it keeps of ``async_wrapper`` (ansible-core's ``modules/async_wrapper.py``), so that ``kubelet_reservations_wait``
and ``_step_job`` read it unchanged: a job id of its form (``j<digits>.<pid>``), the job file of that name in the async
directory of the user the step runs as (``~/.ansible_async``, which ``ANSIBLE_ASYNC_DIR`` may name), holding
``{"started": true, "finished": false, ...}`` while the step runs and replaced (a temporary file and a rename) by the
step's own result, as the module prints it, when it ends; a budget past which the step is killed and the job ends
failed. It adds: the job file exists before the start returns (no grace for a daemon not yet scheduled), and a step
that dies without a result (OOM-killed, say) ends failed with how it ended, where ``async_wrapper`` said only that
its output was not JSON.

Processes. The module (the pipelined interpreter) forks; the child calls ``setsid`` and forks the watcher, which
leaves the session (its descriptors 0-2 on ``/dev/null``, every other one closed: sshd ends the session when the
module exits) and forks the worker. The worker returns into the module's own code with its output going to capture
files, runs the step there and prints its result as any module run does; the watcher waits for it, at most the
budget, then kills its process group, and writes the job's end.

The worker may import after the fork (ansible-core 2.19's result encoder is imported on the first exit_json), but
never from the module's payload: Ansible removes the payload (a zip in a temporary directory) when the module's first
process exits, seconds into a 30-s step. Before forking the payload is copied into the async directory; the worker
repoints its import paths at the copy, which the watcher removes. And the worker ends in ``worker_ends_here``
(``os._exit``), never in the wrapper's own clean-up, which would remove the payload directory of the process that
started it, maybe while that one still reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import traceback

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job

ASYNC_DIR = '~/.ansible_async'
# How often the watcher looks whether the worker has ended.
WATCH_SECONDS = 0.25
# What of the worker's output the watcher reads: the step's result is a few kilobytes (_step_job.MAX_JOB_BYTES).
MAX_OUTPUT_BYTES = _step_job.MAX_JOB_BYTES
# Of its error output, shown in a failure.
MAX_ERROR_BYTES = 4096


class DetachError(NodeallocError):
    """The step could not be started detached; nothing was started."""


def async_dir(environ=None):
    """The async directory, as async_wrapper finds it: ``ANSIBLE_ASYNC_DIR`` or ``~/.ansible_async``, expanded."""
    environ = os.environ if environ is None else environ
    return os.path.expanduser(environ.get('ANSIBLE_ASYNC_DIR') or ASYNC_DIR)


def new_job_id(pid=None):
    """A job id of async_wrapper's form (_step_job.JOB_ID): 'j', twelve random digits, '.', this process's pid."""
    return 'j%012d.%d' % (int.from_bytes(os.urandom(8), 'big') % 10 ** 12, os.getpid() if pid is None else pid)


def _payload_archive():
    """The zip this code was imported from (the module's AnsiballZ payload), or None when it runs from files."""
    loader = globals().get('__loader__')
    archive = getattr(loader, 'archive', None)
    return archive if isinstance(archive, str) and os.path.isfile(archive) else None


def _copy_payload(archive, copy):
    """Copy ``archive`` to ``copy`` (0600) in the checked async directory."""
    with open(archive, 'rb') as source:
        _file_io.write_atomic(copy, source.read(), mode=0o600)


def _repoint_imports(archive, copy):
    """Make every later import from the payload ``archive`` read ``copy``: sys.path and the packages' paths."""
    def moved(entry):
        if isinstance(entry, str) and (entry == archive or entry.startswith(archive + os.sep)):
            return copy + entry[len(archive):]
        return entry
    sys.path[:] = [moved(entry) for entry in sys.path]
    for module in list(sys.modules.values()):
        paths = getattr(module, '__path__', None)
        # A namespace package's path (importlib's _NamespacePath) keeps its entries in _path.
        paths = paths if isinstance(paths, list) else getattr(paths, '_path', None)
        if isinstance(paths, list):
            paths[:] = [moved(entry) for entry in paths]
    sys.path_importer_cache.clear()


def _job_text(job):
    return json.dumps(job, sort_keys=True, default=str)


def _write_end(job_file, job):
    _file_io.write_atomic(job_file, _job_text(job), mode=0o600)


def _output(path):
    """The worker's output, at most MAX_OUTPUT_BYTES + 1 of it (more is not a result); b'' when there is none."""
    try:
        return _safe_open.read_bytes(path, MAX_OUTPUT_BYTES)
    except OSError:
        return b''


def _error_tail(dir_fd, name):
    """The last MAX_ERROR_BYTES of the worker's error output (an error's last line is its exception); b'' if none."""
    try:
        fd = _safe_open.open_in(dir_fd, name, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b''
    try:
        os.lseek(fd, max(0, os.fstat(fd).st_size - MAX_ERROR_BYTES), os.SEEK_SET)
        return os.read(fd, MAX_ERROR_BYTES)
    finally:
        os.close(fd)


def _unlink(dir_fd, name):
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def end_of(status, output, errors, jid, budget_exceeded, budget_seconds):
    """The job's end from how the worker ended (``os.waitpid``'s status, None when it was killed past the budget) and
    what it printed: its result when it printed one (a JSON object), else a failure that says how it ended."""
    if budget_exceeded:
        return {'failed': True, 'ansible_job_id': jid,
                'msg': 'the step outlived its budget of %d s and was killed (the node lock is released with it; the '
                       'next step on this node recovers a write it left half done)' % budget_seconds}
    if len(output) <= MAX_OUTPUT_BYTES:
        try:
            result = json.loads(output.decode('utf-8'))
        except (UnicodeDecodeError, ValueError):
            result = None
        if isinstance(result, dict):
            result.pop('started', None)
            result['ansible_job_id'] = jid
            return result
    if os.WIFSIGNALED(status):
        how = 'was killed by signal %d' % os.WTERMSIG(status)
    else:
        how = 'exited with status %d' % os.WEXITSTATUS(status)
    shown = errors.decode('utf-8', 'replace')[-MAX_ERROR_BYTES:].strip()
    return {'failed': True, 'ansible_job_id': jid,
            'msg': 'the step %s without a result%s' % (how, (': %s' % shown) if shown else '')}


def _leave_session():
    """Descriptors 0-2 on /dev/null, every other one closed: nothing of the SSH session's is held."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, os.sysconf('SC_OPEN_MAX') if hasattr(os, 'sysconf') else 1024)


def _watch(worker, directory, job_file, jid, names, budget_seconds):
    """The watcher: wait for the worker, at most ``budget_seconds``, then write the job's end; never returns."""
    deadline = time.monotonic() + budget_seconds
    status, exceeded = 0, False
    while True:
        pid, status = os.waitpid(worker, os.WNOHANG)
        if pid == worker:
            break
        if time.monotonic() >= deadline:
            exceeded = True
            try:
                os.killpg(worker, signal.SIGKILL)
            except OSError:
                # Not its own group (yet): the worker alone.
                os.kill(worker, signal.SIGKILL)
            os.waitpid(worker, 0)
            break
        time.sleep(WATCH_SECONDS)
    dir_fd = _safe_open.open_directory(directory)
    try:
        output = _output(os.path.join(directory, names['output']))
        errors = _error_tail(dir_fd, names['errors'])
    finally:
        # Before the end is written: whoever reads the end finds nothing else of the job's left.
        for name in names.values():
            _unlink(dir_fd, name)
        os.close(dir_fd)
    _write_end(job_file, end_of(status, output, errors, jid, exceeded, budget_seconds))


def _become_worker(dir_fd, names, archive, copy):
    """In the worker: its own process group (killed whole past the budget), its output to the capture files, its
    imports from the payload's ``copy``."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, name in ((1, names['output']), (2, names['errors'])):
        opened = _safe_open.open_in(dir_fd, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.close(null)
    os.close(dir_fd)
    if archive:
        _repoint_imports(archive, copy)


@contextlib.contextmanager
def worker_ends_here():
    """The worker's step runs in this block and the process ends at its end, with the exit status the module gave
    (``SystemExit``), or 1 and the traceback on its error output: never through the code that called it."""
    code = 0
    try:
        yield
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - what the watcher reads is all there is to tell
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def start(budget_seconds, directory=None, archive=None):
    """Start the step detached. Returns the start's result (``ansible_job_id``, ``results_file``, ``started``,
    ``finished`` false) in the module's process, and None in the worker, which then runs the step and prints its
    result as the module would (its output goes to the capture files the watcher reads). ``DetachError`` when the
    job file cannot be written: nothing is started then.

    ``directory``: the async directory (async_dir()); ``archive``: the zip the code is imported from (this module's
    own payload unless given). The module's output must not be written yet (nothing buffered is printed twice).
    """
    directory = async_dir() if directory is None else directory
    jid = new_job_id()
    job_file = os.path.join(directory, jid)
    names = {'output': '.%s.output' % jid, 'errors': '.%s.errors' % jid, 'payload': '.%s.payload.zip' % jid}
    try:
        os.makedirs(directory, 0o700, exist_ok=True)
        dir_fd = _safe_open.open_directory(directory)
    except _safe_open.UnsafePathError as exc:
        raise DetachError('nothing started: %s' % exc)
    except OSError as exc:
        raise DetachError('%s: cannot use the async directory, nothing started: %s' % (directory, exc.strerror or exc))
    try:
        archive = _payload_archive() if archive is None else archive
        try:
            _file_io.write_atomic(job_file, _job_text({'started': True, 'finished': False, 'ansible_job_id': jid}),
                                  mode=0o600)
            if archive:
                _copy_payload(archive, os.path.join(directory, names['payload']))
            sys.stdout.flush()
            sys.stderr.flush()
            child = os.fork()
        except (OSError, NodeallocError) as exc:
            _unlink(dir_fd, jid)
            _unlink(dir_fd, names['payload'])
            raise DetachError('%s: the step was not started: %s' % (job_file, getattr(exc, 'strerror', None) or exc))
        if child:
            os.close(dir_fd)
            os.waitpid(child, 0)
            return {'ansible_job_id': jid, 'results_file': job_file, 'started': True, 'finished': False}
    except BaseException:
        os.close(dir_fd)
        raise
    # The child, and below it the watcher and the worker: none may return into the module but the worker.
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        os.chdir('/')
        _leave_session()
        dir_fd = _safe_open.open_directory(directory)
        worker = os.fork()
        if worker:
            # Its own group from the start, whichever of the two runs first: the budget's kill reaches all of it.
            with contextlib.suppress(OSError):
                os.setpgid(worker, worker)
        else:
            _become_worker(dir_fd, names, archive, os.path.join(directory, names['payload']))
            return None
        os.close(dir_fd)
        _watch(worker, directory, job_file, jid, names, budget_seconds)
    except BaseException:  # noqa: BLE001 - the watcher has no one to tell but the job file
        try:
            _write_end(job_file, {'failed': True, 'ansible_job_id': jid,
                                  'msg': 'the detached step could not be watched: %s' % (sys.exc_info()[1],)})
        except BaseException:  # noqa: BLE001
            pass
    os._exit(0)
