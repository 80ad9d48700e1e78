"""_step_job: the detached step's job file read on the node, in the form ansible-core's async_wrapper writes it
(modules/async_wrapper.py ``jwrite``: a temporary file renamed over the job file; ``{"started": true, "finished":
false, "ansible_job_id": ...}`` while the step runs, the step's own result once it has ended)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job

JID = 'j340917285611.4242'
RUNNING = {'started': True, 'finished': False, 'ansible_job_id': JID}
ENDED = {'changed': True, 'path': '/var/lib/kubelet/config.yaml', 'allocatable_after': {'memory': 7 << 30},
         'invocation': {'module_args': {'path': '/var/lib/kubelet/config.yaml'}}, '_ansible_no_log': False}


def jwrite(path, job):
    """As async_wrapper writes the job file: whole, through a rename."""
    with open(str(path) + '.tmp', 'w', encoding='utf-8') as handle:
        handle.write(json.dumps(job))
    os.rename(str(path) + '.tmp', str(path))


class Clock:
    """A monotonic clock the waits move: each sleep advances it and lets the test change the file."""

    def __init__(self, on_sleep=None):
        self.now, self.sleeps, self.on_sleep = 1000.0, 0, on_sleep

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.sleeps += 1
        if self.on_sleep:
            self.on_sleep(self.sleeps)


@pytest.fixture
def async_dir(tmp_path):
    directory = tmp_path / '.ansible_async'
    directory.mkdir(mode=0o700)
    return directory


def test_waits_while_the_step_runs_then_returns_its_own_result_and_removes_the_file(async_dir):
    job = async_dir / JID
    jwrite(job, RUNNING)
    clock = Clock(lambda sleeps: jwrite(job, ENDED) if sleeps == 3 else None)
    job_end, finished = _step_job.wait(str(job), JID, 60, 0.25, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == 3 and finished is True
    assert _step_job.step_result(job_end) == {'changed': True, 'path': '/var/lib/kubelet/config.yaml',
                                              'allocatable_after': {'memory': 7 << 30}}
    assert not job.exists()


def test_ansible_core_2_16s_integers_are_read_as_a_job_still_running(async_dir):
    # async_wrapper before 2.19: {"started": 1, "finished": 0, ...}.
    job = async_dir / JID
    jwrite(job, {'started': 1, 'finished': 0, 'ansible_job_id': JID})
    clock = Clock(lambda sleeps: jwrite(job, {'changed': False}) if sleeps == 2 else None)
    assert _step_job.wait(str(job), JID, 60, 1, clock=clock, sleep=clock.sleep) == ({'changed': False}, True)
    assert clock.sleeps == 2


def test_a_step_ended_before_the_wait_is_returned_at_once(async_dir):
    job = async_dir / JID
    jwrite(job, dict(ENDED, failed=True, msg='the kubelet did not stay healthy; restored'))
    clock = Clock()
    result, finished = _step_job.wait(str(job), JID, 60, 0.25, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == 0 and finished and result['failed'] is True and 'restored' in result['msg']


def test_async_wrappers_own_failure_is_an_end(async_dir):
    # async_wrapper's result when the step outlived its async budget (it killed it).
    job = async_dir / JID
    jwrite(job, {'msg': 'Timeout exceeded', 'failed': True, 'child_pid': 77})
    assert _step_job.wait(str(job), JID, 60, 0.25) == ({'msg': 'Timeout exceeded', 'failed': True, 'child_pid': 77}, True)


def test_a_running_job_that_does_not_end_in_time_is_unfinished_and_its_file_left(async_dir):
    job = async_dir / JID
    jwrite(job, RUNNING)
    clock = Clock()
    assert _step_job.wait(str(job), JID, 5, 1, clock=clock, sleep=clock.sleep) == (None, False)
    assert clock.sleeps == 5 and json.loads(job.read_text()) == RUNNING


def test_check_mode_reads_the_end_and_removes_nothing(async_dir):
    job = async_dir / JID
    jwrite(job, ENDED)
    assert _step_job.wait(str(job), JID, 0, 1, remove=False)[0]['changed'] is True
    assert job.exists()


@pytest.mark.parametrize('content', [b'', b'{"started": 1, "fini', b'\xff\xfe not text', b'[1, 2]'])
def test_what_does_not_parse_is_a_job_still_running_as_async_status_reads_it(async_dir, content):
    job = async_dir / JID
    job.write_bytes(content)
    clock = Clock(lambda sleeps: jwrite(job, ENDED) if sleeps == 2 else None)
    assert _step_job.wait(str(job), JID, 60, 1, clock=clock, sleep=clock.sleep)[0]['changed'] is True
    assert clock.sleeps == 2


def test_a_job_file_not_written_yet_is_waited_for_within_the_grace(async_dir):
    # async_wrapper's parent may answer "started" before its daemon has written the file.
    job = async_dir / JID
    clock = Clock(lambda sleeps: jwrite(job, ENDED) if sleeps == 10 else None)
    assert _step_job.wait(str(job), JID, 60, 1, clock=clock, sleep=clock.sleep)[1] is True
    assert clock.sleeps == 10 and not job.exists()


def test_a_job_file_missing_past_the_grace_fails_without_showing_anything(async_dir):
    clock = Clock()
    with pytest.raises(_step_job.JobFileError, match='no job file after 30 s: job %s was not started' % JID):
        _step_job.wait(str(async_dir / JID), JID, 600, 1, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == 30


def test_a_missing_async_directory_is_a_job_file_not_written_yet(tmp_path):
    clock = Clock()
    with pytest.raises(_step_job.JobFileError, match='no job file after 30 s'):
        _step_job.wait(str(tmp_path / 'nowhere' / JID), JID, 600, 1, clock=clock, sleep=clock.sleep)


def test_a_file_larger_than_a_step_result_is_refused_and_kept(async_dir):
    job = async_dir / JID
    job.write_bytes(b' ' * (_step_job.MAX_JOB_BYTES + 1))
    with pytest.raises(_step_job.JobFileError, match='larger than'):
        _step_job.wait(str(job), JID, 60, 1)
    assert job.exists()


@pytest.mark.parametrize('results_file, jid, problem', [
    ('relative/%s' % JID, JID, 'not an absolute path'),
    ('/root/.ansible_async/j123.1', JID, 'is not the file of job'),
    # Only async_wrapper's names: root never opens, shows or removes another file through this module.
    ('/root/.ansible_async/../../etc/passwd', 'passwd', 'not an Ansible async job id'),
    ('/etc/docker/daemon.json', 'daemon.json', 'not an Ansible async job id'),
    ('/root/.ansible_async/a b', 'a b', 'not an Ansible async job id'),
    ('/root/.ansible_async/x', '', 'not an Ansible async job id'),
    ('/root/.ansible_async/j1.2/..', 'j1.2', 'is not the file of job'),
])
def test_a_results_file_that_is_not_the_jobs_own_is_refused(results_file, jid, problem):
    with pytest.raises(_step_job.JobFileError, match=problem):
        _step_job.job_path(results_file, jid)


@pytest.mark.parametrize('jid', ['j340917285611.4242', '340917285611.4242', 'j0.1'])
def test_async_wrappers_job_ids_are_taken(jid):
    assert _step_job.job_path('/root/.ansible_async/' + jid, jid) == ('/root/.ansible_async', jid)


def test_warnings_and_deprecations_of_either_form_are_texts():
    job = {'warnings': ['old form', {'msg': 'new form', 'help_text': None}], 'deprecations': {'msg': 'one'}}
    assert _step_job.messages(job, 'warnings') == ['old form', 'new form']
    assert _step_job.messages(job, 'deprecations') == ['one']
    assert _step_job.messages({}, 'warnings') == []


def test_a_link_at_the_jobs_name_is_not_followed_nor_removed(async_dir, tmp_path):
    target = tmp_path / 'elsewhere.json'
    jwrite(target, ENDED)
    (async_dir / JID).symlink_to(target)
    with pytest.raises(_safe_open.UnsafePathError, match='symbolic link'):
        _step_job.wait(str(async_dir / JID), JID, 60, 1)
    assert (async_dir / JID).is_symlink() and target.exists()


def test_a_directory_others_can_write_is_refused(async_dir):
    jwrite(async_dir / JID, ENDED)
    async_dir.chmod(0o777)
    with pytest.raises(_safe_open.UnsafePathError, match='writable by'):
        _step_job.wait(str(async_dir / JID), JID, 60, 1)
    assert (async_dir / JID).exists()
