# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: reservation_handover
short_description: A node's recommendation as kubespray host_vars and as a kubeadm kubeletconfiguration patch
version_added: 0.1.0
description:
  - For nodes whose kubelet config is kept by kubespray or kubeadm, which rewrite it on every run or upgrade.
  - Returns, per host, C(kubespray_host_vars) (the text of a C(host_vars/<host>.yml) with C(kube_reserved),
    C(kube_memory_reserved), C(kube_cpu_reserved), C(system_reserved), C(system_memory_reserved), C(system_cpu_reserved)
    and the ephemeral-storage and pid ones when recommended), C(kubeadm_patch_name)
    (V(kubeletconfiguration+strategic.yaml)) and C(kubeadm_patch) (its text, for C(kubeadm join|upgrade node --patches)).
  - A host without a recommendation (failed or unreachable) is left out.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: A mapping of host name to that host's M(nodealloc.kubelet.node_reservation_facts) result.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Write kubespray host_vars on the controller
  ansible.builtin.copy:
    content: "{{ (results | nodealloc.kubelet.reservation_handover)[inventory_hostname].kubespray_host_vars }}"
    dest: "reports/kubespray/host_vars/{{ inventory_hostname }}.yml"
    mode: "0644"
  delegate_to: localhost
'''

RETURN = r'''
_value:
  description: Host name to C(kubespray_host_vars), C(kubeadm_patch_name) and C(kubeadm_patch).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report._handover import handover


def reservation_handover(results):
    if not isinstance(results, dict):
        raise AnsibleFilterError('reservation_handover: expects a mapping of host to facts, got %s' % type(results).__name__)
    files = {}
    for host, facts in results.items():
        rendered = handover(host, facts)
        if rendered is not None:
            files[host] = rendered
    return files


class FilterModule:
    def filters(self):
        return {'reservation_handover': reservation_handover}
