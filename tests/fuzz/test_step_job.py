"""The detached step's job file (_step_job): any bytes are a job still running or an ended step's result, never an
exception; what is returned holds none of async_wrapper's keys; a job id or path of any shape is taken or refused with
the collection's error."""

from __future__ import annotations

import json

from hypothesis import example, given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import json_values
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_detach
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job

KEYS = st.sampled_from(['started', 'finished', 'failed', 'msg', 'changed', 'ansible_job_id', 'invocation',
                        '_ansible_no_log', 'results_file', 'path'])
jobs = st.dictionaries(st.one_of(KEYS, st.text(max_size=8)), json_values, max_size=8)


@given(st.one_of(st.binary(max_size=200), jobs.map(lambda job: json.dumps(job).encode())))
@example(b'{"started": 1, "finished": 0}')
@example(b'{"started": true, "finished": true, "changed": true}')
@example(b'\xef\xbb\xbf{}')
@cpu_deadline
def test_any_bytes_are_running_or_an_ended_steps_result(data):
    job = _step_job.ended(data)
    assert job is None or isinstance(job, dict)
    if job is not None:
        assert 'started' not in job or job['finished']
        result = _step_job.step_result(job)
        # Listed here, not taken from the module: what async_wrapper and AnsibleModule add.
        assert not set(result) & {'started', 'finished', 'ansible_job_id', 'results_file', 'invocation', 'warnings'}
        assert not any(key.startswith('_ansible') for key in result)
        assert all(isinstance(text, str) for text in _step_job.messages(job, 'warnings'))


@given(st.text(max_size=80), st.text(max_size=20))
@example('/root/.ansible_async/j1.2', 'j1.2')
@example('/root/.ansible_async/j1.2/', 'j1.2')
@example('/root/.ansible_async/..', '..')
@cpu_deadline
def test_a_job_path_is_its_directory_and_the_job_id_or_refused(results_file, jid):
    try:
        directory, name = _step_job.job_path(results_file, jid)
    except _step_job.JobFileError:
        return
    assert name == jid and directory.startswith('/') and '/' not in name and name.split('.')[-1].isdigit()


# os.waitpid's status: an exit status in the high byte, or a signal in the low one.
wait_statuses = st.one_of(st.integers(0, 255).map(lambda code: code << 8), st.integers(1, 64))


@given(wait_statuses, st.one_of(st.binary(max_size=200), jobs.map(lambda job: json.dumps(job).encode())),
       st.binary(max_size=200), st.booleans())
@example(0, b'{"started": true, "finished": false}', b'', False)
@example(9, b'', b'\xff\xfe', False)
@cpu_deadline
def test_whatever_the_detached_step_printed_its_end_is_a_finished_job(status, output, errors, exceeded):
    end = _step_detach.end_of(status, output, errors, 'j1.2', exceeded, 60)
    # What the watcher writes must read as the job's end, never as a job still running (a wait would go on for ever).
    text = json.dumps(end, sort_keys=True)
    assert json.dumps(_step_job.ended(text.encode()), sort_keys=True) == text
    assert end['ansible_job_id'] == 'j1.2'
    try:
        printed = json.loads(output.decode('utf-8'))
    except ValueError:  # UnicodeDecodeError too
        printed = None
    if exceeded or not isinstance(printed, dict):
        # The watcher's own end: a failure that says why, whatever the step printed.
        assert end['failed'] is True and isinstance(end['msg'], str) and end['msg']
    else:
        # The step's own result, as it printed it, but for what would make it read as a job still running.
        printed.pop('started', None)
        assert json.dumps(end, sort_keys=True) == json.dumps(dict(printed, ansible_job_id='j1.2'), sort_keys=True)
