#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: node_reservation_facts
short_description: Measure what a Kubernetes node spends outside its pods and recommend kubelet reservations
version_added: 0.1.0
description:
  - Reads C(/proc/meminfo), C(/proc/stat) and the kubepods, C(system.slice), kubelet and container runtime
    cgroups (cgroup v1, hybrid or v2, systemd or cgroupfs driver), samples CPU for O(sample_seconds),
    reads the kubelet's current reservations from its configuration and command line, and recommends
    C(kubeReserved) and C(systemReserved).
  - Non-pod memory is C(MemTotal - MemAvailable - working_set(kubepods)), the working set computed as the
    kubelet (cAdvisor) computes it. Every input and every step of the arithmetic is returned in
    RV(recommendation.explanation).
  - Changes nothing on the node.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
  - nodealloc.kubelet._attributes.INFO_MODULE
  - nodealloc.kubelet._kubelet
  - nodealloc.kubelet._policy
options:
  sample_seconds:
    description:
      - How long to sample CPU use. Longer samples smooth out bursts.
    type: float
    default: 5
  textfile_path:
    description:
      - Also write the figures as Prometheus metrics (C(nodealloc_*)) to this file, for node_exporter's textfile
        collector (for example C(/var/lib/node_exporter/textfile_collector/nodealloc.prom)). Written atomically,
        so the collector never reads half a file; not written in check mode.
    type: path
    version_added: 0.1.0
notes:
  - Reading a YAML kubelet configuration needs PyYAML on the node; a JSON configuration needs only Python 3.
  - C(/proc/meminfo) describes the whole machine; inside a container it is the host's.
  - Outside check mode the reading is appended to the history file (O(history_path)); that bookkeeping is not
    reported as a change.
seealso:
  - name: Reserve Compute Resources for System Daemons
    description: The Kubernetes documentation of kubeReserved, systemReserved and eviction thresholds.
    link: https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/
'''

EXAMPLES = r'''
- name: Measure the node and recommend reservations
  nodealloc.kubelet.node_reservation_facts:
  register: reservation

- name: Show the recommendation with its arithmetic
  ansible.builtin.debug:
    var: reservation.recommendation

- name: A node with a kubelet that runs the cgroupfs driver under a custom root, sampled longer
  nodealloc.kubelet.node_reservation_facts:
    kubepods_cgroup: /kubepods
    sample_seconds: 30
    memory_headroom_percent: 20
'''

RETURN = r'''
capacity:
  description: Node capacity as the kubelet reports it (MemTotal, CPU count).
  returned: always
  type: dict
  sample: {memory: 24552016Ki, cpu: '2'}
memory:
  description: Memory figures in bytes.
  returned: always
  type: dict
  contains:
    mem_total_bytes:
      description: C(MemTotal) from C(/proc/meminfo).
      type: int
    mem_available_bytes:
      description: C(MemAvailable) from C(/proc/meminfo).
      type: int
    kubepods_working_set_bytes:
      description: Working set of the kubepods cgroup (usage minus inactive file pages, at least 0).
      type: int
    non_pod_bytes:
      description: C(mem_total_bytes - mem_available_bytes - kubepods_working_set_bytes), exactly (may be negative).
      type: int
    kube_components_working_set_bytes:
      description: Working set of the kubelet and container runtime cgroups, or their RSS where they share a cgroup.
      type: int
    kubepods:
      description: The kubepods cgroup's usage, inactive_file, working set and the files they came from.
      type: dict
    system_slice:
      description: The same for C(system.slice), or null where it does not exist.
      type: dict
cpu:
  description: CPU figures in millicores over the sample.
  returned: always
  type: dict
  contains:
    capacity_millicores:
      description: CPUs the node offers, times 1000.
      type: int
    node_busy_millicores:
      description: Node busy time from C(/proc/stat) (all but idle and iowait).
      type: int
    kubepods_millicores:
      description: kubepods CPU time (v1 C(cpuacct.usage), v2 C(cpu.stat usage_usec)).
      type: int
    non_pod_millicores:
      description: C(node_busy_millicores - kubepods_millicores), at least 0.
      type: int
    sample_seconds:
      description: The measured length of the sample.
      type: float
cgroup:
  description: The cgroup layout found.
  returned: always
  type: dict
  contains:
    version:
      description: V(v1) (legacy or hybrid) or V(v2).
      type: str
    mode:
      description: V(legacy), V(hybrid) or V(unified).
      type: str
    driver:
      description: V(systemd), V(cgroupfs) or null when no kubepods cgroup exists.
      type: str
    kubepods:
      description: The kubepods cgroup path, or null.
      type: str
kubelet:
  description: The running kubelet (pid, argv) and the config file and drop-in directory read.
  returned: always
  type: dict
current:
  description:
    - Reservations and eviction settings in force, from the config file, its drop-ins and the command line,
      or null when no kubelet configuration was found.
  returned: always
  type: dict
recommendation:
  description: The recommendation, its inputs and its arithmetic.
  returned: always
  type: dict
  contains:
    kube_reserved:
      description: Recommended C(kubeReserved) as Kubernetes quantities.
      type: dict
      sample: {cpu: 80m, memory: 933Mi}
    system_reserved:
      description: Recommended C(systemReserved) as Kubernetes quantities.
      type: dict
    allocatable:
      description: Node allocatable with the recommendation applied (capacity minus reservations minus hard eviction).
      type: dict
    explanation:
      description: Every input and every step of the arithmetic, one line each.
      type: list
      elements: str
decision:
  description: Whether the recommendation is worth applying, from the current reservations and the thresholds.
  returned: always
  type: dict
  contains:
    action:
      description: V(keep), V(increase) or V(decrease).
      type: str
    reasons:
      description: The comparison for memory and CPU, one line each.
      type: list
      elements: str
history:
  description: The history used (path, samples, span in seconds, whether this reading was recorded, problems found).
  returned: always
  type: dict
formulas:
  description: What each vendor formula (gke, aks, aks-legacy, eks, openshift) would reserve on this node, in bytes and millicores.
  returned: always
  type: dict
not_found:
  description: Plain statements of what was looked for and not found on this node.
  returned: always
  type: list
  elements: str
'''

import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts, _file_io, _metrics
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import (
    MissingLibraryError, NodeallocError)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_options import NODE_RESERVATION_FACTS_OPTIONS
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import check


def main():
    module = AnsibleModule(argument_spec=NODE_RESERVATION_FACTS_OPTIONS, supports_check_mode=True)
    problems = check(module.params)
    if problems:
        module.fail_json(msg='invalid options, nothing measured: %s' % '; '.join(problems), problems=problems)
    try:
        facts = _facts.gather(dict(module.params, _check_mode=module.check_mode))
    except MissingLibraryError as exc:
        module.fail_json(msg=missing_required_lib(exc.library, reason=exc.reason))
    except (NodeallocError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    if module.params['textfile_path'] and not module.check_mode:
        try:
            _file_io.write_atomic(module.params['textfile_path'], _metrics.render(facts, time.time()), mode=0o644)
        except NodeallocError as exc:
            module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
