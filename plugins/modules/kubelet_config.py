#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: kubelet_config
short_description: Change a node's kubelet reservations in its KubeletConfiguration safely, or refuse with a reason
version_added: 0.1.0
description:
  - Sets C(kubeReserved), C(systemReserved), the eviction settings and C(enforceNodeAllocatable) in a
    KubeletConfiguration file, or in a drop-in file of the kubelet's C(--config-dir).
  - Compares semantically (V(1Gi) equals V(1024Mi), V(0.2) equals V(200m)); equal values change nothing.
  - Changes only the keys it is asked to change. YAML stays YAML with every other line and comment kept,
    JSON stays JSON with its key order. Owner, group and mode are kept.
  - Validates the resulting effective configuration (main file plus drop-ins) with the kubelet's own rules,
    against the node's capacity and against what pods use now, before anything is written. See
    C(docs/kubelet_config.md) for every rule and the kubelet source it mirrors.
  - Writes atomically (temporary file in the same directory, fsync, rename, fsync of the directory) under an
    exclusive lock on the directory, so two runs on one node never interleave.
  - The backup (O(backup=true)) is written the same way and is on disk before the file is replaced; a write
    that fails (a full disk) removes it again. Temporary files a killed run left are removed by the next run.
  - Does not restart the kubelet; the C(reservations) role does that, one node at a time.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
options:
  path:
    description:
      - The main KubeletConfiguration file (the kubelet's C(--config)). Always read, and validated as part of the
        effective configuration; written only when O(drop_in_dir) is not set. When it does not exist the module
        fails with "no kubelet config found", in check mode too, before taking any lock.
    type: path
    required: true
  drop_in_dir:
    description:
      - The kubelet's C(--config-dir). When set, the change is written to our own drop-in O(drop_in_name) in this
        directory and the main file is left untouched.
      - Drop-in directories are read by kubelets from 1.28 (alpha, behind C(KUBELET_CONFIG_DROPIN_DIR_ALPHA)) and
        by default from 1.30 (beta). Files ending in C(.conf) are merged in lexical order, so our drop-in must sort
        after any other that sets the same fields; the module refuses when a later one overrides ours.
    type: path
  drop_in_name:
    description: File name of our drop-in in O(drop_in_dir).
    type: str
    default: 50-nodealloc.conf
  state:
    description:
      - V(present) writes the requested settings. V(absent) removes our drop-in (needs O(drop_in_dir)).
    type: str
    choices: [present, absent]
    default: present
  kube_reserved:
    description:
      - C(kubeReserved) resources to set (C(cpu), C(memory), C(ephemeral-storage), C(pid)) as Kubernetes quantities.
      - Merged key by key with what the file has; a null value removes that resource.
    type: dict
  system_reserved:
    description: C(systemReserved) resources to set, like O(kube_reserved).
    type: dict
  eviction_hard:
    description: C(evictionHard) thresholds to set (signal to quantity or percentage), merged key by key.
    type: dict
  eviction_soft:
    description: C(evictionSoft) thresholds to set; each needs a grace period in the result.
    type: dict
  eviction_soft_grace_period:
    description: C(evictionSoftGracePeriod) durations to set (Go durations such as V(1m30s)).
    type: dict
  eviction_minimum_reclaim:
    description: C(evictionMinimumReclaim) amounts to set.
    type: dict
  enforce_node_allocatable:
    description: C(enforceNodeAllocatable) values; replaces the list (compared as a set).
    type: list
    elements: str
  kube_reserved_cgroup:
    description: C(kubeReservedCgroup), needed when C(kube-reserved) is enforced.
    type: str
  system_reserved_cgroup:
    description: C(systemReservedCgroup), needed when C(system-reserved) is enforced.
    type: str
  backup:
    description: Keep a timestamped copy of the file before changing it; its path is returned in RV(backup_file).
    type: bool
    default: false
  validate_against_node:
    description:
      - Check the result against this node's capacity (C(/proc/meminfo), CPU count) and the kubepods cgroup's
        working set now. Turn off only to prepare a file for another machine.
    type: bool
    default: true
  kubepods_margin:
    description:
      - Refuse a change whose new kubepods memory limit is below the kubepods working set now plus this margin
        (a quantity), because the kernel would then reclaim and OOM-kill running pods.
    type: str
    default: 256Mi
  lock_timeout:
    description: Seconds to wait for another run holding the lock on the target directory before failing.
    type: float
    default: 30
  kubepods_cgroup:
    description: The kubepods cgroup, relative to the cgroup root; found as node_reservation_facts finds it by default.
    type: str
  cgroup_root:
    description: Read cgroups from this directory instead of the mounts in C(/proc/self/mountinfo).
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
notes:
  - Reading or writing a YAML file needs PyYAML on the node (C(python3-yaml) on Debian); JSON needs only Python.
    Parsing stays on the node so that the lock, the comparison and the write see the same bytes.
'''

EXAMPLES = r'''
- name: Apply the recommendation to the main config, keeping a backup
  nodealloc.kubelet.kubelet_config:
    path: /var/lib/kubelet/config.yaml
    kube_reserved: "{{ facts.recommendation.kube_reserved }}"
    system_reserved: "{{ facts.recommendation.system_reserved }}"
    backup: true

- name: Write a drop-in instead (kubelet 1.30 or later)
  nodealloc.kubelet.kubelet_config:
    path: /var/lib/kubelet/config.yaml
    drop_in_dir: /etc/kubernetes/kubelet.conf.d
    kube_reserved: {cpu: 80m, memory: 933Mi}

- name: Remove our drop-in
  nodealloc.kubelet.kubelet_config:
    path: /var/lib/kubelet/config.yaml
    drop_in_dir: /etc/kubernetes/kubelet.conf.d
    state: absent
'''

RETURN = r'''
path:
  description: The file written (or that would be written), the main file or our drop-in.
  returned: always
  type: str
backup_file:
  description: The backup made before the change.
  returned: changed and O(backup=true)
  type: str
previous:
  description: Reservation and eviction fields of the effective configuration before the change.
  returned: always
  type: dict
new:
  description: The same fields after the change.
  returned: always
  type: dict
allocatable_before:
  description: Node allocatable (memory, cpu) and kubepods limit with the previous settings.
  returned: when O(validate_against_node=true)
  type: dict
allocatable_after:
  description: The same with the new settings.
  returned: when O(validate_against_node=true)
  type: dict
validation:
  description: The rules checked, each with the source it mirrors; a rule that could not run says why.
  returned: always
  type: list
  elements: str
changed_fields:
  description: The KubeletConfiguration fields whose effective value changes.
  returned: always
  type: list
  elements: str
removed_temporary_files:
  description: Temporary files of an earlier, killed run that this run removed (C(.*.nodealloc.tmp) beside the target).
  returned: when there were any
  type: list
  elements: str
minimal_edit:
  description: False when a YAML file's layout forced a full re-render (comments lost); the content is still exact.
  returned: always
  type: bool
'''

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change as change
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._file_io import directory_lock
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import fail_arguments
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import KUBELET_CONFIG_OPTIONS, NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import check
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._probe import probe_node


def main():
    module = NodeallocModule(argument_spec=KUBELET_CONFIG_OPTIONS, supports_check_mode=True)
    problems = check(module.params)
    if problems:
        module.fail_json(msg='invalid options, nothing written: %s' % '; '.join(problems), problems=problems)
    params = change.string_maps(module.params)
    lock_dir = params['drop_in_dir'] or os.path.dirname(params['path'])
    # Say what is missing before trying to lock a directory that is not there.
    if not os.path.exists(params['path']):
        module.fail_json(msg='no kubelet config found at %s: nothing to change (pass the path of the '
                             "kubelet's --config file)" % params['path'])
    if params['drop_in_dir'] and not os.path.isdir(params['drop_in_dir']):
        module.fail_json(msg='drop_in_dir %s is not a directory: the kubelet reads no drop-ins there' % params['drop_in_dir'])
    try:
        node = probe_node(params) if params['validate_against_node'] else {}
        with directory_lock(lock_dir, params['lock_timeout']):
            decision = change.plan_on_node(params, node)
            backup_file = None
            stale = [] if module.check_mode else change.clean_up(decision)
            if decision['changed'] and not module.check_mode:
                backup_file = change.apply(decision, backup=params['backup'])
    except (NodeallocError, ValueError) as exc:
        module.fail_json(**fail_arguments(exc))

    result = dict(
        changed=decision['changed'],
        path=decision['target'],
        previous=decision['previous'],
        new=decision['new'],
        validation=decision['validation'] + node.get('notes', []),
        changed_fields=decision['changed_fields'],
        minimal_edit=decision['minimal_edit'],
    )
    if backup_file:
        result['backup_file'] = backup_file
    if stale:
        result['removed_temporary_files'] = stale
    if params['validate_against_node']:
        result['allocatable_before'] = decision['allocatable_before']
        result['allocatable_after'] = decision['allocatable_after']
    if module._diff:
        result['diff'] = change.diff(decision)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
