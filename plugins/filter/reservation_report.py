# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: reservation_report
short_description: Build the fleet reservation report from node_reservation_facts results
version_added: 0.1.0
description:
  - Takes a mapping of host name to the registered result of M(nodealloc.kubelet.node_reservation_facts)
    and returns the report as a dictionary with C(data) (the JSON document), C(json), C(markdown), C(text),
    C(text_lines) (what the job prints with M(ansible.builtin.debug), the whole text for at most three nodes, else the
    short summary), C(html) (a self-contained page with
    a fleet view per node class, a sortable fleet table and one folded section per node with labelled memory, CPU
    and history charts and the config diff apply would write), C(csv) (one row per node, exact figures, every text
    cell quoted and guarded against spreadsheet formulas), C(short_summary) (at most 20 lines, for a chat message or
    a ticket) with C(short_summary_text) (the same as one text) and C(changes_markdown) (what changed since
    O(previous_report)).
  - Memory is printed in MiB/GiB and CPU in millicores in the text, Markdown and HTML; C(data) and C(json) keep exact
    values in unit-suffixed fields (C(*_bytes), C(*_millicores)).
  - Nodes that could not be measured (failed or unreachable) come first, then by risk, closest to a global OOM
    first, then nodes without a kubelet (status V(no_kubelet), nothing to apply).
  - C(data.summary) counts the nodes by status, decision and risk, by history source (C(history_source) - V(node),
    V(prometheus), V(none)) and how many rest on the cold-start floor (C(cold_start_floor)); C(history_sentence) says
    the same in one sentence, the first line of the text and Markdown and the top of the HTML page. Each node's rows
    name its history source and span and, on a cold start, the floor beside the measured figure and when the
    measurement takes over.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description:
      - Mapping of host name to registered module result. A failed result is reported as V(failed), an unreachable
        or missing one as V(unreachable), a dictionary with C(status) (a word other than V(ok)) and C(status_reason)
        (a sentence) with that status and reason.
    type: dict
    required: true
  node_classes:
    description:
      - Host name to the inventory's class name for it (C(nodealloc_node_class)), the name the fleet view groups by, as
        M(nodealloc.kubelet.node_templates#filter) does; an empty name or a missing host takes the size class (memory
        in whole GiB and CPU count).
    type: dict
    default: {}
    version_added: 0.1.0
  previous_report:
    description:
      - Path on the controller of the JSON report of an earlier run (C(reservations.json), schema version 2, 3 or 4).
        The report gains C(changes), listing the nodes added and gone, the status changes, the recommendations moved (memory
        and CPU, by how much), the memory risk transitions and the verdict changes, per node and per class.
      - A file that is missing, larger than 128 MiB, not JSON or of another schema version is not compared; the
        report is built all the same and C(changes) says why (C(compared) false, C(reason)).
    type: path
    version_added: 0.1.0
  report_path:
    description:
      - Where the report files are written, without their suffix (C(reports/reservations)); the short summary's last
        line names the files from it.
    type: str
    version_added: 0.1.0
'''

EXAMPLES = r'''
- name: Build the report
  ansible.builtin.set_fact:
    report: "{{ dict(ansible_play_hosts_all | zip(results)) | nodealloc.kubelet.reservation_report }}"
  vars:
    results: "{{ ansible_play_hosts_all | map('extract', hostvars) | map(attribute='facts', default={}) }}"
'''

RETURN = r'''
_value:
  description: The report as C(data), C(history_sentence), C(json), C(markdown), C(text), C(text_lines), C(html),
    C(csv), C(short_summary), C(short_summary_text) and C(changes_markdown).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_report, _report_changes, _report_files)


def reservation_report(results, node_classes=None, previous_report=None, report_path=None):
    if not isinstance(results, dict) or not isinstance(node_classes or {}, dict):
        raise AnsibleFilterError('reservation_report expects a mapping of host to result (and one of host to class '
                                 'name), got %s' % type(results).__name__)
    if not isinstance(previous_report or '', str) or not isinstance(report_path or '', str):
        raise AnsibleFilterError('reservation_report: previous_report and report_path are paths (strings)')
    report = _fleet_report.build_report(dict(results), node_classes=dict(node_classes or {}))
    return _report_files.renderings(_report_changes.with_changes(report, previous_report or None), report_path or None)


class FilterModule:
    def filters(self):
        return {'reservation_report': reservation_report}
