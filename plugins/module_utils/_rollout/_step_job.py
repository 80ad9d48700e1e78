# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The detached step's job file, read on the node: wait until the step has ended, return its result, remove the file.

The role starts ``kubelet_reservations_apply`` with ``async`` (roles/reservations/tasks/apply.yml). Ansible's
async_wrapper then writes ``{"started": ..., "finished": false, ...}`` to a job file named by the job id in its
async directory and, when the step exits, replaces it (a temporary file and a rename: its ``jwrite``) with the step's
own result, or with ``{"failed": ...}`` when the step could not be run or outlived its ``async`` budget. A result
without ``started`` (or with ``finished`` true) is the end, as ``ansible.builtin.async_status`` reads it.

Asking ``async_status`` once a second, then once more to remove the file, cost a module run per node each time:
for a batch of 8 nodes a round of about a second of a 2-CPU controller (docs/benchmarks.md, issue 48). Here one
module run waits on the node, reading the file every ``poll`` seconds, and returns as soon as the step has ended.

The file is root's (the async directory is the connection user's home's ``.ansible_async``): it is opened through
``_safe_open`` (the directory and the file this user's alone, no link followed), read up to ``MAX_JOB_BYTES``, and
removed by its name in that checked directory.
"""

from __future__ import annotations

import json
import os
import re
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

# async_wrapper names the file by the job id the controller chose and its own pid ("123456789012.4567").
JOB_ID = re.compile(r'\A[0-9A-Za-z][0-9A-Za-z_.-]{0,63}\Z')
# The step's result is a few kilobytes; a file far larger was not written by it.
MAX_JOB_BYTES = 16 << 20
# What async_wrapper and AnsibleModule add around the step's own result: not the step's to return again.
WRAPPER_KEYS = frozenset(('started', 'finished', 'ansible_job_id', 'results_file', 'invocation', 'warnings',
                          'deprecations'))


class JobFileError(NodeallocError):
    """The job file is not the detached step's, cannot be read, or the step did not end in time."""


def job_path(results_file, jid):
    """``(directory, name)`` of the job file once ``results_file`` is an absolute path whose name is the job id."""
    if not isinstance(jid, str) or not JOB_ID.match(jid):
        raise JobFileError('jid %r is not an Ansible async job id' % (jid,))
    if not isinstance(results_file, str) or not os.path.isabs(results_file):
        raise JobFileError('results_file %r is not an absolute path' % (results_file,))
    directory, name = os.path.split(os.path.normpath(results_file))
    if name != jid:
        raise JobFileError('results_file %s is not the file of job %s' % (results_file, jid))
    return directory, name


def _read(dir_fd, name, path):
    """The file's bytes (at most MAX_JOB_BYTES + 1), or None when it is absent."""
    try:
        fd = _safe_open.open_in(dir_fd, name, os.O_RDONLY, path=path)
    except FileNotFoundError:
        return None
    try:
        chunks, size = [], 0
        while size <= MAX_JOB_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def ended(data):
    """The step's result when the job file's bytes say it has ended; None while it runs (or the file is being
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


def wait(results_file, jid, timeout, poll, remove=True, clock=time.monotonic, sleep=time.sleep):
    """The detached step's result once its job file says it has ended; the file is then removed (with ``remove``).

    ``JobFileError`` when the file is missing (nothing to wait for: the job id is not this node's, or the file was
    removed), larger than MAX_JOB_BYTES, not this user's alone (``_safe_open.UnsafePathError``), or the step has not
    ended after ``timeout`` seconds (the file is then left for ``async_status``). ``clock`` and ``sleep`` are the
    tests' to replace.
    """
    directory, name = job_path(results_file, jid)
    deadline = clock() + timeout
    dir_fd = _safe_open.open_directory(directory)
    try:
        last = b''
        while True:
            data = _read(dir_fd, name, results_file)
            if data is None:
                raise JobFileError('%s: no job file: job %s was not started on this node or its file was removed'
                                   % (results_file, jid))
            if len(data) > MAX_JOB_BYTES:
                raise JobFileError('%s: larger than %d bytes: not a step result' % (results_file, MAX_JOB_BYTES))
            job = ended(data)
            if job is not None:
                if remove:
                    os.unlink(name, dir_fd=dir_fd)
                return step_result(job)
            last = data
            if clock() >= deadline:
                raise JobFileError('%s: job %s had not ended after %g s; the file is left in place (%s)'
                                   % (results_file, jid, timeout, last[:200].decode('utf-8', 'replace')))
            sleep(poll)
    finally:
        os.close(dir_fd)
