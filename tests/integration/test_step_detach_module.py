"""kubelet_reservations_apply with ``detach`` run by real ansible-core on this machine (``ansible localhost``, the
project's ansible.cfg: pipelined, so the module runs from an AnsiballZ payload that Ansible removes when the module's
first process exits): the start returns a job, the step ends in the job file after that removal, and
kubelet_reservations_wait takes its end, a success and a failure alike, leaving nothing in the async directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.dirname(os.path.dirname(os.path.dirname(ROOT)))


def _ansible(home, module, args):
    """The task's result: ansible localhost -m module -a args, with HOME (and so ~/.ansible_async) under the test's."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               HOME=home, ANSIBLE_LOCAL_TEMP=os.path.join(home, 'local-tmp'), ANSIBLE_REMOTE_TMP=os.path.join(home, 'tmp'),
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_LOAD_CALLBACK_PLUGINS='1')
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-c', 'local',
                           '-e', 'ansible_python_interpreter=' + sys.executable, '-m', module, '-a', json.dumps(args)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert '{' in done.stdout, (done.stdout, done.stderr)
    report = json.loads(done.stdout[done.stdout.index('{'):])
    return list(report['plays'][0]['tasks'][0]['hosts'].values())[0]


def _started(home, args):
    started = _ansible(home, 'nodealloc.kubelet.kubelet_reservations_apply', dict(args, detach=120))
    assert started.get('finished') is False and started['results_file'].startswith(home + '/.ansible_async/'), started
    return started


def _wait(home, started):
    return _ansible(home, 'nodealloc.kubelet.kubelet_reservations_wait',
                    {'jid': started['ansible_job_id'], 'results_file': started['results_file'], 'timeout': 120})


def test_a_detached_step_ends_in_its_job_file_and_the_wait_returns_it(tmp_path):
    home = str(tmp_path / 'home')
    os.mkdir(home, 0o700)
    status_file = str(tmp_path / 'status' / 'decision.json')
    started = _started(home, {'state': 'kept', 'path': str(tmp_path / 'config.yaml'),
                              'status': {'on_success': [{'path': status_file, 'content': {'decision': 'keep'}}],
                                         'on_failure': []}})
    ended = _wait(home, started)
    assert ended.get('finished') is True and not ended.get('failed'), ended
    assert ended['status_changed'] == [status_file] and ended['step']['pid'] != 0
    with open(status_file, encoding='utf-8') as handle:
        assert json.load(handle) == {'decision': 'keep'}
    # The job file (the wait's), the capture files and the payload's copy (the watcher's): all removed.
    assert os.listdir(os.path.join(home, '.ansible_async')) == []


def test_a_detached_step_that_fails_fails_the_wait_with_its_own_message(tmp_path):
    home = str(tmp_path / 'home')
    os.mkdir(home, 0o700)
    missing = str(tmp_path / 'no-such-dir' / 'config.yaml')
    started = _started(home, {'path': missing, 'kube_reserved': {'memory': '1Gi'}, 'node_lock_timeout': 5,
                              'state_dir': str(tmp_path / 'step')})
    ended = _wait(home, started)
    assert ended.get('failed') is True and ended.get('finished') is True, ended
    assert os.path.dirname(missing) + ': cannot open the directory to lock it' in ended['msg'], ended['msg']
    assert os.listdir(os.path.join(home, '.ansible_async')) == []
