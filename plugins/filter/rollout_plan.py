# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: rollout_plan
short_description: The hosts and batches of apply.yml's rollout, a canary first in each class
version_added: 0.1.0
description:
  - Takes the measured hosts (in play order) and returns the ones whose rollout writes and restarts them (each
    host's C(_reservations_selection.rolls), M(nodealloc.kubelet.class_selection)), with the batch sizes
    C(nodealloc_serial) gives over them.
  - When C(nodealloc_classes) names classes, the hosts come class by class in the order named and the batches are cut
    within each class, so each class starts with its own canary; a percentage is a share of the class's rolling nodes.
    Without a selection the rolling hosts are one group, in play order.
  - Percentages are rounded as Ansible rounds them (down, at least 1); the last item of the list repeats.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: The measured hosts, in play order (C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  selections:
    description: Each host's C(_reservations_selection), in the same order.
    type: list
    elements: dict
    required: true
  serial:
    description: C(nodealloc_serial), in any form M(nodealloc.kubelet.rollout_serial) reads.
    type: raw
    required: true
'''

EXAMPLES = r'''
- name: Plan the rollout's batches
  ansible.builtin.set_fact:
    _nodealloc_rollout: >-
      {{ ansible_play_hosts | nodealloc.kubelet.rollout_plan(ansible_play_hosts | map('extract', hostvars, '_reservations_selection') | list,
         nodealloc_serial | default(1)) }}
'''

RETURN = r'''
_value:
  description: >-
    C({'given', 'hosts', 'serial', 'batches', 'batch_of', 'lines'}): C(nodealloc_serial) read as a list, the rolling
    hosts in rollout order, the batch sizes as integers (the serial play's C(serial)), each batch as C({'class', 'hosts'}) (C(class) null without a selection),
    each host's batch number from 1, and one line per batch for the job output.
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _batches


def rollout_plan(hosts, selections, serial):
    hosts, selections = list(hosts), list(selections)
    if len(hosts) != len(selections) or not all(isinstance(selection, dict) for selection in selections):
        raise AnsibleFilterError('rollout_plan: expects the hosts and one _reservations_selection (a dict) per host')
    try:
        return _batches.plan(hosts, selections, serial)
    except NodeallocError as error:
        raise AnsibleFilterError(str(error))


class FilterModule:
    def filters(self):
        return {'rollout_plan': rollout_plan}
