"""The pod_requests filter: k8s_info's Pod objects, as the stand-in API server's fixture holds them, reduced to what
node_reservation_facts' pod_requests option takes."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.filter.pod_requests import FilterModule

pod_requests = FilterModule().filters()['pod_requests']
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'scenarios', 'fixtures',
                       'bound_pods.json')
MI = 1 << 20


def test_the_fixture_pods_reduce_to_their_effective_requests_without_the_finished_pod():
    with open(FIXTURE, encoding='utf-8') as handle:
        pods = json.load(handle)['pods']
    for pod in pods:
        if pod['metadata']['name'] == 'cache-0':
            pod['spec']['resources']['requests']['memory'] = '3Gi'
    reduced = pod_requests([p for p in pods if p['spec']['nodeName'] == 'NODE'])
    assert reduced == [
        {'pod': 'kube-system/coredns-5d78c9869d-x2b7q', 'millicores': 100, 'memory_bytes': 70 * MI},
        # The migrate init container with the sidecar started before it (400m, 1152Mi) outweighs the running pod
        # (api + sidecar: 350m, 640Mi).
        {'pod': 'web/api-0', 'millicores': 400, 'memory_bytes': 1152 * MI},
        {'pod': 'web/sandboxed-0', 'millicores': 350, 'memory_bytes': 224 * MI},  # RuntimeClass overhead added
        {'pod': 'data/cache-0', 'millicores': 100, 'memory_bytes': 3072 * MI}]  # pod-level requests


def test_a_quantity_the_api_would_not_hold_is_an_error_naming_the_filter():
    with pytest.raises(AnsibleFilterError, match='pod_requests'):
        pod_requests([{'metadata': {'name': 'x'}, 'spec': {'containers': [{'resources': {'requests': {'cpu': 'x1'}}}]}}])
