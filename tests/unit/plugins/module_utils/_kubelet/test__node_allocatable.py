"""Allocatable and kubepods limits as the kubelet derives them (node_container_manager_linux.go)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable as na

GI, MI = 1 << 30, 1 << 20


def test_the_documented_example():
    # kubernetes.io "Reserve Compute Resources": 32Gi / 16 CPU node, kube 1 CPU 2Gi, system 500m 1Gi,
    # eviction 500Mi -> allocatable 14.5 CPU and "28.5Gi" (exactly 29Gi - 500Mi: 500Mi is not 0.5Gi).
    result = na.compute(32 * GI, 16000, {'cpu': '1', 'memory': '2Gi'}, {'cpu': '500m', 'memory': '1Gi'},
                        {'memory.available': '500Mi'})
    assert result['allocatable_millicores'] == 14500
    assert result["allocatable_memory_bytes"] == 29 * GI - 500 * MI
    # The kubepods limit leaves the eviction threshold in: capacity - kube - system.
    assert result['kubepods_memory_limit_bytes'] == 29 * GI
    assert result['kubepods_cpu_shares'] == 14848


def test_limit_is_capacity_when_pods_are_not_enforced():
    result = na.compute(8 * GI, 2000, {'memory': '1Gi'}, None, {}, enforce_node_allocatable=[])
    assert result['kubepods_memory_limit_bytes'] == 8 * GI
    assert result['allocatable_memory_bytes'] == 7 * GI


@pytest.mark.parametrize('milli,shares', [(0, 2), (1, 2), (2, 2), (1000, 1024), (10**6, 262144)])
def test_milli_cpu_to_shares(milli, shares):
    assert na.milli_cpu_to_shares(milli) == shares


def test_reservation_above_capacity_is_flagged_and_allocatable_floors_at_zero():
    result = na.compute(GI, 1000, {'memory': '2Gi', 'cpu': '2'}, None, {'memory.available': '100Mi'})
    assert result['reservation_exceeds_capacity'] == {'memory': True, 'cpu': True}
    assert result['allocatable_memory_bytes'] == 0 and result['allocatable_millicores'] == 0


def test_fractional_quantities_round_up():
    result = na.compute(GI, 1000, {'memory': '0.5', 'cpu': '0.0001'}, None, {})
    assert result['kube_reserved_memory_bytes'] == 1
    assert result['kube_reserved_millicores'] == 1


def test_huge_pages_leave_allocatable_memory_and_the_kubepods_limit():
    # 2 GiB of 2 MiB huge pages on a 32 GiB node: MemTotal counts them, pods cannot use them as memory.
    plain = na.compute(32 * GI, 16000, {'memory': '1Gi'}, None, {'memory.available': '100Mi'})
    huge = na.compute(32 * GI, 16000, {'memory': '1Gi'}, None, {'memory.available': '100Mi'}, hugepages_bytes=2 * GI)
    assert plain['allocatable_memory_bytes'] - huge['allocatable_memory_bytes'] == 2 * GI
    assert plain['kubepods_memory_limit_bytes'] - huge['kubepods_memory_limit_bytes'] == 2 * GI


# --- ephemeral-storage: the upstream rows ------------------------------------------------------------------------
# kubernetes/kubernetes pkg/kubelet/cm/node_container_manager_linux_test.go at 128a84abe5d157bf08a525c72f75bb207e0c7f70,
# every row that involves ephemeral-storage (TestNodeAllocatableForEnforcement has none at that commit):
# TestNodeAllocatableReservationForScheduling's ephemeralStorageTestCases, a kubeReserved, a capacity and a hard
# nodefs.available threshold (Quantity, Percentage or the zero value: none), compared as MilliValue (exact here).
# Upstream gives the percentage as the float32 0.05; the kubelet reads a config's "5%" to the same float32 (asserted
# below), so the rows are fed as the config would give them.
EPHEMERAL_SCHEDULING_ROWS = [
    # (kubeReserved, capacity, hard nodefs.available, expected reservation)
    ({'ephemeral-storage': '100Mi'}, '10Gi', None, '100Mi'),
    ({'ephemeral-storage': '100Mi'}, '10Gi', '100Mi', '200Mi'),
    ({'ephemeral-storage': '150Mi'}, '10Gi', '5%', '694157320'),
    ({}, '10Gi', None, '0'),  # upstream: getEphemeralStorageResourceList("") (no entry: a zero reservation)
]
# TestNodeAllocatableInputValidation's ephemeralStorageTestCases: (kubeReserved, capacity, threshold, invalid).
EPHEMERAL_VALIDATION_ROWS = [
    ({'ephemeral-storage': '100Mi'}, '500Mi', None, False),
    ({'ephemeral-storage': '20Gi'}, '20Gi', '100Mi', True),
]


def _bytes(text):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
    return _quantity.quantity_value(_quantity.parse_quantity(text))


def _hard(threshold):
    return {} if threshold is None else {'nodefs.available': threshold}


@pytest.mark.parametrize('kube,capacity,threshold,expected', EPHEMERAL_SCHEDULING_ROWS)
def test_ephemeral_storage_reservation_is_upstreams_to_the_byte(kube, capacity, threshold, expected):
    result = na.compute_ephemeral_storage(_bytes(capacity), kube, None, _hard(threshold))
    assert result['reservation_bytes'] == _bytes(expected)
    # The Node's allocatable: capacity less the reservation (nodestatus/setters.go MachineInfo).
    assert result['allocatable_bytes'] == _bytes(capacity) - _bytes(expected)


def test_the_rows_percentage_is_the_float32_the_kubelet_reads_from_five_percent():
    import struct
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction
    assert _eviction.parse_percentage('5%') == struct.unpack('f', struct.pack('f', 0.05))[0]
    # 5 % of 10Gi in float32 is 536870920, not 536870912: 694157320 = 150Mi + that.
    assert na.compute_ephemeral_storage(10 * GI, None, None, {'nodefs.available': '5%'})[
        'eviction_hard_nodefs_bytes'] == 536870920


@pytest.mark.parametrize('kube,capacity,threshold,invalid', EPHEMERAL_VALIDATION_ROWS)
def test_ephemeral_storage_validation_is_upstreams(kube, capacity, threshold, invalid):
    result = na.compute_ephemeral_storage(_bytes(capacity), kube, None, _hard(threshold))
    assert result['reservation_exceeds_capacity'] is invalid


def test_a_real_nodes_allocatable_ephemeral_storage_to_the_byte():
    # The Node status tests/unit/plugins/module_utils/_rollout/test__api_health.py uses (capacity 102626232Ki,
    # allocatable 94580335255, no ephemeral-storage reserved): the default nodefs.available 10 % in float32 arithmetic
    # gives it to the byte, where 10 % of capacity in exact arithmetic (10508926156.8) would give 157 bytes more.
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
    result = na.ephemeral_storage_for_config({}, 102626232 * 1024)
    assert result['allocatable_bytes'] == 94580335255
    assert result['eviction_hard_nodefs_bytes'] == 10508926313
    assert _defaults.EVICTION_HARD['nodefs.available'] == '10%'


def test_system_and_kube_reserved_both_count_and_allocatable_floors_at_zero():
    result = na.compute_ephemeral_storage(10 * GI, {'ephemeral-storage': '1Gi'}, {'ephemeral-storage': '2Gi'},
                                          {'nodefs.available': '1Gi'})
    assert (result['reservation_bytes'], result['allocatable_bytes'], result['absolute_bytes']) == (
        4 * GI, 6 * GI, 7 * GI)
    over = na.compute_ephemeral_storage(GI, {'ephemeral-storage': '2Gi'}, None, {})
    assert over['allocatable_bytes'] == 0 and over['absolute_bytes'] == 0 and over['reservation_exceeds_capacity']


def test_the_imagefs_threshold_is_accounted_but_not_taken_out_of_allocatable():
    # hardEvictionReservation (pkg/kubelet/cm/helpers.go) reserves for memory.available and nodefs.available only.
    hard = {'nodefs.available': '10%', 'imagefs.available': '15%'}
    alone = na.compute_ephemeral_storage(100 * GI, None, None, hard)
    separate = na.compute_ephemeral_storage(100 * GI, None, None, hard, imagefs_capacity_bytes=50 * GI)
    assert separate['allocatable_bytes'] == alone['allocatable_bytes']
    assert alone['imagefs'] is None
    assert separate['imagefs'] == {'capacity_bytes': 50 * GI,
                                   'eviction_hard_imagefs_bytes': int(50 * GI * 0.15000000596046448)}


def test_memory_thresholds_do_not_touch_ephemeral_storage_nor_nodefs_memory():
    result = na.compute_ephemeral_storage(10 * GI, None, None, {'memory.available': '1Gi'})
    assert result['reservation_bytes'] == 0
    memory = na.compute(10 * GI, 1000, None, None, {'nodefs.available': '50%'})
    assert memory['allocatable_memory_bytes'] == 10 * GI
