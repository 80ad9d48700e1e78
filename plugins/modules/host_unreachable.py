#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: host_unreachable
short_description: Count a host that could not be reached as unreachable, without connecting to it
version_added: 0.1.0
description:
  - Returns an unreachable result for the host with O(msg), on the controller. Ansible then counts the host unreachable
    in the recap, removes it from the play, and C(ansible-playbook) exits 4, as when a connection fails.
  - C(playbooks/recommend.yml) measures with C(ignore_unreachable) so that a node it cannot reach stays in the play
    until the report (with a row for that node) is written, even when no node can be reached; this task then gives
    each such node the outcome Ansible gives an unreachable node.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
  - nodealloc.kubelet._attributes.full_check_no_diff
  - nodealloc.kubelet._attributes.on_controller
options:
  msg:
    description: Why the host could not be reached (the failed connection's message).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Measure, going on past a node that cannot be reached
  nodealloc.kubelet.node_reservation_facts:
  register: facts
  ignore_unreachable: true

- name: Count the nodes that could not be reached as unreachable
  nodealloc.kubelet.host_unreachable:
    msg: "{{ facts.msg }}"
  when: facts is unreachable
'''

RETURN = r'''
msg:
  description: O(msg).
  returned: always
  type: str
unreachable:
  description: Always V(true).
  returned: always
  type: bool
'''
