"""CPU guaranteed to system.slice under contention, from the weights the kubelet writes, and PSI."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _recommend
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024

# This build machine's /proc/pressure/cpu (Linux 6.18).
PROC_PRESSURE_CPU = 'some avg10=0.07 avg60=0.07 avg300=0.73 total=44902196\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'


@pytest.mark.parametrize('shares,weight', [
    # KEP-2254's conversion table: min, the v1 default, max.
    (2, 1), (1024, 39), (262144, 10000),
])
def test_shares_to_weight_matches_the_kep_table(shares, weight):
    assert _cpu_guarantee.shares_to_weight(shares) == weight


def test_v1_guarantee_is_systemslice_shares_over_the_sum():
    # 4 CPUs, nothing reserved: kubepods gets MilliCPUToShares(4000) = 4096 against system.slice's 1024.
    assert _cpu_guarantee.guaranteed_millicores('v1', 4000, 1024, 4000) == 4000 * 1024 // (1024 + 4096)


def test_on_a_large_node_reserving_cpu_buys_little_guarantee():
    # 96 CPUs: system.slice's 1024 shares against kubepods' 96 CPUs' worth is about 1 CPU under contention,
    # whatever small amount is reserved.
    assert _cpu_guarantee.guaranteed_millicores('v1', 96000, 1024, 96000 - 1500) < 1500
    minimum = _cpu_guarantee.min_reserved_for('v1', 96000, 1024, 1500)
    assert _cpu_guarantee.guaranteed_millicores('v1', 96000, 1024, 96000 - minimum) >= 1500
    assert _cpu_guarantee.guaranteed_millicores('v1', 96000, 1024, 96000 - minimum + 1) < 1500


@pytest.mark.parametrize('version,weight', [('v1', 1024), ('v2', 100)])
def test_minimum_reservation_is_the_least_that_covers_the_need(version, weight):
    for capacity, needed in ((2000, 300), (8000, 1200), (16000, 900)):
        minimum = _cpu_guarantee.min_reserved_for(version, capacity, weight, needed)
        assert _cpu_guarantee.guaranteed_millicores(version, capacity, weight, capacity - minimum) >= needed
        if minimum:
            assert _cpu_guarantee.guaranteed_millicores(version, capacity, weight, capacity - minimum + 1) < needed


def measured(capacity_m, non_pod_m, version='v1', weight=1024):
    return {'mem_total_bytes': 64 * 1024 * MIB, 'mem_available_bytes': 60 * 1024 * MIB,
            'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
            'capacity_millicores': capacity_m, 'non_pod_millicores': non_pod_m, 'kube_components_millicores': 0,
            'cpu_weights': {'version': version, 'system_slice_weight': weight}}


def test_recommendation_reserves_enough_for_the_guarantee_capped_as_before():
    result = _recommend.recommend(measured(32000, 1500))
    guarantee = result['cpu_guarantee']
    # 1500m + headroom needed; system.slice gets about 1 CPU of 32 unless kubepods' shares drop.
    assert guarantee['guaranteed_millicores_before_raise'] < guarantee['needed_millicores']
    # 1650m needed: kubepods may keep at most 1024 x (32000 / 1650 - 1) shares, which is under the 16000m cap.
    assert 0 < result['reserved_millicores'] == guarantee['min_reserved_millicores'] < 16000
    assert guarantee['recommended_millicores'] >= guarantee['needed_millicores'] == 1650


def test_a_guarantee_beyond_the_cap_is_capped_with_a_warning():
    # 3600m needed on 96 CPUs would take about 70 CPUs reserved: capped at half the node.
    result = _recommend.recommend(measured(96000, 3000))
    assert result['reserved_millicores'] == 48000
    assert result['cpu_guarantee']['recommended_millicores'] < result['cpu_guarantee']['needed_millicores']
    assert any('raise system.slice' in line for line in result['explanation'])


def test_report_only_leaves_the_reservation_alone():
    result = _recommend.recommend(measured(32000, 1500), {'cpu_guarantee': 'report'})
    assert result['reserved_millicores'] == result['cpu_guarantee']['needed_millicores']
    assert any(line.startswith('WARNING: the guaranteed share') for line in result['explanation'])


def test_pressure_lines_are_parsed():
    value = _cpu_guarantee.parse_pressure(PROC_PRESSURE_CPU)
    assert value['some'] == {'avg10': 0.07, 'avg60': 0.07, 'avg300': 0.73, 'total_usec': 44902196}
    assert value['full']['total_usec'] == 0


def test_v2_weight_and_pressure_are_read_per_cgroup(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    directory = cgroup_v2.make_group(root, 'system.slice', 100 * MIB, 0, 0)
    cgroup_v2.write(os.path.join(directory, 'cpu.weight'), '100\n')
    cgroup_v2.write(os.path.join(directory, 'cpu.pressure'), PROC_PRESSURE_CPU)
    layout = _cgroup.layout_from_root(root)
    assert _cpu_guarantee.read_weight(layout, 'system.slice')[0] == 100
    result = _cpu_guarantee.pressure(layout, ['system.slice', 'system.slice/absent.service'], str(tmp_path / 'proc'))
    assert result['cgroups'] == {'/system.slice': {'cpu': _cpu_guarantee.parse_pressure(PROC_PRESSURE_CPU)}}
    assert result['note'] is None


def test_v1_says_it_has_no_per_cgroup_pressure():
    layout = _cgroup.CgroupLayout('v1', 'legacy', '/nonexistent/memory', '/nonexistent/cpuacct', {})
    result = _cpu_guarantee.pressure(layout, ['system.slice'], '/nonexistent')
    assert 'cgroup v1 has no per-cgroup pressure files' in result['note']
    assert result['cgroups'] == {}
