# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: quantity_value
short_description: The numeric value of a Kubernetes quantity string
version_added: 0.1.0
description:
  - Parses a Kubernetes C(resource.Quantity) (V(1Gi), V(500m), V(1e3)) exactly as apimachinery does and returns
    its value, so that two spellings of one amount compare equal (V(1Gi) and V(1024Mi)).
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: The quantity string.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Compare allocatable memory whatever its spelling
  ansible.builtin.assert:
    that: (node.status.allocatable.memory | nodealloc.kubelet.quantity_value) == (expected | nodealloc.kubelet.quantity_value)
'''

RETURN = r'''
_value:
  description: The value, an integer when whole, else a float.
  type: raw
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._quantity import parse_quantity


def quantity_value(text):
    try:
        value = parse_quantity(str(text))
    except ValueError as exc:
        raise AnsibleFilterError('quantity_value: %s' % exc)
    return int(value) if value == value.to_integral_value() else float(value)


class FilterModule:
    def filters(self):
        return {'quantity_value': quantity_value}
