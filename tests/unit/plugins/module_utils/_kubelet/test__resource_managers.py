"""_resource_managers: what the static CPU and memory managers refuse, and the reservedMemory / whole CPUs proposed.

Rows from kubernetes/kubernetes pkg/kubelet/apis/config/validation/validation_reserved_memory_test.go
(TestValidateReservedMemoryConfiguration), the kubernetes.io memory-manager task page's worked example (kube 4Gi,
system 1Gi, default eviction 100Mi = reservedMemory 3Gi + 2148Mi), bottlerocket-core-kit#821 (a hugepages entry is
refused), and cpu_manager.go NewManager (zero reserved CPU refused, fractions rounded up).
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError, ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_rules, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers as rm

GI, MI = 1 << 30, 1 << 20
DOCS = {'memoryManagerPolicy': 'Static', 'kubeReserved': {'cpu': '4', 'memory': '4Gi'},
        'systemReserved': {'cpu': '1', 'memory': '1Gi'},
        'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '3Gi'}}, {'numaNode': 1, 'limits': {'memory': '2148Mi'}}]}


def with_(base, **changes):
    return dict(base, **changes)


def test_the_documented_example_sums_and_one_mib_less_is_refused_naming_the_sum():
    assert rm.memory_manager_problems(DOCS, 64 * GI, [0, 1]) == []
    short = with_(DOCS, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '3Gi'}},
                                        {'numaNode': 1, 'limits': {'memory': '2147Mi'}}])
    [problem] = rm.memory_manager_problems(short, 64 * GI, [0, 1])
    assert "type 'memory' to sum to 5220Mi" in problem and 'not 5219Mi' in problem


def test_the_default_hard_threshold_counts_and_a_percentage_is_taken_of_capacity():
    no_eviction = with_(DOCS, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '5Gi'}}])
    assert rm.memory_manager_problems(no_eviction, 64 * GI, [0])  # 100Mi missing
    five_percent = with_(no_eviction, evictionHard={'memory.available': '5%'})
    wanted = rm.node_allocatable_memory(five_percent, 10 * GI)
    assert wanted == 5 * GI + 536870920  # int64(float64(10Gi) * float64(float32(0.05))): 8 bytes above 5 %
    assert rm.node_allocatable_memory(five_percent, None) is None  # cannot tell without the node


@pytest.mark.parametrize('entries,fragment', [
    ([{'numaNode': 0, 'limits': {'memory': '128'}}, {'numaNode': 0, 'limits': {'memory': '64'}}], 'duplicate value'),
    ([{'numaNode': 0, 'limits': {'blabla': '128'}}], "limit type 'blabla'"),
    ([{'numaNode': 0, 'limits': {'memory': '0'}}], 'may not be zero'),
])
def test_validate_reserved_memory_configuration_rows_are_refused_whatever_the_policy(entries, fragment):
    for policy in ('None', 'Static'):
        found = rm.memory_manager_problems({'memoryManagerPolicy': policy, 'reservedMemory': entries})
        assert any(fragment in problem for problem in found), found


def test_a_hugepages_entry_is_refused_since_nothing_can_reserve_hugepages():
    config = with_(DOCS, reservedMemory=[{'numaNode': 0, 'limits': {'memory': '5220Mi', 'hugepages-2Mi': '10Mi'}}])
    [problem] = rm.memory_manager_problems(config, 64 * GI, [0])
    assert "'hugepages-2Mi' to sum to 0" in problem and 'not 10Mi' in problem


def test_a_numa_node_the_machine_lacks_is_refused_and_unknown_layouts_skip_that_check():
    config = with_(DOCS, reservedMemory=[{'numaNode': 3, 'limits': {'memory': '5220Mi'}}])
    assert 'NUMA node 3 that does not exist' in rm.memory_manager_problems(config, 64 * GI, [0, 1])[0]
    assert rm.memory_manager_problems(config, 64 * GI, None) == []


def test_the_none_policy_does_not_check_the_sum_and_static_needs_some_memory():
    assert rm.memory_manager_problems(with_(DOCS, memoryManagerPolicy='None', reservedMemory=[])) == []
    nothing = {'memoryManagerPolicy': 'Static', 'evictionHard': {'nodefs.available': '10%'}}
    assert 'you should specify the system reserved memory' in rm.memory_manager_problems(nothing, GI, [0])[0]


def test_config_rules_validate_refuses_an_unsummed_static_memory_manager():
    unsummed = with_(DOCS, kubeReserved={'cpu': '4', 'memory': '5Gi'})
    with pytest.raises(ValidationError, match='memory-manager-reserved-memory'):
        _config_rules.validate(unsummed)
    assert 'memory-manager-reserved-memory' in _config_rules.validate(DOCS)


@pytest.mark.parametrize('config,fragment', [
    ({'cpuManagerPolicy': 'static'}, 'greater than zero'),
    ({'cpuManagerPolicy': 'static', 'kubeReserved': {'cpu': '0'}, 'systemReserved': {'memory': '1Gi'}}, 'greater than zero'),
    ({'cpuManagerPolicy': 'none', 'reservedSystemCPUs': '6-9'}, 'not a subset of online-cpus: 0-7'),
])
def test_the_cpu_manager_refusals(config, fragment):
    assert fragment in rm.cpu_manager_problems(config, list(range(8)))[0]


def test_reserved_system_cpus_replace_the_reserved_cpu_and_fractions_round_up_to_whole_cpus():
    assert rm.cpu_manager_problems({'cpuManagerPolicy': 'static', 'reservedSystemCPUs': '0'}, [0, 1]) == []
    assert rm.reserved_cpus({'reservedSystemCPUs': '0,2', 'kubeReserved': {'cpu': '3'}})[1:] == ([0, 2], 2000)
    proposal = rm.propose_cpu({'cpuManagerPolicy': 'static'}, 1500, list(range(8)))
    assert proposal['whole_cpus'] == 2 and proposal['reserved_system_cpus'] is None
    assert 'KEP-4540' in proposal['reason']
    pinned = rm.propose_cpu({'reservedSystemCPUs': '0', 'cpuManagerPolicyOptions': {'strict-cpu-reservation': 'true'}},
                            2100, list(range(8)))
    assert pinned['reserved_system_cpus'] == '0-2' and 'strict-cpu-reservation is on' in pinned['reason']


def test_split_memory_is_proportional_whole_mib_and_sums_exactly():
    total = 5 * GI + 100 * MI + 7  # an odd byte count: the first node takes the rest
    entries = rm.split_memory(total, {0: 3, 1: 1})
    values = [int(_quantity.parse_quantity(e['limits']['memory'])) for e in entries]
    assert sum(values) == total and values[1] % MI == 0 and values[1] == (total // 4) // MI * MI


def test_the_proposal_sums_as_the_kubelet_requires():
    changed = with_(DOCS, kubeReserved={'cpu': '4', 'memory': '6Gi'})
    assert rm.memory_manager_problems(changed, 64 * GI, [0, 1])
    by_numa = rm.propose_reserved_memory(changed, 64 * GI, {0: 32 * GI, 1: 32 * GI})
    by_existing = rm.propose_reserved_memory(changed, 64 * GI)
    for proposal in (by_numa, by_existing):
        assert rm.memory_manager_problems(with_(changed, reservedMemory=proposal['reserved_memory']), 64 * GI,
                                          [0, 1]) == []
    assert by_numa['reserved_memory'][1]['limits']['memory'] == '3634Mi'  # half of 6Gi + 1Gi + 100Mi = 7268Mi
    assert 'MemTotal' in by_numa['split'] and 'in force' in by_existing['split']


@pytest.mark.parametrize('text,cpus', [('0-3,8', [0, 1, 2, 3, 8]), ('0\n', [0]), ('', []), ('2,0-1', [0, 1, 2])])
def test_cpu_lists(text, cpus):
    assert rm.parse_cpu_list(text) == cpus
    assert rm.parse_cpu_list(rm.format_cpu_list(cpus)) == cpus


@pytest.mark.parametrize('text', ['3-1', '-1', '0,,1', ' 0', 'a', '0-', None])
def test_bad_cpu_lists_fail_with_the_collections_error(text):
    with pytest.raises(ParseError):
        rm.parse_cpu_list(text)
