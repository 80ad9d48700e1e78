"""Playbooks run through ansible-playbook against localhost, as users run them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_playbook(playbook, *extra, check=False):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_NOCOLOR='1')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local', '-e',
               'ansible_python_interpreter=%s' % sys.executable, playbook] + list(extra)
    if check:
        command.append('--check')
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600)


def test_kubelet_config_rhythm(tmp_path):
    result = ansible_playbook('tests/playbooks/kubelet_config_rhythm.yml', '-e', 'work_dir=%s' % tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_recommend_playbook_writes_reports_and_changes_nothing(tmp_path):
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'reservations_sample_seconds=0.5', check=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    report = json.loads((tmp_path / 'reservations.json').read_text())
    assert report['schema_version'] == 4
    node = report['nodes'][0]
    # Measured: 'ok' where a kubelet runs; 'no_kubelet' on a machine without one, which gets nothing to apply.
    assert node['host'] == 'localhost' and node['status'] in ('ok', 'no_kubelet')
    assert set(node['recommended']) == {'kube_reserved', 'system_reserved'}
    assert (tmp_path / 'reservations.md').read_text().startswith('# Kubelet reservation report')
    assert ('recommended systemReserved' if node['status'] == 'ok' else 'no kubelet found: nothing to apply') in result.stdout


def _task_names(task_file):
    """The names of the tasks a role task file holds (blocks' tasks too)."""
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(ROOT, 'roles', 'reservations', 'tasks', task_file), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle) or []
    names = []
    while tasks:
        task = tasks.pop()
        names.append(task.get('name'))
        tasks.extend(task.get('block') or [])
    return {name for name in names if name}


def test_observe_playbook_installs_the_sampler_and_runs_no_kubelet_task():
    # playbooks/observe.yml, the first step on a fleet: the role's measuring tasks and the sampler's, and not one task
    # that writes a kubelet config, restarts a kubelet or writes the decision files (which alerts read).
    result = ansible_playbook('playbooks/observe.yml', '-e', 'reservations_sample_seconds=0.5', check=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    ran = set(re.findall(r'^TASK \[nodealloc\.kubelet\.reservations : (.*?)\] \**$', result.stdout, re.M))
    assert _task_names('sampler.yml') & ran == {'Install the sampler, its code and its systemd units, and start its timer'}
    assert 'Measure the node and decide' in ran
    kubelet_tasks = set()
    for task_file in ('rollout.yml', 'apply.yml', 'health.yml', 'restore.yml'):
        kubelet_tasks |= _task_names(task_file)
    # decide.yml's step that writes the decision files (state kept): observe writes none.
    kubelet_tasks |= {name for name in _task_names('decide.yml') if name.startswith('Keep the decision')}
    kubelet_tasks -= _task_names('check_options.yml')  # restore.yml checks the options first too
    assert kubelet_tasks and not kubelet_tasks & ran, sorted(kubelet_tasks & ran)
    assert 'changed: [localhost]' in result.stdout  # check mode: the sampler would be installed (nothing was)


def test_rollback_playbook_checks_the_roles_options_before_any_task(tmp_path):
    # The first play checks every host's options on the controller before the serial play restores any node.
    result = ansible_playbook('playbooks/rollback.yml', '-e', 'nodealloc_hosts=localhost',
                              '-e', 'reservations_health_soak_seconds=soon', check=True)
    assert result.returncode == 2
    assert "reservations_health_soak_seconds: 'soon' must be a number (int)" in result.stdout
    assert 'Find the kubelet' not in result.stdout and 'Restore the newest backup' not in result.stdout


def test_recommend_reports_unreachable_nodes_as_rows_without_follow_on_errors(tmp_path):
    # Two inventory entries whose address nothing answers on (loopback port 9), beside this machine. Today's
    # recommend.yml ignored unreachable hosts: the recap said unreachable=0 and every later task failed on the
    # result they never returned ("'dict object' has no attribute 'kubelet'").
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('local ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable + ''.join(
        "%s ansible_host=127.0.0.1 ansible_port=9 ansible_user=nobody ansible_ssh_common_args='-o ConnectTimeout=3 "
        "-o BatchMode=yes'\n" % name for name in ('gone1', 'gone2')))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOST_KEY_CHECKING='False')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
                             'playbooks/recommend.yml', '--check', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                             '-e', 'reservations_sample_seconds=0.5'],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 4, output[-4000:]  # ansible-playbook's "some host was unreachable"
    for name in ('gone1', 'gone2'):
        assert re.search(r'%s +: ok=\d+ +changed=0 +unreachable=1 +failed=0 ' % name, output), output[-3000:]
    assert re.search(r'local +: ok=\d+ +changed=\d+ +unreachable=0 +failed=0 ', output), output[-3000:]
    # Each unreachable node's UNREACHABLE is printed twice: the measuring task's, ignored so that the node stays in the
    # play until the report is written, and host_unreachable's, which counts it unreachable after the report.
    assert output.count('UNREACHABLE!') == 4 and output.count('...ignoring') == 2, output[-3000:]
    assert 'has no attribute' not in output and 'FAILED!' not in output
    report = json.loads((tmp_path / 'reservations.json').read_text())
    status = {node['host']: node['status'] for node in report['nodes']}
    # Measured, as the reachable node is: 'ok' where a kubelet runs, 'no_kubelet' on a machine without one.
    assert status.pop('local') in ('ok', 'no_kubelet')
    assert status == {'gone1': 'unreachable', 'gone2': 'unreachable'}
    assert 'Connection refused' in [n for n in report['nodes'] if n['host'] == 'gone1'][0]['status_reason']
