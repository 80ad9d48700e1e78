"""The reservedMemory the collection writes with a reservation (issue 47 item 3) starts the stand-in kubelet, which
checks the static memory manager from its own reading of the kubelet's source (tests/standin/kubelet_logic, which
imports nothing of the collection): the node's plan decides, the step's own plan and write (_config_change) put the
files on disk, in the main file or in our drop-in, and the stand-in loads them as the kubelet does (main file, then
drop-ins merged with a JSON merge patch) and starts. The same files without the reservedMemory do not start it. A
reservedMemory holding hugepages is refused by the plan and by the step's validation before any write, and the
stand-in refuses the config that write would have made."""

from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_edit
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _node_plan
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
import kubelet as standin  # noqa: E402
from kubelet_logic import machine  # noqa: E402

NUMA_NODES = {0, 1}
CPU_MILLICORES = (os.cpu_count() or 1) * 1000  # what the stand-in counts
MAIN = {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration', 'failCgroupV1': False,
        'memoryManagerPolicy': 'Static', 'evictionHard': {'memory.available': '100Mi'},
        'kubeReserved': {'memory': '1Gi', 'cpu': '100m'}, 'systemReserved': {'memory': '512Mi', 'cpu': '100m'},
        # 1Gi + 512Mi + 100Mi = 1636Mi: the kubelet runs on it now.
        'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1124Mi'}},
                           {'numaNode': 1, 'limits': {'memory': '512Mi'}}]}
NEW_KUBE_RESERVED = {'memory': '1536Mi', 'cpu': '100m'}


def _write(path, data):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(yaml.safe_dump(data, sort_keys=False))


def _node(tmp_path, main):
    """The main file, an empty --config-dir, and the facts a node with them gives its plan (a memory increase)."""
    main_path, config_dir = str(tmp_path / 'config.yaml'), tmp_path / 'config.d'
    config_dir.mkdir()
    _write(main_path, main)
    facts = {'kubelet': {'config_path': main_path, 'config_dir': str(config_dir), 'unit': 'kubelet.service',
                         'ownership': {'managers': ['kubeadm'], 'refusal': None, 'config_dir': str(config_dir)},
                         'version': {'refusals': []}},
             'cgroup': {}, 'current': {'kube_reserved': main['kubeReserved'], 'system_reserved': main['systemReserved']},
             'memory': {'mem_total_bytes': machine.meminfo_total_bytes()}, 'recommendation': {},
             'decision': {'action': 'increase', 'memory': {'action': 'increase'}, 'reasons': [],
                          'kube_reserved': NEW_KUBE_RESERVED, 'system_reserved': main['systemReserved']},
             'basis': {'measurement': {'kubelet_config': {k: v for k, v in main.items()
                                                          if k not in ('apiVersion', 'kind')}}}}
    return main_path, str(config_dir), facts


def _step_params(apply):
    """What the role hands kubelet_reservations_apply from the plan (tasks/apply.yml), as the step's plan takes it."""
    params = {'path': apply['path'], 'drop_in_dir': apply.get('drop_in_dir'), 'drop_in_name': None,
              'kube_reserved': apply['kube_reserved'], 'system_reserved': apply['system_reserved'],
              'reserved_memory': apply.get('reserved_memory')}
    return _config_change.string_maps(params)


def _standin_starts(main_path, config_dir):
    """None when the stand-in kubelet starts on the files as they are on disk, else its refusal."""
    config, _sources = standin.load(['--config=%s' % main_path, '--config-dir=%s' % config_dir])
    try:
        standin.start_up(config, None, False, NUMA_NODES, [0, 1])
    except standin.StartupError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize('use_drop_in', ['true', 'false'])
def test_the_written_reserved_memory_starts_the_standin_kubelet(tmp_path, use_drop_in):
    main_path, config_dir, facts = _node(tmp_path, MAIN)
    plan = _node_plan.plan(facts, {'use_drop_in': use_drop_in})
    assert plan['refusals'] == []
    # 1536Mi + 512Mi + 100Mi = 2148Mi in the proportions in force (1124 : 512): node 1 floor(2148 x 512 / 1636) MiB.
    assert plan['apply']['reserved_memory'] == [{'numaNode': 0, 'limits': {'memory': '1476Mi'}},
                                                {'numaNode': 1, 'limits': {'memory': '672Mi'}}]
    decision = _config_change.plan(_step_params(plan['apply']), machine.meminfo_total_bytes(), CPU_MILLICORES)
    assert decision['action'] == 'write' and 'reservedMemory' in decision['text'] and 'kubeReserved' in decision['text']
    _config_change.apply(decision)
    assert (decision['target'] == main_path) == (use_drop_in == 'false')
    assert _standin_starts(main_path, config_dir) is None


@pytest.mark.parametrize('use_drop_in', ['true', 'false'])
def test_without_the_reserved_memory_the_same_write_does_not_start_it(tmp_path, use_drop_in):
    main_path, config_dir, facts = _node(tmp_path, MAIN)
    plan = _node_plan.plan(facts, {'use_drop_in': use_drop_in})
    assert plan['apply']['reserved_memory']  # what the plan writes, left out here
    params = dict(_step_params(plan['apply']), reserved_memory=None)
    with pytest.raises(ValidationError, match='reservedMemory'):
        _config_change.plan(params, machine.meminfo_total_bytes(), CPU_MILLICORES)  # the step refuses it too
    # Written all the same, as a step that did not check would: the stand-in does not start.
    after, _changed = _config_edit.apply_changes(MAIN, {'kube_reserved': NEW_KUBE_RESERVED})
    _write(main_path, after)
    assert 'is not equal to the value' in _standin_starts(main_path, config_dir)


def test_a_hugepages_reservation_is_refused_by_the_plan_the_step_and_the_standin(tmp_path):
    hugepages = dict(MAIN, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '1124Mi', 'hugepages-2Mi': '10Mi'}},
                                           {'numaNode': 1, 'limits': {'memory': '512Mi'}}])
    main_path, config_dir, facts = _node(tmp_path, hugepages)
    plan = _node_plan.plan(facts, {'use_drop_in': 'true'})
    assert 'reserved_memory' not in plan['apply']
    assert any('hugepages-2Mi' in r and 'even before this change' in r for r in plan['refusals'])
    with pytest.raises(ValidationError):
        _config_change.plan(_step_params(plan['apply']), machine.meminfo_total_bytes(), CPU_MILLICORES)
    assert os.listdir(config_dir) == []  # nothing written
    drop_in = os.path.join(config_dir, '50-nodealloc.conf')
    _write(drop_in, _config_edit.new_drop_in({'kubeReserved': NEW_KUBE_RESERVED, 'systemReserved': MAIN['systemReserved']}))
    assert _standin_starts(main_path, config_dir) is not None
    # Even with the memory the plan names (it sums), the hugepages entry kept stops the stand-in, as the kubelet.
    proposed = plan['resource_managers']['reserved_memory']
    assert proposed and all(set(e['limits']) == {'memory'} for e in proposed)
    kept = [dict(e, limits=dict(e['limits'], **({'hugepages-2Mi': '10Mi'} if e['numaNode'] == 0 else {})))
            for e in proposed]
    _write(drop_in, _config_edit.new_drop_in({'kubeReserved': NEW_KUBE_RESERVED, 'systemReserved': MAIN['systemReserved'],
                                              'reservedMemory': kept}))
    assert 'of type "hugepages-2Mi" is not equal to the value "0"' in _standin_starts(main_path, config_dir)
