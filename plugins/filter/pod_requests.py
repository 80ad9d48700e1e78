# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: pod_requests
short_description: The effective CPU and memory requests of Pods, as the kubelet's admission counts them
version_added: 0.1.0
description:
  - Reduces Pod objects (the C(resources) that M(kubernetes.core.k8s_info) returns) to one small entry per pod that
    the kubelet would admit again after a restart - C(pod) (C(namespace/name)), C(millicores) and C(memory_bytes) - for
    the O(nodealloc.kubelet.node_reservation_facts#module:pod_requests) option.
  - Requests are k8s.io/component-helpers C(PodRequests) - regular containers plus restartable (sidecar) init
    containers, or the largest init container with the sidecars started before it if larger; pod-level
    C(spec.resources.requests) where set; plus C(spec.overhead). Pods in phase C(Succeeded) or C(Failed) are left out,
    as the kubelet leaves them out of admission.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: A list of Pod objects as the API server returns them.
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: The requests of the pods bound to a node
  ansible.builtin.set_fact:
    pods_on_node: "{{ pods.resources | nodealloc.kubelet.pod_requests }}"
'''

RETURN = r'''
_value:
  description: One dict per active pod - C(pod), C(millicores), C(memory_bytes).
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy._requests_fit import reduce_pods


def pod_requests(pods):
    try:
        return reduce_pods(pods)
    except (ValueError, AttributeError, TypeError) as exc:
        raise AnsibleFilterError('pod_requests: %s' % exc)


class FilterModule:
    def filters(self):
        return {'pod_requests': pod_requests}
