"""The 500-node fixture (fleet_results.py) is what node_reservation_facts returns: for a sample of hosts, the module
itself, run as Ansible runs it (its file, its arguments as JSON, check mode), given the host's basis and class peers,
returns the fixture's result; and the fixture is self-consistent where the issue found it was not (issue 46: a node
"left as it is" beside a diff writing kubeReserved: 0, because the recomputed results had no components_found)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import fleet_results

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, 'plugins', 'modules', 'node_reservation_facts.py')
COUNT = 500
# A host of each kind and class: kubelet nodes of the three classes, young and warm, pooled with their class or not,
# one per reservation choice, the node without a kubelet, the failed one.
SAMPLE = (0, 1, 2, 3, 4, 5, 6, 9, 10, 13, 41, 7)


@pytest.fixture(scope='module')
def fleet():
    return fleet_results.fleet(COUNT)


def run_module(args, tmp_path):
    """node_reservation_facts' result for ``args``, the module file run by this Python as Ansible runs it."""
    path = tmp_path / 'args.json'
    path.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=True)}))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, MODULE, str(path)], stdout=subprocess.PIPE, check=False, env=environment)
    result = json.loads(done.stdout)
    result.pop('invocation', None)
    return result


@pytest.mark.parametrize('index', SAMPLE)
def test_a_host_s_result_is_what_the_module_returns(fleet, index, tmp_path):
    host = fleet_results.host_name(index)
    result = fleet[host]
    if result.get('failed'):
        # The failed host: the module on its unparseable config, laid out as files, fails with the fixture's message.
        root = str(tmp_path / 'node')
        options = fleet_results._lay_out(root, fleet_results.UNPARSEABLE_CONFIG)
        failed = run_module({k: v for k, v in options.items() if not k.startswith('_')}, tmp_path)
        assert failed['failed'] and failed['msg'].replace(root, '') == result['msg']
        return
    args = fleet_results.module_args(COUNT)[host]
    # The module given the host's basis (what its first call measured) and the class peers it was decided with.
    assert run_module(args, tmp_path) == result


def test_every_node_with_a_kubelet_has_its_components_found(fleet):
    report = _fleet_report.build_report(fleet)
    inputs = fleet_results.fleet_inputs(COUNT)
    kinds = {}
    for node in report['nodes']:
        kind = inputs[node['host']]['kind']
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == 'kubelet':
            assert node['components_found'], node['host']
            result = fleet[node['host']]
            assert {c['program'] for c in result['components']} == {'kubelet', 'containerd'}
            # Measured: kubeReserved gets the kubelet's and runtime's share, and apply writes no kubeReserved 0.
            assert result['recommendation']['kube_reserved'].get('memory') not in (None, '0', '0Mi'), node['host']
            assert not [line for line in node['config_diff'] if re.match(r'\+\s*memory: .?0.?$', line)], node['host']
        elif kind == 'no_kubelet':
            assert not fleet[node['host']]['components']
    assert kinds == {'kubelet': 470, 'no_kubelet': 10, 'failed': 10, 'unreachable': 10}


def test_the_fleet_has_young_and_warm_nodes_and_every_decision(fleet):
    measured = [r for r in fleet.values() if r.get('recommendation')]
    cold = [r for r in measured if r['recommendation'].get('cold_start')]
    # Young nodes rest on the cold-start floor; warm ones on their history (longer than the reaction time, 24 h).
    assert 100 < len(cold) < len(measured) - 100
    assert {r['decision']['action'] for r in measured} == {'increase', 'decrease', 'keep'}
