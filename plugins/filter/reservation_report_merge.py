# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: reservation_report_merge
short_description: Merge fleet reservation reports, one per AWX job slice, into one
version_added: 0.1.0
description:
  - Takes a list of report documents (the C(data) of M(nodealloc.kubelet.reservation_report#filter), as written to
    C(reservations*.json)) and returns one report with every node, ordered and rendered as
    M(nodealloc.kubelet.reservation_report#filter) does.
  - Fails when a host appears in two reports or a report has another schema version.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: The report documents to merge.
    type: list
    elements: dict
    required: true
  previous_report:
    description:
      - Path on the controller of the JSON report of an earlier run; the merged report gains C(changes) against it,
        as M(nodealloc.kubelet.reservation_report#filter)'s option of the same name.
    type: path
    version_added: 0.1.0
  report_path:
    description: Where the merged report files are written, without their suffix; the short summary names them.
    type: str
    version_added: 0.1.0
'''

EXAMPLES = r'''
- name: Merge the slice reports written by a sliced job
  ansible.builtin.set_fact:
    report: "{{ slices | nodealloc.kubelet.reservation_report_merge }}"
  vars:
    slices: "{{ query('ansible.builtin.fileglob', 'reports/reservations-slice*.json') | map('ansible.builtin.file') | map('from_json') }}"
'''

RETURN = r'''
_value:
  description: The merged report as C(data), C(json), C(markdown), C(text), C(text_lines), C(html), C(csv),
    C(short_summary), C(short_summary_text) and C(changes_markdown).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_report, _report_changes, _report_files)


def reservation_report_merge(reports, previous_report=None, report_path=None):
    if not isinstance(reports, list) or not all(isinstance(r, dict) for r in reports):
        raise AnsibleFilterError('reservation_report_merge expects a list of report documents')
    if not isinstance(previous_report or '', str) or not isinstance(report_path or '', str):
        raise AnsibleFilterError('reservation_report_merge: previous_report and report_path are paths (strings)')
    try:
        merged = _report_changes.with_changes(_fleet_report.merge_reports(reports), previous_report or None)
        return _report_files.renderings(merged, report_path or None)
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError('reservation_report_merge: %s' % exc) from exc


class FilterModule:
    def filters(self):
        return {'reservation_report_merge': reservation_report_merge}
