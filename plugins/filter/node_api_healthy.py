# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: node_api_healthy
short_description: Whether the API server shows a Node Ready with the expected allocatable memory
version_added: 0.1.0
description:
  - The API server's side of a rollout's health, after the on-node step has seen the kubelet healthy - true once
    the Node that M(kubernetes.core.k8s_info) read is C(Ready) (its C(Ready) condition's status is V(True)) and its
    C(status.allocatable.memory) equals O(expected_memory) by value, as apimachinery compares quantities (V(8388608Ki)
    equals V(8Gi)).
  - False while the API server does not know the Node, or shows it without a C(Ready) condition or an allocatable
    memory, so that C(until) keeps waiting.
  - The C(reservations) role's wait after each node's change (C(roles/reservations/tasks/health.yml)).
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: What M(kubernetes.core.k8s_info) returned for C(kind=Node) and the node's name (its C(resources) list).
    type: dict
    required: true
  expected_memory:
    description:
      - The allocatable memory the new configuration gives, a Kubernetes quantity (the C(allocatable_after.memory)
        that M(nodealloc.kubelet.kubelet_reservations_apply) returns).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Wait for the Node to be Ready with the expected allocatable memory in the API server
  kubernetes.core.k8s_info:
    kind: Node
    name: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: node
  until: node | nodealloc.kubelet.node_api_healthy(step.allocatable_after.memory)
  retries: 60
  delay: 2
'''

RETURN = r'''
_value:
  description: True when the Node is Ready with the expected allocatable memory, else false.
  type: bool
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout._api_health import node_healthy


def node_api_healthy(k8s_info_result, expected_memory):
    try:
        return node_healthy(k8s_info_result, expected_memory)
    except (ValueError, AttributeError, TypeError) as exc:
        raise AnsibleFilterError('node_api_healthy: %s' % exc)


class FilterModule:
    def filters(self):
        return {'node_api_healthy': node_api_healthy}
