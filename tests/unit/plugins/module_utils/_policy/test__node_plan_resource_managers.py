"""_node_plan with the static memory and CPU managers: a change whose reservation would not sum with the reservedMemory
in force carries the reservedMemory that sums (issue 47 item 3), split per NUMA node, in the step's own write, and the
config after that write starts the managers; a reservedMemory that still sums is left alone; one that did not sum
before the change (hugepages among it) is refused before any write, saying so; no change is not refused.
"""

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


def test_a_memory_increase_with_the_static_memory_manager_writes_the_reserved_memory_that_sums():
    plan = _node_plan.plan(facts('increase', '2Gi'), {})
    assert not [r for r in plan['refusals'] if 'stops the kubelet' in r]
    written = plan['apply']['reserved_memory']
    # 3Gi + the default 100Mi = 3172Mi, in the proportions of the reservedMemory in force (1124Mi : 1Gi): node 1 takes
    # floor(3172 x 1024 / 2148) = 1512Mi, node 0 the rest.
    assert written == [{'numaNode': 0, 'limits': {'memory': '1660Mi'}}, {'numaNode': 1, 'limits': {'memory': '1512Mi'}}]
    managers = plan['resource_managers']
    assert managers['reserved_memory_written'] == written and managers['memory_problems'] == []
    after = dict(CONFIG, kubeReserved={'memory': '2Gi', 'cpu': '500m'}, systemReserved={'memory': '1Gi', 'cpu': '700m'},
                 reservedMemory=written)
    assert _resource_managers.all_problems(after, 64 * GI, [0, 1]) == []
    assert managers['cpu']['whole_cpus'] == 2  # 500m + 700m -> ceil 1.2 = 2


def test_the_report_diff_and_the_summary_show_the_reserved_memory_written():
    plan = _node_plan.plan(facts('increase', '2Gi'), {})
    diff = '\n'.join(plan['report']['config_diff'])
    assert '-    memory: 1124Mi' in diff and '-    memory: 1Gi' in diff
    assert '+    memory: 1660Mi' in diff and '+    memory: 1512Mi' in diff
    [line] = [line for line in plan['summary'] if 'reservedMemory is written' in line]
    assert '{numaNode: 0, limits: {memory: 1660Mi}}' in line and 'proportions of the reservedMemory in force' in line


def test_the_summary_carries_the_static_cpu_managers_whole_cpus():
    plan = _node_plan.plan(facts('increase', '2Gi'), {})
    [line] = [line for line in plan['summary'] if line.startswith('the static CPU manager')]
    assert 'reserve 2 whole CPU(s)' in line and 'strict-cpu-reservation' in line


def test_a_reserved_memory_that_still_sums_is_left_as_it_is():
    # Only the CPU changes: 1Gi + 1Gi + 100Mi still sums with the reservedMemory in force.
    plan = _node_plan.plan(facts('increase', '1Gi'), {})
    assert 'reserved_memory' not in plan['apply'] and plan['resource_managers']['reserved_memory_written'] is None
    assert not [r for r in plan['refusals'] if 'stops the kubelet' in r]
    assert 'reservedMemory' not in '\n'.join(plan['report']['config_diff'])


def test_a_reserved_memory_that_did_not_sum_before_the_change_is_refused_and_not_written_over():
    result = facts('increase', '2Gi')
    broken = dict(CONFIG, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '1Gi'}}])
    result['basis']['measurement']['kubelet_config'] = broken
    plan = _node_plan.plan(result, {})
    assert 'reserved_memory' not in plan['apply']
    [refusal] = [r for r in plan['refusals'] if 'stops the kubelet' in r]
    assert 'does not sum even before this change' in refusal and 'set reservedMemory to' in refusal


def test_a_hugepages_reservation_is_refused_before_any_write():
    result = facts('increase', '2Gi')
    hugepages = dict(CONFIG, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '1124Mi', 'hugepages-2Mi': '10Mi'}},
                                             {'numaNode': 1, 'limits': {'memory': '1Gi'}}])
    result['basis']['measurement']['kubelet_config'] = hugepages
    plan = _node_plan.plan(result, {})
    assert 'reserved_memory' not in plan['apply']
    refusals = [r for r in plan['refusals'] if 'stops the kubelet' in r]
    assert any("'hugepages-2Mi'" in r for r in refusals) and all('even before this change' in r for r in refusals)


def test_the_split_follows_the_numa_nodes_read_from_sysfs_when_the_facts_carry_them():
    numa = {'nodes': [{'node': 0, 'mem_total_bytes': 48 * GI}, {'node': 1, 'mem_total_bytes': 16 * GI}],
            'online_cpus': list(range(8))}
    plan = _node_plan.plan(facts('increase', '2Gi', numa), {})
    assert [e['limits']['memory'] for e in plan['resource_managers']['reserved_memory']] == ['2379Mi', '793Mi']


def test_a_keep_writes_nothing_and_is_not_refused():
    plan = _node_plan.plan(facts('keep', '2Gi'), {})
    assert not [r for r in plan['refusals'] if 'stops the kubelet' in r]
