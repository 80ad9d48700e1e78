"""Outputs that travel and compare (issue 46 item 4), on the 500-node fleet: the CSV round-trips to the JSON's figures,
the short summary stays within 20 lines at any size, and the diff of two consecutive reports lists exactly the
changes made between them; recommend.yml and report_merge.yml write the files and print the short summary."""

from __future__ import annotations

import copy
import csv
import datetime
import io
import json

import pytest

from fleet_results import fleet
from test_playbooks import ansible_playbook

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_report, _report_changes, _report_csv, _report_files, _short_summary)

MIB = 1 << 20
NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture(scope='module')
def fleet_500():
    results = fleet(500)
    return results, _fleet_report.build_report(copy.deepcopy(results), now=NOW)


def _json_value(node, column):
    """The JSON report's figure behind a CSV column, read from the JSON's own fields (not through _report_csv)."""
    verdict = node.get('verdict') or {}
    return {
        'capacity_memory_bytes': node.get('capacity_memory_bytes'),
        'capacity_millicores': node.get('capacity_millicores'),
        'non_pod_memory_now_bytes': (node.get('measured') or {}).get('non_pod_memory_bytes'),
        'non_pod_memory_peak_bytes': (node.get('memory_risk') or {}).get('peak_bytes'),
        'reserved_now_memory_bytes': (node.get('current') or {}).get('reserved_memory_bytes'),
        'reserved_now_millicores': node.get('reserved_now_millicores'),
        'recommended_memory_bytes': node.get('recommended_reserved_memory_bytes'),
        'recommended_millicores': node.get('recommended_reserved_millicores'),
        'change_memory_bytes': verdict.get('change_memory_bytes'),
        'change_share': verdict.get('change_share'),
        'history_span_seconds': (node.get('history') or {}).get('span_seconds') if 'measured' in node else None,
    }[column]


def test_the_csv_round_trips_to_the_json_figures_at_500_nodes(fleet_500):
    _results, report = fleet_500
    text = _report_csv.render_csv(report)
    # Through the JSON file, as a user compares the two files.
    nodes = json.loads(_fleet_report.render_json(report))['nodes']
    rows = list(csv.DictReader(io.StringIO(text, newline='')))
    print('CSV at 500 nodes: %d bytes, %d lines' % (len(text.encode('utf-8')), text.count('\r\n')))
    assert [row['host'] for row in rows] == [node['host'] for node in nodes]  # one row per node, the report's order
    compared = dict.fromkeys(_report_csv.NUMERIC, 0)
    for row, node in zip(rows, nodes):
        assert row['status'] == node['status'] and row['risk'] == node['risk'], node['host']
        assert row['class'] == (node.get('template_class') or '')
        assert row['decision'] == (node.get('decision') or '')
        assert row['verdict_action'] == ((node.get('verdict') or {}).get('action') or '')
        for column in _report_csv.NUMERIC:
            expected = _json_value(node, column)
            if expected is None:
                assert row[column] == '', (node['host'], column)
                continue
            # Exact: an int reads back as the same int, a share as the same float.
            assert (float(row[column]) if isinstance(expected, float) else int(row[column])) == expected, (
                node['host'], column)
            compared[column] += 1
    # Every numeric column carried figures (the fixture's measured nodes), not only empty cells.
    assert all(compared[column] > 100 for column in compared if column not in ('change_memory_bytes', 'change_share'))


def _summary_is_short(lines):
    assert len(lines) <= 20, '\n'.join(lines)  # the bound, whatever the module's constant says
    assert not any('\n' in line or '\r' in line for line in lines)


def test_the_short_summary_is_at_most_20_lines_at_5_and_at_500_nodes(fleet_500):
    _results, report = fleet_500
    small = _fleet_report.build_report(fleet(5), now=NOW)
    for each in (small, report):
        lines = _report_files.renderings(each, '/srv/reports/reservations')['short_summary']
        _summary_is_short(lines)
        assert lines[0].startswith('Kubelet reservations, %s: %d nodes' % (each['generated_at'], len(each['nodes'])))
        assert lines[-1].startswith('Full report: /srv/reports/reservations.json')
        for entry in each['classes']:  # one line per class, with its verdict and command
            line = next(line for line in lines if line.startswith('  %s (' % entry['name']))
            verdict = entry.get('verdict') or {}
            assert verdict.get('action', 'no verdict') in line
            assert verdict.get('command') is None or verdict['command'] in line or len(verdict['command']) > 100
    lines = _report_files.renderings(report)['short_summary']
    riskiest = [node['host'] for node in report['nodes'] if node['status'] == 'ok' and node['risk'] != 'ok'][:3]
    start = lines.index('Riskiest nodes:')
    assert [line.split()[0] for line in lines[start + 1:start + 4]] == riskiest
    print('\n'.join(lines))
    print('short summary at 500 nodes: %d lines, at 5 nodes: %d lines' % (
        len(lines), len(_report_files.renderings(small)['short_summary'])))
    # What the job prints for a fleet: the short summary.
    assert _report_files.renderings(report)['text_lines'] == lines


def test_thirty_classes_are_cut_to_the_most_urgent(fleet_500):
    results, _report = fleet_500
    classes = {host: 'class-%02d' % (index % 30) for index, host in enumerate(sorted(results))}
    report = _fleet_report.build_report(copy.deepcopy(results), now=NOW, node_classes=classes)
    assert len(report['classes']) >= 30
    lines = _report_files.renderings(report)['short_summary']
    _summary_is_short(lines)
    shown = [line for line in lines if line.startswith('  class-')]
    more = [line for line in lines if line.startswith('  and ')]
    assert more == ['  and %d more classes (the report\'s class table)' % (len(report['classes']) - len(shown))]
    # The most urgent shown: no class left out is more urgent than one shown.
    names = [line.split()[0] for line in shown]
    ranks = {entry['name']: _short_summary.urgency(entry) for entry in report['classes']}
    assert max(ranks[name] for name in names) <= min(rank for name, rank in ranks.items() if name not in names)


def _memory(text):
    return _quantity.quantity_value(_quantity.parse_quantity(text))


def test_the_diff_of_two_consecutive_reports_lists_exactly_the_changes_made(fleet_500, tmp_path):
    results, first = fleet_500
    previous = tmp_path / 'reservations.json'
    previous.write_text(_fleet_report.render_json(first))
    by_host = {node['host']: node for node in first['nodes']}
    measured = [host for host in sorted(results) if by_host[host]['status'] == 'ok']
    second = copy.deepcopy(results)
    # Remove 3 nodes, add 2 (two more hosts the module measured, from a larger fleet).
    gone = measured[10:13]
    for host in gone:
        del second[host]
    bigger = fleet(502)
    added = sorted(set(bigger) - set(results))
    assert len(added) == 2
    second.update({host: bigger[host] for host in added})
    # Move 5 recommendations: 64 MiB and 20 millicores more, in the system reservation the total is the sum of.
    moved = measured[20:25]
    for host in moved:
        recommendation = second[host]['recommendation']
        recommendation['reserved_memory_bytes'] += 64 * MIB
        recommendation['reserved_millicores'] += 20
    # Flip 2 risks: an exceeded node given a reservation far above its peak (thin or ok now).
    flipped = [host for host in measured[40:] if by_host[host]['risk'] == 'exceeded'
               and (results[host].get('current') or {}).get('system_reserved')][:2]
    assert len(flipped) == 2
    for host in flipped:
        second[host]['current']['system_reserved']['memory'] = '%dMi' % (
            by_host[host]['memory_risk']['peak_bytes'] // MIB * 3)
    report = _report_changes.with_changes(_fleet_report.build_report(second, now=NOW), str(previous))
    changes = report['changes']
    assert changes['compared'] is True and changes['previous_schema_version'] == first['schema_version']
    assert [entry['host'] for entry in changes['nodes_gone']] == gone
    assert [entry['host'] for entry in changes['nodes_added']] == added
    assert [(e['host'], e['memory_change_bytes'], e['millicores_change']) for e in changes['recommendations_moved']] == [
        (host, 64 * MIB, 20) for host in moved]
    now = {node['host']: node for node in report['nodes']}
    assert [(e['host'], e['before'], e['now']) for e in changes['risk_transitions']] == [
        (host, 'exceeded', now[host]['risk']) for host in flipped]
    assert all(now[host]['risk'] != 'exceeded' for host in flipped)
    assert changes['status_changes'] == []
    # A verdict follows from what changed on the node: only the touched nodes' can move.
    assert {entry['host'] for entry in changes['verdict_changes']} <= set(moved) | set(flipped)
    print(_report_changes.headline(changes))
    # Rendered: in the Markdown report before the nodes, in the changes file, in the short summary.
    renderings = _report_files.renderings(report, str(tmp_path / 'reservations'))
    markdown = renderings['markdown']
    assert markdown.index('## Changes since the previous report') < markdown.index('# Each node')
    changes_file = renderings['changes_markdown']
    for host in gone + added + moved + flipped:
        assert host in changes_file
    assert _report_changes.headline(changes) in renderings['short_summary']
    _summary_is_short(renderings['short_summary'])


def test_recommend_writes_the_csv_summary_and_changes_and_compares_with_the_previous_report(tmp_path):
    def run(*extra):
        result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                                  '-e', 'reservations_sample_seconds=0', *extra, check=True)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        return ' '.join(result.stdout.split())  # the YAML callback folds long lines
    run()
    with open(tmp_path / 'reservations.csv', newline='', encoding='utf-8') as handle:
        text = handle.read()
    assert text.endswith('\r\n')  # RFC 4180's line ends, as the csv module wrote them, through Ansible's copy
    rows = list(csv.DictReader(io.StringIO(text, newline='')))
    assert [row['host'] for row in rows] == ['localhost'] and list(rows[0]) == list(_report_csv.FIELDS)
    assert int(rows[0]['capacity_memory_bytes']) == json.loads(
        (tmp_path / 'reservations.json').read_text())['nodes'][0]['capacity_memory_bytes']
    assert len((tmp_path / 'reservations-summary.txt').read_text().splitlines()) <= _short_summary.MAX_LINES
    assert 'No previous report was given' in (tmp_path / 'reservations-changes.md').read_text()
    # Again, against the report the first run wrote (the same file: read before it is written again).
    output = run('-e', 'nodealloc_previous_report=%s' % (tmp_path / 'reservations.json'))
    changes = (tmp_path / 'reservations-changes.md').read_text()
    assert changes.startswith('# Changes since the previous report') and '0 added, 0 gone' in changes
    assert json.loads((tmp_path / 'reservations.json').read_text())['changes']['compared'] is True
    assert 'Changes since ' in output
    # A previous report that is not one: the report is written all the same, and says why it compared nothing.
    (tmp_path / 'broken.json').write_text('{"schema_version": 3, "nodes": [')
    output = run('-e', 'nodealloc_previous_report=%s' % (tmp_path / 'broken.json'))
    assert 'Changes: not compared: previous report %s is not JSON' % (tmp_path / 'broken.json') in output
    assert 'is not JSON' in (tmp_path / 'reservations-changes.md').read_text()


def test_report_merge_writes_every_file_and_prints_the_short_summary(fleet_500, tmp_path):
    _results, report = fleet_500
    (tmp_path / 'reservations-42-1.json').write_text(_fleet_report.render_json(report))
    (tmp_path / 'last-week.json').write_text(_fleet_report.render_json(report))
    run = ansible_playbook('playbooks/report_merge.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                           '-e', 'nodealloc_report_group=42', '-e', 'nodealloc_previous_report=%s' % (
                               tmp_path / 'last-week.json'))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    summary = (tmp_path / 'reservations-42-summary.txt').read_text().splitlines()
    assert len(summary) <= _short_summary.MAX_LINES
    assert summary[-1] == 'Full report: %s.json, .md, .html, .csv, -summary.txt, -changes.md.' % (
        tmp_path / 'reservations-42')
    printed = ' '.join(run.stdout.split())  # the YAML callback folds long lines
    for line in summary:  # the job output prints it
        assert ' '.join(line.split()) in printed
    assert 'Changes since %s: 0 added, 0 gone, 0 recommendations moved.' % report['generated_at'] in summary
    with open(tmp_path / 'reservations-42.csv', newline='', encoding='utf-8') as handle:
        assert handle.read().count('\r\n') == 501  # the header and one row per node
    assert '0 added, 0 gone' in (tmp_path / 'reservations-42-changes.md').read_text()
