# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The detached step's job file, read on the node: wait until the step has ended, return its result, remove the file.

The role starts ``kubelet_reservations_apply`` detached (its ``detach``: _step_detach; or with ``async``,
roles/reservations/tasks/apply.yml). Either writes ``{"started": ..., "finished": ..., ...}`` (1/0 from
async_wrapper before ansible-core 2.19, true/false since and from _step_detach) to a job file named by the job id in
the async directory and, when the step exits, replaces it (a temporary file and a rename: async_wrapper's ``jwrite``)
with the step's own result, or with ``{"failed": ...}`` when the step could not be run, died without a result or
outlived its budget. A result without ``started`` (or with ``finished`` true) is the end, as
``ansible.builtin.async_status`` reads it.

Asking ``async_status`` once a second, then once more to remove the file, cost a module run per node each time:
for a batch of 8 nodes a round of about a second of a 2-CPU controller (docs/benchmarks.md, issue 48). Here one
module run waits on the node, reading the file every ``poll`` seconds, and returns as soon as the step has ended, or
after ``timeout`` seconds with the step still running (the role then runs it again: an SSH session silent for
minutes can be cut by a load balancer's idle timeout).

The file is in the async directory of the user the step runs as (root's, through become): it is opened through
``_safe_open`` (the directory and the file this user's alone, no link followed), read up to ``MAX_JOB_BYTES``, and
removed by its name in that checked directory. Only a name of async_wrapper's own form is opened, and nothing of what
the file holds is shown unless it parsed as the end of a job.
"""

from __future__ import annotations

import json
import os
import re
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

# async_wrapper names the file by the job id the controller chose ('j' and up to 12 digits: ansible-core 2.16-2.21's
# action plugins) and its own pid: "j340917285611.4242".
JOB_ID = re.compile(r'\Aj?[0-9]{1,12}\.[0-9]{1,10}\Z')
# The step's result is a few kilobytes; a file far larger was not written by it.
MAX_JOB_BYTES = 16 << 20
# async_wrapper's parent returns "started" after at most 2.5 s even when its daemon has not written the file yet
# (its ipc_watcher: 25 polls of 0.1 s); on a loaded node the daemon may take longer to be scheduled. A missing file is
# a job not yet written for this long from the first read, then an error.
MISSING_GRACE_SECONDS = 30.0
# What async_wrapper and AnsibleModule add around the step's own result: not the step's to return again (warnings and
# deprecations are handed back separately, to be shown).
WRAPPER_KEYS = frozenset(('started', 'finished', 'ansible_job_id', 'results_file', 'invocation', 'warnings',
                          'deprecations'))


class JobFileError(NodeallocError):
    """The job file is not the detached step's or cannot be read."""


def job_path(results_file, jid):
    """``(directory, name)`` of the job file once ``results_file`` is an absolute path whose name is the job id."""
    if not isinstance(jid, str) or not JOB_ID.match(jid):
        raise JobFileError('jid %r is not an Ansible async job id (j<digits>.<pid>)' % (jid,))
    if not isinstance(results_file, str) or not os.path.isabs(results_file):
        raise JobFileError('results_file %r is not an absolute path' % (results_file,))
    directory, name = os.path.split(os.path.normpath(results_file))
    if name != jid:
        raise JobFileError('results_file %s is not the file of job %s' % (results_file, jid))
    return directory, name


def _read(path):
    """The file's bytes (at most MAX_JOB_BYTES + 1), or None when it or its directory is absent."""
    try:
        return _safe_open.read_bytes(path, MAX_JOB_BYTES)
    except FileNotFoundError:
        return None


def ended(data):
    """The job's end (a dict) when the job file's bytes say it has ended; None while it runs (or the file is being
    replaced: async_status also takes what does not parse as a job still running)."""
    try:
        job = json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(job, dict):
        return None
    if 'started' in job and not job.get('finished'):
        return None
    return job


def step_result(job):
    """The step's own result from what the job file holds at the end: without the wrapper's keys."""
    return {key: value for key, value in job.items() if key not in WRAPPER_KEYS and not key.startswith('_ansible')}


def messages(job, key):
    """The texts of the job's ``warnings`` or ``deprecations`` (strings before ansible-core 2.19, dicts with ``msg``
    since; anything else shown as JSON), to be handed to the module's own warn."""
    found = job.get(key)
    if not isinstance(found, list):
        found = [] if found is None else [found]
    return [item if isinstance(item, str) else str(item.get('msg', json.dumps(item, default=str)))
            if isinstance(item, dict) else json.dumps(item, default=str) for item in found]


def wait(results_file, jid, timeout, poll, remove=True, clock=time.monotonic, sleep=time.sleep):
    """``(job, ended)``: the job file's end and True once it says the step has ended (the file is then removed, with
    ``remove``); ``(None, False)`` when it has not after ``timeout`` seconds (the file is left for the next wait).

    ``JobFileError`` when the file stays missing for MISSING_GRACE_SECONDS (the job id is not this node's, or the file
    was removed), is larger than MAX_JOB_BYTES, or cannot be read or removed; ``_safe_open.UnsafePathError`` when it or
    its directory is not this user's alone. ``clock`` and ``sleep`` are the tests' to replace.
    """
    directory, name = job_path(results_file, jid)
    start = clock()
    try:
        while True:
            data = _read(os.path.join(directory, name))
            if data is None:
                if clock() - start >= MISSING_GRACE_SECONDS:
                    raise JobFileError('%s: no job file after %g s: job %s was not started on this node or its file '
                                       'was removed' % (results_file, MISSING_GRACE_SECONDS, jid))
            elif len(data) > MAX_JOB_BYTES:
                raise JobFileError('%s: larger than %d bytes: not a step result' % (results_file, MAX_JOB_BYTES))
            else:
                job = ended(data)
                if job is not None:
                    if remove:
                        dir_fd = _safe_open.open_directory(directory)
                        try:
                            os.unlink(name, dir_fd=dir_fd)
                        finally:
                            os.close(dir_fd)
                    return job, True
            if clock() - start >= timeout:
                return None, False
            sleep(poll)
    except OSError as exc:
        raise JobFileError('%s: %s' % (results_file, exc.strerror or exc))
