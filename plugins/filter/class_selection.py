# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: class_selection
short_description: Whether the class selector nodealloc_classes lets a run write and restart a node
version_added: 0.1.0
description:
  - Takes a node's M(nodealloc.kubelet.node_reservation_facts) result and returns its class (the name the report and
    the node templates use, that is the inventory's C(nodealloc_node_class), else the size class C(<GiB>gib-<cpus>cpu)), whether
    C(nodealloc_classes) selects it, its verdict's action (as the report gives it) and whether the rollout writes and
    restarts it (C(rolls)).
  - With no selection (null, empty) C(rolls) is the plan's; with one, a node rolls only when its class is selected
    and its verdict is apply, so C(playbooks/apply.yml -e nodealloc_classes=CLASS), the command the report gives for a
    class, restarts exactly the nodes the report says to apply.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: The node's node_reservation_facts result (with its C(plan)).
    type: dict
    required: true
  host:
    description: The inventory hostname.
    type: str
    required: true
  inventory_class:
    description: The host's C(nodealloc_node_class); empty for the size class.
    type: str
  classes:
    description: C(nodealloc_classes), a list of class names or a comma-separated string; null or empty for every class.
    type: raw
'''

EXAMPLES = r'''
- name: Select the node by its class
  ansible.builtin.set_fact:
    _reservations_selection: >-
      {{ _reservations_facts | nodealloc.kubelet.class_selection(inventory_hostname, nodealloc_node_class | default(''),
         nodealloc_classes | default(none)) }}
'''

RETURN = r'''
_value:
  description: C({'class', 'selected', 'action', 'rolls', 'names'}); C(names) is the selection as a list, null for every class.
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _class_selection


def class_selection(facts, host, inventory_class=None, classes=None):
    if not isinstance(facts, dict):
        raise AnsibleFilterError('class_selection: expects a node_reservation_facts result, got %s' % type(facts).__name__)
    try:
        return _class_selection.selection(host, facts, inventory_class, classes)
    except NodeallocError as error:
        raise AnsibleFilterError(str(error))


class FilterModule:
    def filters(self):
        return {'class_selection': class_selection}
