"""recommend.yml as users run it: from an installed collection, from their own directory, with their variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _run(command, cwd, collections_path, extra_env=None):
    # PWD as a shell sets it when the user changes into that directory.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR='1', PWD=str(cwd))
    env.pop('ANSIBLE_CONFIG', None)
    env.update(extra_env or {})
    return subprocess.run(command, cwd=str(cwd), env=env, capture_output=True, text=True, check=False, timeout=600)


def _after_from_diff(diff):
    """The kubeReserved/systemReserved document the diff ends with (context and added lines)."""
    kept = [line[1:] for line in diff[3:] if line[:1] in (' ', '+')]
    return yaml.safe_load('\n'.join(kept))


def test_installed_collection_writes_the_report_where_the_user_runs_it(tmp_path):
    build = tmp_path / 'build'
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(build), ROOT],
                   check=True, capture_output=True)
    installed = tmp_path / 'installed'
    tarball = next(build.iterdir())
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--force', '-p', str(installed), str(tarball)],
                   check=True, capture_output=True)
    workdir = tmp_path / 'ops'
    workdir.mkdir()
    (workdir / 'inventory.ini').write_text('node ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    result = _run([os.path.join(BIN, 'ansible-playbook'), '-i', 'inventory.ini', 'nodealloc.kubelet.recommend', '--check',
                   '-e', 'reservations_sample_seconds=0.2'], workdir, installed)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    report = json.loads((workdir / 'reports' / 'reservations.json').read_text())
    # Measured: 'ok' where a kubelet runs, 'no_kubelet' (nothing to apply) on a machine without one, like this.
    assert [node['host'] for node in report['nodes']] == ['node'] and report['nodes'][0]['status'] in ('ok', 'no_kubelet')
    # The facts module ran under Ansible's command wrapper: it found its own interpreter and left it out.
    assert report['nodes'][0]['measured']['measurement_tool_bytes'] > 1024 * 1024
    assert (workdir / 'reports' / 'reservations.html').is_file()
    collection = installed / 'ansible_collections' / 'nodealloc' / 'kubelet'
    assert not (collection / 'reports').exists() and not (collection.parent / 'reports').exists()
    # The text report is printed as a list of lines, not one string full of \n escapes, the node's screen opening with
    # its verdict (_report/_printed).
    assert '\\n' not in result.stdout and '"node: ' in result.stdout


def test_report_shows_what_the_role_decides_and_inventory_variables_win(tmp_path):
    """The report (variables from the inventory) and the role (the same values from -e) agree on the settings
    and, under a vendor formula that depends only on the machine, on the reservations the write step gets."""
    config = tmp_path / 'config.yaml'
    config.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
                      'kubeReserved:\n  cpu: 100m\n  memory: 256Mi\nsystemReserved:\n  memory: 256Mi\n'
                      'evictionHard:\n  memory.available: 100Mi\n')
    chosen = {'reservations_policy': 'eks', 'reservations_memory_headroom_percent': 37.0,
              'reservations_cpu_headroom_min_millicores': 80, 'reservations_change_threshold_min_bytes': 1048576,
              'reservations_kubelet_config_path': str(config), 'reservations_history_path': str(tmp_path / 'h.jsonl'),
              'reservations_sample_seconds': 0.2}
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('node ansible_connection=local ansible_python_interpreter=%s %s\n'
                         % (sys.executable, ' '.join('%s=%s' % item for item in sorted(chosen.items()))))
    staged = os.path.join(ROOT, '.build')
    extra = {'ANSIBLE_CONFIG': os.path.join(ROOT, 'ansible.cfg')}
    playbook = _run([os.path.join(BIN, 'ansible-playbook'), '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'recommend.yml'),
                     '--check', '-e', 'nodealloc_report_dir=%s' % (tmp_path / 'reports')], tmp_path, staged, extra)
    assert playbook.returncode == 0, playbook.stdout[-4000:] + playbook.stderr[-2000:]
    node = json.loads((tmp_path / 'reports' / 'reservations.json').read_text())['nodes'][0]

    decision_file = tmp_path / 'decision.json'
    role_command = [os.path.join(BIN, 'ansible-playbook'), '-i', 'node,', '-c', 'local',
                    '-e', 'ansible_python_interpreter=%s' % sys.executable,
                    os.path.join(ROOT, 'tests', 'playbooks', 'role_decision.yml'), '--check',
                    '-e', 'decision_file=%s' % decision_file, '-e', json.dumps(chosen)]
    role = _run(role_command, tmp_path, staged, extra)
    assert role.returncode == 0, role.stdout[-4000:] + role.stderr[-2000:]
    decided = json.loads(decision_file.read_text())

    assert node['settings'] == dict(decided['recommendation']['settings'], **decided['decision']['settings'])
    # The role's options reach the module as set (no widening around a single reading since issue 29).
    assert node['settings']['memory_headroom_percent'] == 37.0
    assert node['settings']['policy'] == 'eks'
    assert node['settings']['cpu_headroom_min_millicores'] == 80
    assert node['settings']['change_threshold_min_bytes'] == 1048576
    assert node['recommended'] == {'kube_reserved': decided['recommendation']['kube_reserved'],
                                   'system_reserved': decided['recommendation']['system_reserved']}
    assert node['decision'] == decided['decision']['action']
    written = decided['write']['new']
    assert _after_from_diff(node['config_diff']) == {'kubeReserved': written['kubeReserved'],
                                                     'systemReserved': written['systemReserved']}


def test_api_check_runs_with_a_kubeconfig_or_awx_kubernetes_credential(tmp_path):
    """AWX's 'OpenShift or Kubernetes API Bearer Token' credential sets K8S_AUTH_HOST and K8S_AUTH_API_KEY (and
    K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT): awx/main/tests/unit/test_tasks.py checks that injection."""
    def api_check(extra_env, *extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH_')}
        env.update(extra_env, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'))
        run = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                              os.path.join(ROOT, 'tests', 'playbooks', 'api_check.yml')] + list(extra),
                             env=env, cwd=str(tmp_path), capture_output=True, text=True, check=False, timeout=300)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        return 'api_check=True' in run.stdout

    assert not api_check({})
    assert api_check({'K8S_AUTH_HOST': 'https://api.example.net:6443', 'K8S_AUTH_API_KEY': 'token',
                      'K8S_AUTH_VERIFY_SSL': 'False'})
    assert api_check({'K8S_AUTH_KUBECONFIG': str(tmp_path / 'kubeconfig')})
    assert api_check({}, '-e', 'reservations_kubeconfig=%s' % (tmp_path / 'kubeconfig'))
    assert not api_check({'K8S_AUTH_HOST': 'https://api.example.net:6443'}, '-e', 'reservations_api_check=false')


def test_sliced_jobs_write_one_report_each_and_merge_into_one(tmp_path):
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text(''.join('%s ansible_connection=local ansible_python_interpreter=%s\n' % (host, sys.executable)
                                 for host in ('node-a', 'node-b', 'node-c')))
    staged = os.path.join(ROOT, '.build')
    extra = {'ANSIBLE_CONFIG': os.path.join(ROOT, 'ansible.cfg')}
    playbook = [os.path.join(BIN, 'ansible-playbook'), '-i', str(inventory)]
    # Two slices of one sliced job: AWX runs each as its own job (awx_job_id) under one workflow job.
    for job_id, limit in ((101, 'node-a:node-c'), (102, 'node-b')):
        run = _run(playbook + [os.path.join(ROOT, 'playbooks', 'recommend.yml'), '--check', '--limit', limit,
                               '-e', 'reservations_sample_seconds=0', '-e', 'awx_workflow_job_id=42', '-e', 'awx_job_id=%d' % job_id],
                   tmp_path, staged, extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    reports = tmp_path / 'reports'
    slices = {path.name: json.loads(path.read_text()) for path in reports.glob('reservations-42-*.json')}
    # Which hosts each slice reports (their order is the report's risk order, which follows live readings).
    assert {name: sorted(n['host'] for n in report['nodes']) for name, report in slices.items()} == {
        'reservations-42-101.json': ['node-a', 'node-c'], 'reservations-42-102.json': ['node-b']}
    assert not (reports / 'reservations.json').exists()

    merge = _run(playbook + [os.path.join(ROOT, 'playbooks', 'report_merge.yml'), '-e', 'nodealloc_report_group=42'],
                 tmp_path, staged, extra)
    assert merge.returncode == 0, merge.stdout[-4000:] + merge.stderr[-2000:]
    merged = json.loads((reports / 'reservations-42.json').read_text())
    assert sorted(n['host'] for n in merged['nodes']) == ['node-a', 'node-b', 'node-c']
    assert merged['summary']['nodes'] == 3 and sum(merged['summary']['status'].values()) == 3
    assert set(merged['summary']['status']) <= {'ok', 'no_kubelet'}  # every node measured
    assert (reports / 'reservations-42.html').read_text().count('<details') == 3
    # A slice merged twice (a host in two reports) is refused, not silently doubled.
    (reports / 'reservations-42-103.json').write_text((reports / 'reservations-42-102.json').read_text())
    again = _run(playbook + [os.path.join(ROOT, 'playbooks', 'report_merge.yml'), '-e', 'nodealloc_report_group=42'],
                 tmp_path, staged, extra)
    assert again.returncode != 0 and 'node-b is in more than one slice report' in again.stdout
