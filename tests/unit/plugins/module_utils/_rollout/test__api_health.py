"""_api_health.node_healthy: the verdict on the Node kubernetes.core.k8s_info read, as health.yml's until: waits for.

The Node is shaped as the API server returns it (a kubelet v1.35 node's status, conditions in the kubelet's order:
nodestatus/setters.go MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition, ReadyCondition).
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _api_health

NODE = {
    'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-1'},
    'status': {
        'capacity': {'cpu': '4', 'ephemeral-storage': '102626232Ki', 'hugepages-2Mi': '0', 'memory': '16374356Ki',
                     'pods': '110'},
        'allocatable': {'cpu': '3820m', 'ephemeral-storage': '94580335255', 'hugepages-2Mi': '0',
                        'memory': '14174292Ki', 'pods': '110'},
        'conditions': [
            {'type': 'MemoryPressure', 'status': 'False', 'reason': 'KubeletHasSufficientMemory'},
            {'type': 'DiskPressure', 'status': 'False', 'reason': 'KubeletHasNoDiskPressure'},
            {'type': 'PIDPressure', 'status': 'False', 'reason': 'KubeletHasSufficientPID'},
            {'type': 'Ready', 'status': 'True', 'reason': 'KubeletReady'},
        ],
    },
}


def k8s_info(*nodes):
    return {'changed': False, 'api_found': True, 'resources': list(nodes), 'failed': False}


def node_with(ready=None, memory=None, drop=()):
    node = copy.deepcopy(NODE)
    if ready is not None:
        node['status']['conditions'][-1]['status'] = ready
    if memory is not None:
        node['status']['allocatable']['memory'] = memory
    for path in drop:
        holder = node
        for key in path[:-1]:
            holder = holder[key]
        del holder[path[-1]]
    return node


@pytest.mark.parametrize('result,expected,healthy', [
    (k8s_info(NODE), '14174292Ki', True),
    # Compared by value: the kubelet writes Ki, the step formats the expected memory its own way (14174292Ki is
    # 14514475008 bytes; 13842Mi is 14174208Ki).
    (k8s_info(NODE), '14514475008', True),
    (k8s_info(node_with(memory='13842Mi')), '13842Mi', True),
    (k8s_info(node_with(memory='13842Mi')), '14174208Ki', True),
    # Still the old allocatable: the kubelet's status update has not arrived.
    (k8s_info(NODE), '13842Mi', False),
    (k8s_info(node_with(ready='False')), '14174292Ki', False),
    (k8s_info(node_with(ready='Unknown')), '14174292Ki', False),  # the node controller's verdict on a silent kubelet
    (k8s_info(node_with(drop=[('status', 'conditions')])), '14174292Ki', False),
    (k8s_info(node_with(drop=[('status', 'allocatable', 'memory')])), '14174292Ki', False),
    (k8s_info(node_with(drop=[('status',)])), '14174292Ki', False),
    (k8s_info(), '14174292Ki', False),  # the API server does not know the Node (yet)
    ({'resources': None}, '14174292Ki', False),
])
def test_the_node_is_healthy_once_ready_with_the_expected_allocatable_memory(result, expected, healthy):
    assert _api_health.node_healthy(result, expected) is healthy


def test_the_ready_condition_is_found_wherever_it_is_listed():
    node = node_with()
    node['status']['conditions'].reverse()
    assert _api_health.node_healthy(k8s_info(node), '14174292Ki') is True


def test_an_expected_memory_that_is_no_quantity_is_an_error_not_a_wait():
    with pytest.raises(ValueError):
        _api_health.node_healthy(k8s_info(NODE), 'lots')
