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
