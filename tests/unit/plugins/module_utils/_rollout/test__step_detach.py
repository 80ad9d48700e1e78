"""_step_detach: the step started in processes of its own, outside the caller's session, its end written to a job file
in the form kubelet_reservations_wait reads (_step_job).

Each case runs the start in a child interpreter (RUNNER): it forks, and the worker goes on in the code that called
start, as the module's step does. subprocess.run collecting the runner's output returns only once no process holds its
pipes: a daemon that kept one would hang it to the timeout, the way it would keep an SSH session open.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
import zipfile

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_detach
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job

RUNNER = r'''
import json, os, subprocess, sys, time
mode, directory, budget, archive = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
if archive:
    sys.path.insert(0, archive)
    import detached_payload.first  # imported before the start, as the module's code is
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_detach
started = _step_detach.start(budget, directory, archive=archive)
if started is not None:
    print(json.dumps(dict(started, runner_sid=os.getsid(0))))
    sys.exit(0)


def wait_for_go():
    go = os.path.join(directory, 'go')
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)


if mode == 'result':
    wait_for_go()
    print(json.dumps({'changed': True, 'sid': os.getsid(0), 'pgid': os.getpgid(0), 'pid': os.getpid(),
                      'stdin': os.readlink('/proc/self/fd/0'), 'started': 'not a wrapper key of ours'}))
    sys.exit(0)
if mode == 'failed':
    print(json.dumps({'failed': True, 'msg': 'the kubelet did not come back'}))
    sys.exit(1)
if mode == 'import':
    wait_for_go()
    import detached_payload.second
    print(json.dumps({'imported': detached_payload.second.VALUE}))
    sys.exit(0)
if mode == 'killed':
    os.kill(os.getpid(), 9)
if mode == 'traceback':
    sys.stderr.write('a warning the step printed first\n' * 5000)  # far more than a failure shows: its end is shown
    raise RuntimeError('the step broke before printing a result')
if mode == 'hang':
    child = subprocess.Popen(['sleep', '300'])
    with open(os.path.join(directory, 'child.pid'), 'w') as handle:
        handle.write(str(child.pid))
    time.sleep(300)
'''


@pytest.fixture
def directory(tmp_path):
    path = tmp_path / 'async'
    path.mkdir(mode=0o700)
    return str(path)


def start(mode, directory, budget=120, archive=''):
    """The runner's start result (the job id and file), once its process and every pipe it had are closed: its output
    and error (descriptors 1 and 2), and a pipe it inherited at a descriptor above them, as an SSH session's
    processes may hold one."""
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run([sys.executable, '-c', RUNNER, mode, directory, str(budget), archive],
                              capture_output=True, text=True, timeout=120, check=False, pass_fds=(write_end,),
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        os.close(write_end)
        assert done.returncode == 0, done.stderr
        readable, _unused, _unused = select.select([read_end], [], [], 30)
        assert readable and os.read(read_end, 1) == b'', 'a detached process still holds the inherited pipe'
    finally:
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.close(write_end)
    return json.loads(done.stdout)


def ended(started, go=None):
    if go:
        open(os.path.join(go, 'go'), 'w').close()
    job, finished = _step_job.wait(started['results_file'], started['ansible_job_id'], timeout=120, poll=0.05)
    assert finished, 'the detached step did not end in 120 s'
    return job


def test_the_start_returns_at_once_and_the_step_ends_in_the_job_file_outside_the_session(directory):
    started = start('result', directory)
    # The runner has exited, its pipes closed, while its step waits for the go file: the step runs detached.
    assert started['started'] is True and started['finished'] is False
    assert os.path.dirname(started['results_file']) == directory
    assert os.path.basename(started['results_file']) == started['ansible_job_id']
    assert _step_job.JOB_ID.match(started['ansible_job_id'])
    with open(started['results_file'], encoding='utf-8') as handle:
        assert _step_job.ended(handle.read().encode()) is None, 'the job file says the step still runs'
    job = ended(started, go=directory)
    assert job['changed'] is True and job['ansible_job_id'] == started['ansible_job_id']
    assert 'started' not in job, 'a result with started reads as a job still running'
    assert job['sid'] != started['runner_sid'], 'the step is still in the caller\'s session'
    assert job['pgid'] == job['pid'], 'the step is not a process group of its own (killed whole past its budget)'
    assert job['stdin'] == '/dev/null'
    # The job file was removed by the wait; the capture files by the watcher.
    assert os.listdir(directory) == ['go']


def test_a_failed_steps_result_is_its_end(directory):
    job = ended(start('failed', directory))
    assert job['failed'] is True and job['msg'] == 'the kubelet did not come back'


def test_a_step_killed_without_a_result_ends_failed_saying_how(directory):
    job = ended(start('killed', directory))
    assert job['failed'] is True
    assert 'killed by signal 9 without a result' in job['msg']
    assert os.listdir(directory) == []


def test_a_step_that_breaks_ends_failed_with_its_error_output(directory):
    job = ended(start('traceback', directory))
    assert job['failed'] is True
    assert 'exited with status 1 without a result' in job['msg']
    assert job['msg'].endswith('RuntimeError: the step broke before printing a result'), job['msg'][-300:]
    assert len(job['msg']) < _step_detach.MAX_ERROR_BYTES + 200


def _gone(pid):
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii') as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except FileNotFoundError:
        return True


def test_a_step_past_its_budget_is_killed_with_what_it_started(directory):
    job = ended(start('hang', directory, budget=10))
    assert job['failed'] is True and 'outlived its budget of 10 s and was killed' in job['msg']
    with open(os.path.join(directory, 'child.pid'), encoding='ascii') as handle:
        child = int(handle.read())
    deadline = time.monotonic() + 30
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(child), 'the step\'s own child outlived the kill'


def test_the_step_imports_from_a_copy_of_the_payload_once_the_payload_is_removed(directory, tmp_path):
    # Ansible removes the module's payload (a zip in a temporary directory) when the module's first process exits.
    archive = str(tmp_path / 'payload.zip')
    with zipfile.ZipFile(archive, 'w') as payload:
        payload.writestr('detached_payload/__init__.py', '')
        payload.writestr('detached_payload/first.py', 'VALUE = 1\n')
        payload.writestr('detached_payload/second.py', 'VALUE = 42\n')
    started = start('import', directory, archive=archive)
    os.unlink(archive)
    job = ended(started, go=directory)
    assert job.get('imported') == 42, job
    assert os.listdir(directory) == ['go'], 'the payload\'s copy was left'


def _no_fork():
    raise AssertionError('forked: the step would have started')


def test_a_directory_others_can_write_starts_nothing(tmp_path, monkeypatch):
    path = tmp_path / 'async'
    path.mkdir()
    path.chmod(0o777)
    monkeypatch.setattr(_step_detach.os, 'fork', _no_fork)
    with pytest.raises(_step_detach.DetachError):
        _step_detach.start(60, str(path))
    assert os.listdir(path) == []


def test_a_fork_that_fails_leaves_no_job_behind(directory, monkeypatch, tmp_path):
    archive = str(tmp_path / 'payload.zip')
    with zipfile.ZipFile(archive, 'w') as payload:
        payload.writestr('detached_payload/__init__.py', '')

    def fork():
        raise BlockingIOError(11, 'Resource temporarily unavailable')
    monkeypatch.setattr(_step_detach.os, 'fork', fork)
    with pytest.raises(_step_detach.DetachError, match='the step was not started: Resource temporarily unavailable'):
        _step_detach.start(60, directory, archive=archive)
    assert os.listdir(directory) == []


@pytest.mark.parametrize('environ, expected', [
    ({}, os.path.expanduser('~/.ansible_async')),
    ({'ANSIBLE_ASYNC_DIR': '/var/tmp/jobs'}, '/var/tmp/jobs'),
])
def test_the_async_directory_is_async_wrappers(environ, expected):
    assert _step_detach.async_dir(environ) == expected


def test_a_job_id_is_of_async_wrappers_form():
    assert all(_step_job.JOB_ID.match(_step_detach.new_job_id()) for _attempt in range(100))
    assert _step_detach.new_job_id(pid=4242).endswith('.4242')


EXITED_1 = 1 << 8
KILLED_9 = 9


@pytest.mark.parametrize('status, output, errors, exceeded, expected', [
    (0, b'{"changed": true, "started": 1}', b'', False, {'changed': True, 'ansible_job_id': 'j1.2'}),
    (EXITED_1, b'{"failed": true, "msg": "m"}', b'', False, {'failed': True, 'msg': 'm', 'ansible_job_id': 'j1.2'}),
    (EXITED_1, b'[1, 2]', b'', False, {'failed': True, 'ansible_job_id': 'j1.2',
                                       'msg': 'the step exited with status 1 without a result'}),
    (KILLED_9, b'{"changed": tr', b'', False, {'failed': True, 'ansible_job_id': 'j1.2',
                                               'msg': 'the step was killed by signal 9 without a result'}),
    (EXITED_1, b'', b'Traceback ...\nValueError: x\n', False,
     {'failed': True, 'ansible_job_id': 'j1.2',
      'msg': 'the step exited with status 1 without a result: Traceback ...\nValueError: x'}),
    (0, b'{"changed": true}', b'', True, None),
])
def test_the_jobs_end_from_how_the_step_ended(status, output, errors, exceeded, expected):
    end = _step_detach.end_of(status, output, errors, 'j1.2', exceeded, 60)
    if expected is None:
        assert end['failed'] is True and 'outlived its budget of 60 s' in end['msg']
    else:
        assert end == expected


def test_output_larger_than_a_result_is_not_taken_as_one():
    output = b'{"changed": true, "x": "' + b'a' * _step_detach.MAX_OUTPUT_BYTES + b'"}'
    assert _step_detach.end_of(0, output, b'', 'j1.2', False, 60)['failed'] is True
