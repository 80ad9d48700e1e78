# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: node_templates
short_description: Each node class's recommendation as node templates for Karpenter, Cluster API, EKS nodeadm, Gardener, the kubelet and node images
version_added: 0.1.0
description:
  - Groups the hosts by node class (the host's C(nodealloc_node_class) where the inventory sets one, else the size
    class the recommendation pools over - memory in whole GiB and CPU count) and takes, per class, the largest
    recommended C(kubeReserved) and C(systemReserved) of its nodes, resource by resource, and the largest hard
    C(memory.available) threshold they run with.
  - Renders nine files per class - a Karpenter C(EC2NodeClass) C(spec.kubelet) merge patch, a Cluster API
    C(KubeadmConfigTemplate) with a kubeadm C(kubeletconfiguration) patch, an EKS nodeadm C(NodeConfig), a Gardener
    worker C(kubernetes.kubelet) snippet and a KubeletConfiguration drop-in (docs/templates.md).
  - And four for node images - Bottlerocket user-data settings (TOML), a Talos machine config patch, an OpenShift
    C(KubeletConfig) for pools with auto-sizing off, and an AKS agent pool's preview C(kubeReserved).
  - Where every node of the class gives the same maxPods, each form that takes one sets it beside the reservation
    sized for it (AKS sets it on the agent pool, not here); a class of several sizes also gets one Karpenter patch per
    size (docs/templates.md).
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description:
      - Host name to the host's result of M(nodealloc.kubelet.node_reservation_facts). Hosts without a recommendation
        (not measured) are skipped.
    type: dict
    required: true
  node_classes:
    description: Host name to the inventory's class name for it (C(nodealloc_node_class)); an empty name or a missing host takes the size class.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Write the node templates on the controller
  ansible.builtin.copy:
    content: "{{ item.content }}"
    dest: "reports/templates/{{ item.path }}"
    mode: "0644"
  loop: "{{ facts_by_host | nodealloc.kubelet.node_templates(class_names_by_host) }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
_value:
  description:
    - One entry per file - C(path) (C(<class>/<file>)), C(class), C(form) (the form's file name, by which its schema
      and its use are known) and C(content) (YAML text; TOML for Bottlerocket).
    - A class of several sizes adds one entry per size whose C(path) is C(<class>/karpenter-ec2nodeclass-patch-<size>.yaml),
      whose C(form) is C(karpenter-ec2nodeclass-patch.yaml) and whose C(size) is the size class (C(<GiB>gib-<cpus>cpu)).
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report._node_templates import render


def node_templates(facts_by_host, node_classes=None):
    if not isinstance(facts_by_host, dict) or not isinstance(node_classes or {}, dict):
        raise AnsibleFilterError('node_templates: expects a mapping of host to facts and one of host to class name, got %s'
                                 % type(facts_by_host).__name__)
    hosts = {host: {'facts': facts if isinstance(facts, dict) else {}, 'node_class': (node_classes or {}).get(host) or None}
             for host, facts in facts_by_host.items()}
    try:
        return render(hosts)
    except ValueError as exc:
        raise AnsibleFilterError('node_templates: %s' % exc)


class FilterModule:
    def filters(self):
        return {'node_templates': node_templates}
