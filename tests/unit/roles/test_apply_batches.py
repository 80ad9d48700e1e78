"""playbooks/apply.yml's growing batches, per class, and the halt that names the nodes left untouched (issue 48).

Inventory hosts on this machine (ansible_connection=local) read a kubelet config in a temporary directory that reserves
1 MiB, so every plan rolls and every verdict is apply; --check, so the on-node step writes and restarts nothing. A node
whose step must fail gets a Python interpreter that answers the step module (kubelet_reservations_apply) with a failure
and runs every other module: the step fails on that node as a refused kubelet would, in the serial play only. No node
is booted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH

from helpers.rollout import hosts_by_task

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIG = ('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n'
          'kubeReserved:\n  memory: 1Mi\n')
STEP = 'Write, restart and verify on the node (it restores the backup itself on failure)'
# The module arrives on stdin (pipelining) or as a file (without): either way its name is in the payload.
FAILING_PYTHON = '''#!/bin/sh
payload=$(mktemp "%(dir)s/payload.XXXXXX")
if [ "$#" -gt 0 ]; then cp "$1" "$payload"; else cat > "$payload"; fi
if grep -q kubelet_reservations_apply "$payload"; then
    echo '{"failed": true, "msg": "injected: the kubelet refused the new config"}'
    exit 1
fi
if [ "$#" -gt 0 ]; then exec %(python)s "$@"; fi
exec %(python)s < "$payload"
'''


def run_apply(tmp_path, hosts, *args, failing=()):
    config = tmp_path / 'kubelet.yaml'
    config.write_text(CONFIG)
    python = tmp_path / 'failing-python'
    python.write_text(FAILING_PYTHON % {'dir': tmp_path, 'python': sys.executable})
    python.chmod(0o755)
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text(''.join(
        '%s nodealloc_node_class=%s%s\n' % (host, cls, ' ansible_python_interpreter=%s' % python if host in failing else '')
        for host, cls in hosts) +
        '[all:vars]\nansible_connection=local\nansible_python_interpreter=%s\nreservations_kubelet_config_path=%s\n'
        'reservations_history_path=%s\nreservations_install_sampler=false\nreservations_sample_seconds=0.2\n'
        % (sys.executable, config, tmp_path / 'history.jsonl'))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR='1', ANSIBLE_SHOW_CUSTOM_STATS='1', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
                             'nodealloc.kubelet.apply', '--check'] + list(args),
                            cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False, timeout=600)
    assert config.read_text() == CONFIG  # check mode: nothing written, whatever happened
    return result, result.stdout + result.stderr


def stepped(output):
    """The hosts the on-node step ran on, batch by batch (one sorted list per batch)."""
    return hosts_by_task(output, 'TASK [nodealloc.kubelet.reservations : %s]' % STEP)


def custom_stats(output):
    return json.loads(re.search(r'^\tRUN: (.*)$', output, re.M).group(1))


def test_a_failed_batch_halts_the_rollout_and_names_the_nodes_left_untouched(tmp_path):
    # The shape, scaled down: batches of 1, 2 and the rest; a kubelet that fails in the second batch stops
    # the run before the third, whose nodes are never reached.
    hosts = [('n%d' % i, 'alpha') for i in range(1, 7)]
    result, output = run_apply(tmp_path, hosts, '-e', '{"nodealloc_serial": [1, 2, 3]}', failing=('n3',))
    assert result.returncode == 2, output[-4000:]
    assert stepped(output) == [['n1'], ['n2', 'n3']], output[-4000:]
    assert 'injected: the kubelet refused the new config' in output
    # Said before the batch began, and handed on (AWX's artifacts): the nodes the halted run never reached.
    assert 'Batch 2 of 3: n2, n3. If it fails, the rollout halts and leaves 3 node(s) untouched: n4, n5, n6.' in output
    assert custom_stats(output) == {'nodealloc_rollout_batch': ['n2', 'n3'], 'nodealloc_rollout_untouched': ['n4', 'n5', 'n6']}
    for host in ('n4', 'n5', 'n6'):
        assert re.search(r'%s +: ok=\d+ +changed=0 +unreachable=0 +failed=0 ' % host, output), output[-3000:]


def test_max_fail_percentage_applies_per_batch(tmp_path):
    # One failure in a batch of 2 is 50 %: at nodealloc_max_fail_percentage=50 the share is not exceeded (Ansible's
    # rule), the rollout goes on, and at the end no node is left untouched.
    hosts = [('n%d' % i, 'alpha') for i in range(1, 6)]
    result, output = run_apply(tmp_path, hosts, '-e', '{"nodealloc_serial": [1, 2, 2], "nodealloc_max_fail_percentage": 50}',
                               failing=('n3',))
    assert result.returncode == 2, output[-4000:]  # a node failed
    assert stepped(output) == [['n1'], ['n2', 'n3'], ['n4', 'n5']], output[-4000:]
    assert custom_stats(output)['nodealloc_rollout_untouched'] == []


def test_each_named_class_has_its_own_canary(tmp_path):
    hosts = [('a1', 'alpha'), ('b1', 'beta'), ('a2', 'alpha'), ('a3', 'alpha'), ('b2', 'beta'), ('c1', 'gamma')]
    result, output = run_apply(tmp_path, hosts, '-e', '{"nodealloc_serial": [1, "100%"], "nodealloc_classes": ["beta", "alpha"]}')
    assert result.returncode == 0, output[-4000:]
    # beta first (as named), then alpha; each class a canary of one, then the rest of the class; gamma not written.
    assert stepped(output) == [['b1'], ['b2'], ['a1'], ['a2', 'a3']], output[-4000:]
    assert '"batch 3 of 4 (class alpha): a1"' in output
    assert custom_stats(output)['nodealloc_rollout_untouched'] == []
    assert re.search(r'c1 +: ok=\d+ +changed=0 +unreachable=0 +failed=0 ', output), output[-3000:]


def test_a_failed_canary_halts_every_class_after_it(tmp_path):
    hosts = [('a1', 'alpha'), ('a2', 'alpha'), ('b1', 'beta'), ('b2', 'beta')]
    result, output = run_apply(tmp_path, hosts, '-e', 'nodealloc_serial=1,100%', '-e', 'nodealloc_classes=alpha,beta',
                               failing=('a1',))
    assert result.returncode == 2, output[-4000:]
    assert stepped(output) == [['a1']], output[-4000:]
    assert custom_stats(output)['nodealloc_rollout_untouched'] == ['a2', 'b1', 'b2']
