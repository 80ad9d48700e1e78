"""_node_plan with the static memory and CPU managers: a change whose config would not start the kubelet is refused
before any write, naming the reservedMemory that would sum; a config that sums, or no change, is not refused."""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _node_plan

GI = 1 << 30
CONFIG = {'memoryManagerPolicy': 'Static', 'cpuManagerPolicy': 'static',
          'kubeReserved': {'memory': '1Gi', 'cpu': '500m'}, 'systemReserved': {'memory': '1Gi', 'cpu': '500m'},
          'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1124Mi'}},
                             {'numaNode': 1, 'limits': {'memory': '1Gi'}}]}  # 2Gi + the default 100Mi


def facts(action, kube_memory, numa=None):
    decided = {'kube_reserved': {'memory': kube_memory, 'cpu': '500m'},
               'system_reserved': {'memory': '1Gi', 'cpu': '700m'}}
    result = {'kubelet': {'config_path': '/var/lib/kubelet/config.yaml', 'unit': 'kubelet.service',
                          'ownership': {'managers': ['kubeadm'], 'refusal': None}, 'version': {'refusals': []}},
              'cgroup': {}, 'current': {'kube_reserved': CONFIG['kubeReserved'],
                                        'system_reserved': CONFIG['systemReserved']},
              'memory': {'mem_total_bytes': 64 * GI}, 'recommendation': {},
              'decision': dict(decided, action=action, memory={'action': action}, reasons=[]),
              'basis': {'measurement': {'kubelet_config': CONFIG}}}
    if numa is not None:
        result['numa'] = numa
    return result


def test_the_running_config_sums():
    assert _resource_managers.all_problems(CONFIG, 64 * GI, [0, 1]) == []


def test_a_memory_increase_with_the_static_memory_manager_is_refused_naming_the_reserved_memory_that_sums():
    plan = _node_plan.plan(facts('increase', '2Gi'), {})
    [refusal] = [r for r in plan['refusals'] if 'reservedMemory' in r]
    assert "sum to 3172Mi" in refusal and 'set reservedMemory to' in refusal
    proposed = plan['resource_managers']['reserved_memory']
    after = dict(CONFIG, kubeReserved={'memory': '2Gi', 'cpu': '500m'}, reservedMemory=proposed)
    assert _resource_managers.all_problems(after, 64 * GI, [0, 1]) == []
    assert plan['resource_managers']['cpu']['whole_cpus'] == 2  # 500m + 700m -> ceil 1.2 = 2


def test_the_split_follows_the_numa_nodes_read_from_sysfs_when_the_facts_carry_them():
    numa = {'nodes': [{'node': 0, 'mem_total_bytes': 48 * GI}, {'node': 1, 'mem_total_bytes': 16 * GI}],
            'online_cpus': list(range(8))}
    plan = _node_plan.plan(facts('increase', '2Gi', numa), {})
    assert [e['limits']['memory'] for e in plan['resource_managers']['reserved_memory']] == ['2379Mi', '793Mi']


def test_a_keep_writes_nothing_and_is_not_refused():
    plan = _node_plan.plan(facts('keep', '2Gi'), {})
    assert not [r for r in plan['refusals'] if 'stops the kubelet' in r]
