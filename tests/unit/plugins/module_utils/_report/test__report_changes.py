"""What changed since the previous report: a previous report read defensively (any file a user can point at), and
the comparison by host and by class (issue 46)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _report_changes

MI = 1 << 20


def _node(host, memory=512 * MI, millicores=100, risk='thin', action='apply', status='ok', node_class='8gib-2cpu'):
    return {'host': host, 'status': status, 'risk': risk, 'template_class': node_class,
            'recommended_reserved_memory_bytes': memory, 'recommended_reserved_millicores': millicores,
            'verdict': {'action': action}}


def _report(nodes, version=4, classes=None):
    return {'schema_version': version, 'generated_at': '2026-01-01T00:00:00Z', 'nodes': nodes,
            'classes': classes or []}


def _write(tmp_path, document):
    path = tmp_path / 'previous.json'
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def test_the_current_schema_version_is_readable():
    assert _fleet_report.SCHEMA_VERSION in _report_changes.READABLE_SCHEMA_VERSIONS


@pytest.mark.parametrize('document, reason', [
    ('{"schema_version": 3, "nodes": [', 'is not JSON'),
    ('\xff\xfe', 'is not JSON'),
    ('[' * 100000 + ']' * 100000, 'is not JSON'),  # nesting past the parser's recursion limit
    ('[1, 2]', 'is not a report: a JSON list'),
    (_report([], version=9), 'has schema_version 9, which this collection cannot compare (it reads 2, 3, 4)'),
    (_report([], version='3'), "has schema_version '3'"),
    (_report([], version=True), 'has schema_version True'),
    ({'schema_version': 3}, 'has no list of nodes with a host name each'),
    (_report([{'host': 7}]), 'has no list of nodes with a host name each'),
    (_report([_node('a'), _node('a')]), 'has host a twice'),
    (dict(_report([]), classes={}), 'has classes that are not a list'),
])
def test_a_previous_report_that_is_not_one_is_refused_with_its_reason(tmp_path, document, reason):
    path = _write(tmp_path, document)
    with pytest.raises(ParseError) as raised:
        _report_changes.read_previous(path)
    assert str(raised.value).startswith('previous report %s ' % path) and reason in str(raised.value)


def test_a_missing_or_too_large_file_is_refused(tmp_path):
    with pytest.raises(ParseError, match='cannot be read: No such file or directory'):
        _report_changes.read_previous(str(tmp_path / 'nothing.json'))
    path = _write(tmp_path, _report([_node('node%d' % n) for n in range(200)]))
    with pytest.raises(ParseError, match='is larger than 0 MiB'):
        _report_changes.read_previous(path, max_bytes=1000)
    assert len(_report_changes.read_previous(path)['nodes']) == 200


def test_a_report_built_without_a_readable_previous_one_says_why(tmp_path):
    report = _report_changes.with_changes(_report([_node('a')]), str(tmp_path / 'gone.json'))
    assert report['changes']['compared'] is False and 'cannot be read' in report['changes']['reason']
    assert _report_changes.headline(report['changes']).startswith('Changes: not compared: previous report ')
    assert 'Not compared:' in _report_changes.document(report['changes'])
    assert 'changes' not in _report_changes.with_changes(_report([_node('a')]), None)


def test_each_kind_of_change_is_listed_by_host_and_counted_by_class():
    before = _report([_node('same'), _node('gone'), _node('moved'), _node('risky'), _node('verdict'),
                      _node('broke')], classes=[{'name': '8gib-2cpu', 'nodes': 6, 'verdict': {'action': 'observe'}}])
    now = _report([_node('same'), _node('new', node_class='24gib-2cpu'), _node('moved', 600 * MI, 90),
                   _node('risky', risk='exceeded'), _node('verdict', action='keep'),
                   _node('broke', status='failed', risk='unknown', action='fix', memory=None, millicores=None)],
                  classes=[{'name': '8gib-2cpu', 'nodes': 5, 'verdict': {'action': 'apply'}},
                           {'name': '24gib-2cpu', 'nodes': 1, 'verdict': {'action': 'apply'}}])
    changes = _report_changes.compare(before, now, 'previous.json')
    assert [e['host'] for e in changes['nodes_added']] == ['new']
    assert [e['host'] for e in changes['nodes_gone']] == ['gone']
    moved, = changes['recommendations_moved']
    assert moved == {'host': 'moved', 'class': '8gib-2cpu', 'memory_before_bytes': 512 * MI,
                     'memory_now_bytes': 600 * MI, 'memory_change_bytes': 88 * MI, 'millicores_before': 100,
                     'millicores_now': 90, 'millicores_change': -10}
    assert [(e['host'], e['before'], e['now']) for e in changes['risk_transitions']] == [
        ('broke', 'thin', 'unknown'), ('risky', 'thin', 'exceeded')]
    assert [(e['host'], e['before'], e['now']) for e in changes['verdict_changes']] == [
        ('broke', 'apply', 'fix'), ('verdict', 'apply', 'keep')]
    assert [(e['host'], e['before'], e['now']) for e in changes['status_changes']] == [('broke', 'ok', 'failed')]
    by_class = {entry['name']: entry for entry in changes['classes']}
    assert by_class['8gib-2cpu']['nodes_before'] == 6 and by_class['8gib-2cpu']['nodes_now'] == 5
    assert (by_class['8gib-2cpu']['verdict_before'], by_class['8gib-2cpu']['verdict_now']) == ('observe', 'apply')
    assert by_class['8gib-2cpu']['counts']['nodes_gone'] == 1 and by_class['24gib-2cpu']['counts']['nodes_added'] == 1
    assert _report_changes.headline(changes) == (
        'Changes since 2026-01-01T00:00:00Z: 1 added, 1 gone, 1 status changes, 1 recommendations moved, '
        '2 risk transitions, 2 verdict changes.')
    markdown = '\n'.join(_report_changes.markdown_lines(changes))
    row = next(line for line in markdown.splitlines() if line.startswith('| moved '))
    assert [cell.strip() for cell in row.strip('|').split('|')] == [
        'moved', '8gib-2cpu', '512 MiB', '600 MiB', '+88 MiB', '100m', '90m', '-10m']


def test_a_schema_2_report_is_compared_without_its_risk_words():
    before = _report([_node('a', risk='high')], version=2)
    changes = _report_changes.compare(before, _report([_node('a', risk='exceeded', memory=1024 * MI)]))
    assert changes['risk_compared'] is False and changes['risk_transitions'] == []
    assert changes['counts']['recommendations_moved'] == 1
    assert 'risk not compared (schema 2)' in _report_changes.headline(changes)


def test_the_markdown_lists_at_most_shown_entries_of_a_list():
    before = _report([_node('n%04d' % n) for n in range(250)])
    changes = _report_changes.compare(before, _report([]))
    text = _report_changes.document(changes)
    assert text.count('\n- n') == _report_changes.SHOWN and '... and 150 more' in text
    assert len(changes['nodes_gone']) == 250  # the JSON keeps every one
