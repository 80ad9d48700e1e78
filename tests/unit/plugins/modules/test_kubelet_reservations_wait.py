"""kubelet_reservations_wait's main() in-process: the step's result becomes the module's, a failed step fails it with
the step's message and fields, bad numbers are refused before anything is read."""

from __future__ import annotations

import functools
import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.modules import kubelet_reservations_wait
from ansible_collections.nodealloc.kubelet.tests.unit.utils.module_harness import run_module

JID = 'j777.42'


@pytest.fixture
def run(monkeypatch):
    return functools.partial(run_module, kubelet_reservations_wait.main, monkeypatch=monkeypatch)


@pytest.fixture
def job(tmp_path):
    directory = tmp_path / '.ansible_async'
    directory.mkdir(mode=0o700)
    return directory / JID


def test_the_steps_result_is_returned_and_the_file_removed(run, job):
    job.write_text(json.dumps({'changed': True, 'backup_file': '/b', 'invocation': {'module_args': {}}}))
    result = run({'jid': JID, 'results_file': str(job)})
    assert result['changed'] is True and result['backup_file'] == '/b' and result['finished'] is True
    assert result['ansible_job_id'] == JID and result['erased'] == str(job) and not job.exists()
    assert 'failed' not in result


def test_a_failed_step_fails_the_module_with_its_message_and_fields(run, job):
    job.write_text(json.dumps({'failed': True, 'changed': True, 'msg': 'did not stay healthy; restored',
                               'backup_file': '/b'}))
    result = run({'jid': JID, 'results_file': str(job)})
    assert result['failed'] is True and result['msg'] == 'did not stay healthy; restored'
    assert result['backup_file'] == '/b' and result['changed'] is True and not job.exists()


def test_check_mode_keeps_the_file(run, job):
    job.write_text(json.dumps({'changed': False}))
    result = run({'jid': JID, 'results_file': str(job), '_ansible_check_mode': True})
    assert result['changed'] is False and 'erased' not in result and job.exists()


@pytest.mark.parametrize('numbers', [{'timeout': float('nan')}, {'timeout': float('inf')}, {'timeout': -1},
                                     {'poll': 0}, {'poll': 61}])
def test_a_wait_for_ever_or_a_spinning_poll_is_refused(run, job, numbers):
    job.write_text(json.dumps({'changed': True}))
    result = run(dict({'jid': JID, 'results_file': str(job)}, **numbers))
    assert result['failed'] is True and result['finished'] is True and 'timeout must be' in result['msg'] and job.exists()


def test_a_step_still_running_is_unfinished_not_failed(run, job):
    job.write_text(json.dumps({'started': True, 'finished': False, 'ansible_job_id': JID}))
    result = run({'jid': JID, 'results_file': str(job), 'timeout': 0})
    assert result['finished'] is False and result['changed'] is False and 'failed' not in result and job.exists()


def test_the_steps_warnings_are_shown_as_warnings(run, job, monkeypatch):
    shown = []
    monkeypatch.setattr(kubelet_reservations_wait.NodeallocModule, 'warn', lambda self, text: shown.append(text))
    job.write_text(json.dumps({'changed': True, 'warnings': ['the drop-in directory is new']}))
    result = run({'jid': JID, 'results_file': str(job)})
    assert shown == ['the step: the drop-in directory is new'] and 'warnings' not in result


def test_a_refused_file_fails_as_finished_so_an_until_loop_stops(run, job):
    job.write_text(json.dumps({'changed': True}))
    job.parent.chmod(0o777)
    result = run({'jid': JID, 'results_file': str(job)})
    assert result['failed'] is True and result['finished'] is True and 'writable by' in result['msg'] and job.exists()
