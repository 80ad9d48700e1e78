# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: option_problems
short_description: Check options against the collection's ranges, before anything runs on a node
version_added: 0.1.0
description:
  - Checks every option in a dictionary against the type, choices and range the collection's modules enforce
    (percentile in (0, 100], max_reserved_fraction in (0, 1), Go durations, quantities, ...), and returns one
    sentence per problem, naming the option, its value and the rule. Names not known to the collection are skipped,
    unless O(report_unknown) is set.
  - The rules include the form of every value that reaches a systemd unit, an environment file, a URL or a path on
    the node (an absolute path without quotes or whitespace, C(CPUQuota=) as a percentage, an http(s) URL).
  - The C(reservations) role runs it on the controller as its first task, so that a bad option stops the play
    before any task touches a node.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: Options by name, for example the role's variables.
    type: dict
    required: true
  prefix:
    description: A prefix to strip from each name first, such as V(reservations_).
    type: str
    default: ''
  report_unknown:
    description:
      - Also report each name with O(prefix) that is not an option of the C(reservations) role, with the nearest
        option's name (a typo such as V(reservations_percentil)).
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Stop on a bad option before touching any node
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    problems: "{{ {'reservations_percentile': 150} | nodealloc.kubelet.option_problems('reservations_') }}"
'''

RETURN = r'''
_value:
  description: One sentence per problem; empty when every option is acceptable.
  type: list
  elements: str
'''

from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import check


def option_problems(options, prefix='', report_unknown=False):
    return check(dict(options), prefix, report_unknown=report_unknown)


class FilterModule:
    def filters(self):
        return {'option_problems': option_problems}
