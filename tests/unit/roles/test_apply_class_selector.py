"""playbooks/apply.yml's class selector, nodealloc_classes, run as operators run it (issue 46).

Two inventory hosts on this machine (ansible_connection=local), one of class alpha and one of class beta, both read a
kubelet config in a temporary directory that reserves 1 MiB: each node's non-pod memory is above what it reserves, so
each plan rolls and each verdict is apply. --check: the on-node step runs in check mode (it writes and restarts
nothing), and its task line names the hosts the rollout would have touched. No node is booted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIG = ('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n'
          'kubeReserved:\n  memory: 1Mi\n')
STEP = 'Write, restart and verify on the node (it restores the backup itself on failure)'


def run_apply(tmp_path, *args):
    config = tmp_path / 'kubelet.yaml'
    config.write_text(CONFIG)
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text(
        'alpha1 nodealloc_node_class=alpha\nbeta1 nodealloc_node_class=beta\n[all:vars]\nansible_connection=local\n'
        'ansible_python_interpreter=%s\nreservations_kubelet_config_path=%s\nreservations_history_path=%s\n'
        'reservations_install_sampler=false\nreservations_sample_seconds=0.2\n'
        % (sys.executable, config, tmp_path / 'history.jsonl'))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR='1')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
                             'nodealloc.kubelet.apply', '--check'] + list(args),
                            cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False, timeout=300)
    output = result.stdout + result.stderr
    assert config.read_text() == CONFIG  # check mode: the file is as it was, whatever the selection
    return result, output


def stepped(output):
    """The hosts the on-node step (write, restart, verify) ran on, over every batch of the serial play."""
    tasks = re.findall(r'TASK \[nodealloc\.kubelet\.reservations : %s\] \**\n(.*?)\n\n' % re.escape(STEP), output, re.S)
    return sorted(host for task in tasks for host in re.findall(r'^(?:changed|ok): \[(\w+)\]', task, re.M))


@pytest.mark.parametrize('selector, expected', [
    (None, ['alpha1', 'beta1']),  # unset: every node's plan, as before
    ('alpha', ['alpha1']),
    ('beta', ['beta1']),
    ('["beta"]', ['beta1']),  # a list (JSON extra vars)
    ('alpha,beta', ['alpha1', 'beta1']),
], ids=['unset', 'alpha', 'beta', 'list', 'both'])
def test_only_the_selected_class_is_written_and_restarted(tmp_path, selector, expected):
    args = [] if selector is None else ['-e', '{"nodealloc_classes": %s}' % selector if selector.startswith('[')
                                        else 'nodealloc_classes=%s' % selector]
    result, output = run_apply(tmp_path, *args)
    assert result.returncode == 0, output[-3000:]
    assert stepped(output) == expected, output[-4000:]
    # The other class's host was measured (its decision reported) and nothing changed on it.
    for host in {'alpha1', 'beta1'} - set(expected):
        assert re.search(r'%s +: ok=\d+ +changed=0 +unreachable=0 +failed=0 ' % host, output), output[-3000:]


def test_a_class_no_host_has_stops_the_run_before_any_node_is_written(tmp_path):
    result, output = run_apply(tmp_path, '-e', 'nodealloc_classes=alhpa')
    assert result.returncode == 2, output[-3000:]
    assert 'nodealloc_classes names alhpa, which no measured host has; the classes here: alpha, beta' in output
    assert stepped(output) == [], output[-3000:]
