#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: prometheus_history
short_description: Read a node's history of non-pod memory from Prometheus, on the controller
version_added: 0.1.0
description:
  - Asks Prometheus' C(/api/v1/query_range) for O(query) with C($node) replaced by O(node), over O(window) at one
    value per O(step) (the largest within each step, C(max_over_time) over a subquery, so that a peak between two
    steps is kept), and returns the samples for the O(nodealloc.kubelet.node_reservation_facts#module:prometheus_history)
    option. The node uses that history when it spans longer than its own history file.
  - Never fails because of Prometheus. Not reaching it, a TLS or authentication failure, a redirect, an answer larger
    than O(max_answer_bytes), slower than O(timeout), encoded in a way not asked for, or not of the shape the
    Prometheus HTTP API documents, a query error, no series, more than one series for the node, a value that is
    NaN, infinite or negative, or less than 90 % of the steps present each give C(history.reason), and the node rests
    on its own history (or the cold start) as without Prometheus. Gaps, samples outside the asked window (dropped)
    and a series shorter than O(window) are named in C(history.problems).
  - Trusts nothing it is sent. One deadline, O(timeout), bounds connecting, the headers and the whole body of each
    request; the body is read up to O(max_answer_bytes) and no further; C(Accept-Encoding) is C(identity) and no
    other encoding is decoded; redirects are not followed, so O(bearer_token) and O(username)/O(password) go to the
    origin of O(url) only; they never appear in a reason, and a value with a control character is refused without
    being shown. Credentials over plain C(http://) to a host other than the loopback give a warning.
  - Fails only on its own arguments (a O(url) with a user name or password in it, a credential with a control
    character, a O(query) that is not PromQL or has no C($node) in a label value, a O(window) or O(step) that is not
    a duration); the C(reservations) role checks them before any node is touched.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
  - nodealloc.kubelet._attributes.full_check_no_diff
  - nodealloc.kubelet._attributes.on_controller
options:
  url:
    description:
      - The Prometheus server, such as V(https://prometheus.example.com) or V(http://127.0.0.1:9090).
      - No user information (V(user:password@)) in it; use O(username) and O(password).
    type: str
    required: true
  query:
    description:
      - A PromQL query of one node's non-pod memory in bytes (MemTotal - MemAvailable - the pods' working set), with
        C($node) in a label value where the node's name goes. The default is for kube-prometheus-stack's metric and
        label names (docs/arithmetic.md, "History from Prometheus").
    type: str
  pods_query:
    description:
      - A PromQL query of the number of pods on the node, with C($node) in a label value, read at the same steps as
        O(query) (the largest count within each step) and returned as C(history.pods); node_reservation_facts merges
        it into the history's lines as their C(pods). The default is the kubelet's C(kubelet_running_pods) as
        kube-prometheus-stack scrapes it. Empty - pods are not read.
      - No series, more than one, a value that is NaN, infinite, negative, fractional or above 65536, or fewer than
        90 % of the steps present leave C(history.pods) null and say why in C(history.problems); the memory
        history is used as without it.
    type: str
    version_added: 0.1.0
  mode:
    description:
      - V(node) reads O(node)'s history. V(classes) reads the class of each of O(nodes) and each class's history -
        every node of the class Prometheus saw in O(window), gone ones included, as the largest value of O(query)
        over them at each step (C(max) over O(query) with C($node) matching all of them) - for the node templates.
    type: str
    choices: [node, classes]
    default: node
    version_added: 0.1.0
  node:
    description: How Prometheus names the node (the value C($node) is replaced with). Required with O(mode=node).
    type: str
  nodes:
    description: With O(mode=classes), each host and how Prometheus names it (an empty name is the host's).
    type: dict
    default: {}
    version_added: 0.1.0
  class_label:
    description:
      - With O(mode=classes), the label of kube-state-metrics' C(kube_node_labels) whose value is a node's class
        (V(label_karpenter_sh_nodepool)), or the Kubernetes label it exposes (V(karpenter.sh/nodepool),
        V(node.kubernetes.io/instance-type)).
      - Empty - the size class (C(<GiB>gib-<cpus>cpu)) from C(node_memory_MemTotal_bytes), named by its node as the
        default O(query) does, and cAdvisor's C(machine_cpu_cores).
    type: str
    default: ''
    version_added: 0.1.0
  window:
    description: How far back to read, a Go duration or whole days (the role passes C(reservations_history_window)).
    type: str
    default: 3d
  step:
    description: One value per this systemd time span (the role passes the sampler's interval).
    type: str
    default: 1min
  bearer_token:
    description: A bearer token sent as C(Authorization), for a Prometheus behind an authenticating proxy.
    type: str
    default: ''
  username:
    description: A user name for basic authentication.
    type: str
    default: ''
  password:
    description: The password for O(username).
    type: str
    default: ''
  ca_file:
    description: A CA certificate file on the controller that signs Prometheus' certificate.
    type: str
    default: ''
  validate_certs:
    description: Check Prometheus' TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds each request has to answer - connecting, the headers and the whole body together.
    type: int
    default: 30
  max_answer_bytes:
    description:
      - The largest answer read, in bytes or as a Kubernetes quantity (V(16Mi)); a larger one is refused unread and
        the reason says so.
    type: raw
    default: 16777216
    version_added: 0.1.0
'''

EXAMPLES = r'''
- name: Read the node's history from Prometheus
  nodealloc.kubelet.prometheus_history:
    url: http://prometheus.monitoring.svc:9090
    node: "{{ inventory_hostname }}"
  register: from_prometheus

- name: Decide with it where it spans longer than the node's own history
  nodealloc.kubelet.node_reservation_facts:
    prometheus_history: "{{ from_prometheus.history }}"
'''

RETURN = r'''
classes:
  description:
    - With O(mode=classes), each class's history - as RV(history), plus C(class), C(label), C(members) (the nodes of
      the class in the window), C(nodes) (how many had a series) and C(covered_seconds). A step where no node of the
      class ran is not counted against it (no coverage reason, unlike a node's history).
  returned: mode is classes
  type: dict
host_classes:
  description: With O(mode=classes), the class of each host of O(nodes) that Prometheus knows.
  returned: mode is classes
  type: dict
reason:
  description: With O(mode=classes), why no class could be read (or V(null)).
  returned: mode is classes
  type: str
refused:
  description:
    - With O(mode=classes), why nodes were left out of every class - a class label value that is not a Kubernetes
      label value, or a node name that is not a Kubernetes node name - one sentence each (at most 20, then how many
      more). Each is also given as a warning.
  returned: mode is classes
  type: list
  elements: str
history:
  description:
    - What Prometheus gave for the node; pass it to node_reservation_facts' C(prometheus_history).
    - C(samples) (C([time, bytes]) pairs, oldest first), C(span_seconds), C(reason) (why the history cannot be used,
      or V(null)), C(problems) (gaps, a span shorter than the window, warnings), C(url), C(node), C(query) (with the
      node's name in it), C(step_seconds), C(window_seconds).
    - With O(pods_query), C(pods) - C(query) (with the node's name in it), C(samples) (C([time, pods]) pairs at the
      same steps) and C(span_seconds), or V(null) where the pods could not be read (the reason is in C(problems)).
  returned: mode is node
  type: dict
'''
