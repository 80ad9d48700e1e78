"""The fleet report as CSV: the documented columns, exact figures, no cell a spreadsheet runs as a formula, no value
that adds a row or a column (issue 46)."""

from __future__ import annotations

import csv
import io

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _report_csv

MI = 1 << 20


def _measured(host, **extra):
    node = {'host': host, 'status': 'ok', 'template_class': '8gib-2cpu', 'risk': 'exceeded', 'measured': {
        'non_pod_memory_bytes': 700 * MI}, 'memory_risk': {'peak_bytes': 900 * MI, 'reason': 'peaked above'},
        'capacity_memory_bytes': 8 << 30, 'capacity_millicores': 2000, 'current': {'reserved_memory_bytes': 512 * MI},
        'reserved_now_millicores': 100, 'recommended_reserved_memory_bytes': 1100 * MI,
        'recommended_reserved_millicores': 180, 'decision': 'increase',
        'history': {'source': 'node', 'span_seconds': 86100, 'samples': 288},
        'verdict': {'action': 'apply', 'severity': 'moderate', 'change_memory_bytes': 588 * MI,
                    'change_share': 588 * MI / float(8 << 30), 'reason': 'a reading passed the reservation'}}
    node.update(extra)
    return node


def _read(text):
    return list(csv.DictReader(io.StringIO(text, newline='')))


def test_the_header_is_the_documented_columns_in_order():
    rows = list(csv.reader(io.StringIO(_report_csv.render_csv({'nodes': []}), newline='')))
    assert rows == [list(_report_csv.FIELDS)]
    assert _report_csv.FIELDS[:3] == ('host', 'class', 'status') and _report_csv.FIELDS[-1] == 'reason'


def test_figures_are_the_exact_machine_values():
    node = _measured('node1', verdict={'action': 'apply', 'severity': 'major', 'change_memory_bytes': -3 * MI - 1,
                                       'change_share': -0.1234567890123, 'reason': 'a decrease'})
    row, = _read(_report_csv.render_csv({'nodes': [node]}))
    assert row['capacity_memory_bytes'] == str(8 << 30) and row['reserved_now_millicores'] == '100'
    # A negative number stays a number (no formula guard on it), and a share round-trips to the same float.
    assert row['change_memory_bytes'] == str(-3 * MI - 1)
    assert float(row['change_share']) == -0.1234567890123
    assert row['history_source'] == 'node' and row['history_span_seconds'] == '86100'
    assert row['verdict_action'] == 'apply' and row['reason'] == 'a decrease'


def test_a_node_not_measured_has_empty_figures_and_its_reason():
    unreachable = {'host': 'node2', 'status': 'unreachable', 'risk': 'unknown', 'status_reason': 'no result',
                   'memory_risk': {}}
    row, = _read(_report_csv.render_csv({'nodes': [unreachable]}))
    assert row['status'] == 'unreachable' and row['reason'] == 'no result'
    assert all(row[name] == '' for name in _report_csv.NUMERIC)


@pytest.mark.parametrize('text, cell', [
    ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
    ('+1+2', "'+1+2"), ('-2+3', "'-2+3"), ('@SUM(A1:A2)', "'@SUM(A1:A2)"),
    ('\t=1', "'\t=1"), ('\r=1', "'\r=1"),
    ('a=1', 'a=1'), ("it's fine", "it's fine"), ('', ''),
])
def test_a_text_cell_that_would_start_a_formula_is_guarded(text, cell):
    assert _report_csv.text_cell(text) == cell


def test_hostile_text_stays_in_its_cell_and_reads_back_as_text():
    # Host, class, status and reason come from the inventory, a node's labels and parsers' messages.
    node = _measured('=cmd|\' /C calc\'!A0', template_class='@evil', status='ok',
                     verdict={'action': 'fix', 'reason': 'line one\n=2+3, "quoted"\r\nline three'})
    text = _report_csv.render_csv({'nodes': [node, _measured('node3')]})
    rows = _read(text)
    assert [row['host'] for row in rows] == ["'=cmd|' /C calc'!A0", 'node3']  # no extra row, the guard on
    assert rows[0]['class'] == "'@evil"
    assert rows[0]['reason'] == 'line one\n=2+3, "quoted"\r\nline three'  # the newlines kept, inside the quotes
    assert all(len(row) == len(_report_csv.FIELDS) and None not in row for row in rows)
    # Every text cell is quoted (OWASP), every number bare.
    last = text.split('\r\n')[-2]
    assert last.startswith('"node3","8gib-2cpu","ok",') and ',%d,' % (8 << 30) in last


def test_a_figure_that_is_not_a_number_becomes_an_empty_cell():
    # A report from another version may hold anything there: never text in a number column.
    row, = _read(_report_csv.render_csv({'nodes': [_measured('node4', capacity_millicores='=1+1',
                                                             capacity_memory_bytes=True)]}))
    assert row['capacity_millicores'] == '' and row['capacity_memory_bytes'] == ''


def test_the_documented_columns_are_the_written_ones():
    # docs/reading-the-report.md's table of the CSV's columns is COLUMNS, name, unit and meaning, in order.
    import os
    import re
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), *(['..'] * 5)))
    with open(os.path.join(root, 'docs', 'reading-the-report.md'), encoding='utf-8') as handle:
        section = handle.read().split("### The CSV's columns", 1)[1].split('\n#', 1)[0]
    rows = re.findall(r'^\| `(\w+)` \| ([^|]+) \| (.+) \|$', section, re.M)
    assert [(name, unit.strip(), meaning.strip()) for name, unit, meaning in rows] == list(_report_csv.COLUMNS)
