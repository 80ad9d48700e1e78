# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: rollout_serial
short_description: nodealloc_serial checked and read as Ansible's serial list
version_added: 0.1.0
description:
  - Reads C(nodealloc_serial) in any of the forms an operator gives it (a number, a percentage, a list of them from
    JSON extra variables, or the text of an AWX survey field, a comma-separated list such as V(1,5,10%,25%)) and returns
    it as Ansible's C(serial) list, or fails naming the first item that is not a whole number of nodes >= 1 or a whole
    percentage from 1 % to 100 %.
  - C(playbooks/apply.yml) calls it in its first play, so a bad value stops the run before any node is touched.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: C(nodealloc_serial).
    type: raw
    required: true
'''

EXAMPLES = r'''
- name: Check nodealloc_serial before any node is touched
  ansible.builtin.assert:
    that: nodealloc_serial | default(1) | nodealloc.kubelet.rollout_serial | length > 0
'''

RETURN = r'''
_value:
  description: The batch sizes, integers and C(N%) strings, as the C(serial) keyword takes them (V([1, 5, '10%'])).
  type: list
  elements: raw
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _batches


def rollout_serial(value):
    try:
        return _batches.serial_items(value)
    except NodeallocError as error:
        raise AnsibleFilterError(str(error))


class FilterModule:
    def filters(self):
        return {'rollout_serial': rollout_serial}
