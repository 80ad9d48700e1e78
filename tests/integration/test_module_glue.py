"""node_reservation_facts run as Ansible runs it: a module process fed ANSIBLE_MODULE_ARGS."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

MODULE = 'ansible_collections.nodealloc.kubelet.plugins.modules.node_reservation_facts'


def run_module(tmp_path, args):
    args_file = tmp_path / 'args.json'
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    completed = subprocess.run([sys.executable, '-m', MODULE, str(args_file)], capture_output=True, text=True, check=False,
                               env=dict(os.environ), timeout=120)
    assert 'Traceback' not in completed.stderr + completed.stdout
    return json.loads(completed.stdout)


def test_report_on_this_machine_changes_nothing(tmp_path):
    result = run_module(tmp_path, {'sample_seconds': 0.5, '_ansible_check_mode': True})
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is False
    memory = result['memory']
    assert memory['non_pod_poc_bytes'] == (memory['mem_total_bytes'] - memory['mem_available_bytes']
                                           - memory['kubepods_working_set_bytes'])
    assert memory['non_pod_bytes'] + memory['non_pod_accounting']['measurement_tool_bytes'] >= memory['non_pod_poc_bytes']
    assert result['recommendation']['explanation']


@pytest.mark.parametrize('args,message', [
    ({'cgroup_root': '/nonexistent'}, 'neither a cgroup v2 root'),
    ({'sample_seconds': -1}, 'sample_seconds: -1.0 must be >= 0'),
    ({'kubepods_cgroup': '/no-such-group', 'sample_seconds': 0}, 'does not exist'),
])
def test_bad_input_fails_cleanly(tmp_path, args, message):
    result = run_module(tmp_path, args)
    assert result['failed'] is True
    assert message in result['msg']


def test_malformed_config_fails_with_path(tmp_path):
    config = tmp_path / 'config.yaml'
    config.write_text('kind: Pod\n')
    result = run_module(tmp_path, {'kubelet_config_path': str(config), 'sample_seconds': 0})
    assert result['failed'] is True
    assert str(config) in result['msg'] and 'KubeletConfiguration' in result['msg']


def test_the_module_says_when_it_records(tmp_path):
    history = tmp_path / 'history.jsonl'
    quiet = run_module(tmp_path, {'sample_seconds': 0, 'history_path': str(history)})
    assert quiet['changed'] is False and not history.exists()
    recorded = run_module(tmp_path, {'sample_seconds': 0, 'history_path': str(history), 'record': True})
    assert recorded['changed'] is True and recorded['history']['recorded'] is True
    assert len(history.read_text().splitlines()) == 1
