"""The verdict on the 500-node fleet (tests/integration/fleet_results.py) and on a healthy fleet (issue 46)."""

from __future__ import annotations

import copy
import datetime

import fleet_results
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _class_selection, _fleet_report

NOW = datetime.datetime(2026, 1, 5, 6, 0, tzinfo=datetime.timezone.utc)


def test_every_class_has_one_verdict_and_its_command_restarts_no_node_it_says_to_observe():
    results = fleet_results.fleet(500)
    report = _fleet_report.build_report(results, NOW)
    assert report['summary']['verdicts'] == {entry['name'].replace(' ', '_'): entry['verdict']['action']
                                             for entry in report['classes']}
    for entry in report['classes']:
        verdict = entry['verdict']
        assert verdict['action'] in ('apply', 'observe', 'keep', 'fix')
        assert (verdict['command'] is None) == (verdict['action'] == 'keep'), entry['name']
        assert sum(verdict['nodes_by_action'].values()) == entry['nodes']
    by_class = {}
    for node in report['nodes']:
        by_class.setdefault(node.get('template_class') or 'not measured', []).append(node)
        assert node['verdict']['action'] in ('apply', 'observe', 'keep', 'fix')
    assert {name: len(nodes) for name, nodes in by_class.items()} == {e['name']: e['nodes'] for e in report['classes']}
    # The class's apply command (apply.yml -e nodealloc_classes=CLASS, through _class_selection) restarts exactly the
    # nodes whose verdict is apply: none the report says to observe, keep or fix.
    for entry in report['classes']:
        if entry['verdict']['action'] != 'apply':
            continue
        rolled = {host for host, result in results.items()
                  if _class_selection.selection(host, result, None, entry['name'], NOW.timestamp())['rolls']}
        applied = {node['host'] for node in by_class[entry['name']] if node['verdict']['action'] == 'apply'}
        assert rolled == applied, (entry['name'], sorted(rolled ^ applied)[:5])
        observed = {node['host'] for node in by_class[entry['name']] if node['verdict']['action'] == 'observe'}
        assert observed and not rolled & observed


def healthy(results):
    """Only the warm nodes with a kubelet config, each already reserving what the module recommends for it."""
    out = {}
    for host, result in results.items():
        recommendation = result.get('recommendation') or {}
        if (not result.get('current') or result.get('failed') or recommendation.get('cold_start')
                or not (result.get('kubelet') or {}).get('config_path')):
            continue
        result = copy.deepcopy(result)
        result['current'].update(kube_reserved=dict(recommendation['kube_reserved']),
                                 system_reserved=dict(recommendation['system_reserved']))
        result['decision'] = _decision.decide(result['current'], recommendation, (result.get('decision') or {}).get(
            'settings'), result.get('basis'))
        result.pop('plan', None)  # planned again by the report from the decision above
        out[host] = result
    return out


def test_a_healthy_fleet_reads_keep_and_ok():
    fleet = healthy(fleet_results.fleet(500))
    assert len(fleet) > 100
    report = _fleet_report.build_report(fleet, NOW)
    assert 'keep' in report['summary']['verdicts'].values(), report['summary']
    assert report['summary']['risk'].get('ok', 0) == len(fleet), report['summary']['risk']


def test_the_fleet_chart_names_and_counts_each_class_as_the_what_to_do_table_does():
    """Issue 46 found one class named '8 GiB, 2 CPUs / 157' in the chart and '8gib-2cpu / 160' in the table."""
    report = _fleet_report.build_report(fleet_results.fleet(500), NOW)
    page = _fleet_report.render_html(report)
    chart = page[page.index('aria-label="fleet"'):]
    chart = chart[:chart.index('</svg>')]
    for entry in report['classes']:
        plotted = sum(1 for node in report['nodes'] if node.get('template_class') == entry['name']
                      and node['status'] == 'ok')
        if not plotted:
            continue
        count = '%d nodes' % entry['nodes'] if plotted == entry['nodes'] else '%d of %d nodes' % (plotted,
                                                                                                  entry['nodes'])
        assert '>%s</text>' % entry['name'] in chart and '>%s</text>' % count in chart, (entry['name'], count)
    assert 'GiB, 2 CPUs' not in chart
