"""Playbooks run through ansible-playbook against localhost, as users run them."""

from __future__ import annotations

import json
import os
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
    assert report['schema_version'] == 2
    node = report['nodes'][0]
    # Measured: 'ok' where a kubelet runs; 'no_kubelet' on a machine without one, which gets nothing to apply.
    assert node['host'] == 'localhost' and node['status'] in ('ok', 'no_kubelet')
    assert set(node['recommended']) == {'kube_reserved', 'system_reserved'}
    assert (tmp_path / 'reservations.md').read_text().startswith('# Kubelet reservation report')
    assert ('recommended systemReserved' if node['status'] == 'ok' else 'no kubelet found: nothing to apply') in result.stdout


def test_rollback_playbook_checks_the_roles_options_before_any_task(tmp_path):
    # tasks_from: restore runs the role's 'restore' entry point of meta/argument_specs.yml first.
    result = ansible_playbook('playbooks/rollback.yml', '-e', 'nodealloc_hosts=localhost',
                              '-e', 'reservations_health_soak_seconds=soon', check=True)
    assert result.returncode != 0
    assert "Validating arguments against arg spec 'restore'" in result.stdout
    assert 'reservations_health_soak_seconds' in result.stdout
    assert 'Check every option' not in result.stdout
