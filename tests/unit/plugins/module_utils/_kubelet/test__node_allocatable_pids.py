"""_node_allocatable.compute_pids against the kubelet.

kubernetes/kubernetes pkg/kubelet/cm/node_container_manager_linux_test.go at 128a84ab holds no row with
``pidlimit.PIDs``: pid is an internal resource that never reaches the Node's allocatable. Its arithmetic is
``getNodeAllocatableAbsoluteImpl``, one loop over every resource of the capacity it is given (``internalCapacity`` for
the kubepods group, with pid in it): so the six rows of ``TestNodeAllocatableForEnforcement`` with a memory capacity
(the seventh has none, and so no result), whose memory column runs through that same loop, are taken with their
memory figures as tasks (10Gi - 100Mi - 50Mi = 10090Mi); their hard threshold, subtracted nowhere there, is given as
``pid.available``, which the kubelet subtracts nowhere either.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable

MI = 1024 * 1024
GI = 1024 * MI

# (kubeReserved, systemReserved, hard threshold, capacity, expected), the memory column of each upstream row.
ENFORCEMENT_ROWS = [
    ({'pid': '100Mi'}, {'pid': '50Mi'}, None, 10 * GI, 10090 * MI),
    ({'pid': '100Mi'}, {'pid': '50Mi'}, '100Mi', 10 * GI, 10090 * MI),
    ({'pid': '100Mi'}, {'pid': '50Mi'}, '5%', 10 * GI, 10090 * MI),
    ({}, {}, None, 10 * GI, 10 * GI),
    ({'pid': '100Mi'}, {'pid': '50Mi'}, None, 10 * GI, 10090 * MI),
    ({'pid': '100Mi'}, {'pid': '50Mi'}, None, 10 * GI, 10090 * MI),
]


@pytest.mark.parametrize('kube, system, threshold, capacity, expected', ENFORCEMENT_ROWS)
def test_the_upstream_enforcement_rows(kube, system, threshold, capacity, expected):
    eviction = {'pid.available': threshold} if threshold else {}
    result = _node_allocatable.compute_pids(capacity, kube, system, eviction)
    assert (result['absolute'], result['kubepods_pids_max']) == (expected, expected)


def test_a_node_of_32768_pids():
    result = _node_allocatable.compute_pids(32768, {'pid': '1000'}, {'pid': '1400'}, {'pid.available': '5%'})
    assert result == {'capacity': 32768, 'kube_reserved': 1000, 'system_reserved': 1400,
                      # float32(5 %) x 32768 = 1638.4..., int() as GetThresholdQuantity: not taken out of pids.max
                      'eviction_hard_pid_available': 1638, 'absolute': 30368, 'kubepods_pids_max': 30368,
                      'enforces_pods': True, 'reservation_exceeds_capacity': False}


def test_without_pods_enforced_kubepods_keeps_the_capacity():
    result = _node_allocatable.compute_pids(32768, {'pid': '1000'}, None, {}, enforce_node_allocatable=['system-reserved'])
    assert (result['absolute'], result['kubepods_pids_max'], result['enforces_pods']) == (31768, 32768, False)


def test_a_reservation_above_capacity_floors_at_zero_and_is_flagged():
    result = _node_allocatable.compute_pids(32768, {'pid': '20000'}, {'pid': '20000'}, {'pid.available': '100'})
    assert (result['absolute'], result['reservation_exceeds_capacity'], result['eviction_hard_pid_available']) == \
        (0, True, 100)
