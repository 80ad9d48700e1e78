"""The verdict per node and per class (_report/_verdict, issue 46), and the risk young nodes are read by."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _class_selection, _fleet_report, _memory_risk, _verdict)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

MIB, GIB = 1 << 20, 1 << 30
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
HOUR = 3600.0
WARM_SPAN = 0.9 * 24 * HOUR  # _headroom.WARM_SHARE of the default 24 h reaction time


def node(**changes):
    """A warm 8 GiB, 2-CPU node with a kubelet reserving 1 GiB, using 600 MiB now, deciding keep."""
    base = {'host': 'n1', 'status': 'ok', 'status_reason': None, 'template_class': 'general', 'risk': 'ok',
            'memory_risk': {'category': 'ok', 'reason': 'fine'}, 'margin_bytes': 424 * MIB, 'refusals': [],
            'current': {'reserved_memory_bytes': GIB}, 'measured': {'non_pod_memory_bytes': 600 * MIB},
            'decision': 'keep', 'decision_by_resource': {'memory': 'keep', 'cpu': 'keep'},
            'memory_delta_bytes': 0, 'cpu_delta_millicores': 0, 'capacity_memory_bytes': 8 * GIB,
            'capacity_millicores': 2000, 'cold_start': None,
            'history': {'samples': 2000, 'span_seconds': 7 * 24 * HOUR, 'since': NOW - 7 * 24 * HOUR, 'series': []}}
    base.update(changes)
    return base


def young(**changes):
    """``node`` whose history spans 6 h from its first reading: the cold-start prior holds it."""
    cold = {'floor': 'gke', 'history_span_seconds': 6 * HOUR, 'warm_span_seconds': WARM_SPAN,
            'takes_over_at': NOW - 6 * HOUR + WARM_SPAN, 'raised': True}
    history = {'samples': 72, 'span_seconds': 6 * HOUR, 'since': NOW - 6 * HOUR, 'series': []}
    return node(**dict({'cold_start': cold, 'history': history}, **changes))


INCREASE = {'decision': 'increase', 'decision_by_resource': {'memory': 'increase', 'cpu': 'keep'},
            'memory_delta_bytes': 512 * MIB}
EXCEEDED = {'risk': 'exceeded', 'memory_risk': {'category': 'exceeded', 'reason': 'non-pod memory peaked at 1.2 GiB'},
            'margin_bytes': 100 * MIB}


@pytest.mark.parametrize('case, expected_action, until, command', [
    (node(), 'keep', None, None),
    (node(status='no_kubelet'), 'keep', None, None),
    (node(status='unreachable', status_reason='ssh: connect to host n1 port 22:\n Connection refused'), 'fix', None,
     'ansible-playbook playbooks/recommend.yml --limit n1'),
    (node(status='failed', status_reason='invalid YAML'), 'fix', None, 'ansible-playbook playbooks/recommend.yml --limit n1'),
    (node(refusals=['reservation flags on the command line override the file'], **INCREASE), 'fix', None,
     'ansible-playbook playbooks/recommend.yml --limit n1'),
    (node(current=None, **INCREASE), 'fix', None, 'ansible-playbook playbooks/recommend.yml --limit n1'),
    (node(**INCREASE), 'apply', None, 'ansible-playbook playbooks/apply.yml -e nodealloc_classes=general'),
    (node(decision='decrease', decision_by_resource={'memory': 'decrease', 'cpu': 'keep'},
          memory_delta_bytes=-300 * MIB), 'apply', None, 'ansible-playbook playbooks/apply.yml -e nodealloc_classes=general'),
    # Young, nothing a reading demands: observe until its first reading + 21.6 h (2023-11-15 10:37 UTC).
    (young(), 'observe', '2023-11-15', 'ansible-playbook playbooks/observe.yml --limit n1'),
    (young(**INCREASE), 'observe', '2023-11-15', 'ansible-playbook playbooks/observe.yml --limit n1'),
    # Young, and a reading has passed what it reserves: apply, never observe.
    (young(**dict(INCREASE, **EXCEEDED)), 'apply', None, 'ansible-playbook playbooks/apply.yml -e nodealloc_classes=general'),
    # Young, non-pod memory now above what it reserves (a node reserving nothing): apply.
    (young(margin_bytes=-600 * MIB, risk='not_configured', **INCREASE), 'apply', None,
     'ansible-playbook playbooks/apply.yml -e nodealloc_classes=general'),
    # One reading, no prior: young on the default reaction time, counted from now.
    (node(history={'samples': 1, 'span_seconds': 0, 'series': []}), 'observe', '2023-11-15',
     'ansible-playbook playbooks/observe.yml --limit n1'),
], ids=['keep', 'no-kubelet', 'unreachable', 'failed', 'refused', 'no-config', 'increase', 'decrease', 'young-keep',
        'young-increase', 'young-exceeded', 'young-reserves-less-than-now', 'one-reading'])
def test_node_verdict(case, expected_action, until, command):
    verdict = _verdict.node_verdict(case, NOW)
    assert (verdict['action'], verdict['until'], verdict['command']) == (expected_action, until, command), verdict
    assert set(verdict) == {'action', 'until', 'reason', 'command', 'severity', 'change_memory_bytes', 'change_share',
                            'demanded'}
    assert verdict['reason'] and '\n' not in verdict['reason']
    assert (verdict['severity'] is not None) == (expected_action == 'apply')
    if case['status'] == 'no_kubelet':
        assert verdict['reason'] == 'no kubelet'


def test_a_history_that_stopped_recording_is_observed_from_now_on():
    # Its first reading 10 days ago and 6 h of history: it should have spanned 21.6 h long ago; if it records from
    # now, 15.6 h from now.
    stale = young(cold_start={'floor': 'gke', 'history_span_seconds': 6 * HOUR, 'warm_span_seconds': WARM_SPAN,
                              'takes_over_at': NOW - 10 * 24 * HOUR + WARM_SPAN})
    assert _verdict.node_verdict(stale, NOW)['until'] == _verdict.iso_date(NOW + WARM_SPAN - 6 * HOUR)


@pytest.mark.parametrize('memory_bytes, share, cpu_share, expected', [
    (255 * MIB, 0.0199, 0.0, 'minor'),
    (256 * MIB, 0.0199, 0.0, 'moderate'),  # 256 MiB is no longer minor
    (100 * MIB, 0.02, 0.0, 'moderate'),  # nor is 2 % of the node
    (100 * MIB, 0.01, 0.02, 'moderate'),  # nor 2 % of its CPUs
    (GIB - 1, 0.0999, 0.0, 'moderate'),
    (GIB, 0.05, 0.0, 'major'),
    (100 * MIB, 0.10, 0.0, 'major'),
    (0, 0.0, 0.10, 'major'),
    (-GIB, -0.05, 0.0, 'major'),  # a decrease by its size too
])
def test_severity_edges(memory_bytes, share, cpu_share, expected):
    assert _verdict.severity(memory_bytes, share, cpu_share) == expected


def test_apply_severity_is_the_change_against_the_node():
    verdict = _verdict.node_verdict(node(**INCREASE), NOW)
    assert verdict['change_memory_bytes'] == 512 * MIB and verdict['change_share'] == pytest.approx(1 / 16.0)
    assert verdict['severity'] == 'moderate'
    cpu_only = node(decision='increase', decision_by_resource={'memory': 'keep', 'cpu': 'increase'},
                    memory_delta_bytes=512 * MIB, cpu_delta_millicores=20)
    verdict = _verdict.node_verdict(cpu_only, NOW)
    assert (verdict['change_memory_bytes'], verdict['severity']) == (0, 'minor')  # the memory kept moves nothing


def with_verdict(case):
    return dict(case, verdict=_verdict.node_verdict(case, NOW))


@pytest.mark.parametrize('nodes, action, counts', [
    ([node(), node(host='n2')], 'keep', {'keep': 2}),
    ([node(), young(host='n2')], 'observe', {'keep': 1, 'observe': 1}),
    ([node(**INCREASE), young(host='n2'), node(host='n3', status='failed')], 'fix', {'apply': 1, 'observe': 1, 'fix': 1}),
    ([young(**dict(INCREASE, **EXCEEDED)), node(host='n3', status='failed')], 'apply', {'apply': 1, 'fix': 1}),
    ([node(**INCREASE), young(host='n2')], 'apply', {'apply': 1, 'observe': 1}),
    ([node(status='no_kubelet')], 'keep', {'keep': 1}),
], ids=['keep', 'observe-over-keep', 'fix-over-apply', 'demanded-apply-over-fix', 'apply-over-observe', 'no-kubelet'])
def test_class_folding(nodes, action, counts):
    verdict = _verdict.class_verdict('general', [with_verdict(n) for n in nodes])
    assert verdict['action'] == action, verdict
    assert verdict['nodes_by_action'] == dict(dict.fromkeys(_verdict.ACTIONS, 0), **counts)
    assert verdict['command'] == {
        'keep': None, 'observe': 'ansible-playbook playbooks/observe.yml -e nodealloc_classes=general',
        'apply': 'ansible-playbook playbooks/apply.yml -e nodealloc_classes=general',
        'fix': 'ansible-playbook playbooks/recommend.yml --limit n3'}[action]
    assert (verdict['until'] is not None) == (action == 'observe')


def test_a_young_node_reads_ok_against_its_class_warm_headroom():
    # A young 8 GiB node keeps the cold-start maximum, 2 GiB, as its headroom: with 1.75 GiB (21.9 %) above its peak
    # it read thin. Its class's warm nodes keep 768 MiB and 1 GiB: measured against their median it is ok.
    risk = _memory_risk.memory_risk(3 * GIB, 1280 * MIB, 1000 * MIB, 2 * GIB, 8 * GIB, 100 * MIB)
    assert risk['category'] == 'thin'
    cold = young(memory_risk=risk, risk='thin', template_class='general')
    warm = [node(host='w%d' % i, memory_headroom_bytes=value) for i, value in enumerate((768 * MIB, GIB, 768 * MIB))]
    headrooms = _memory_risk.class_warm_headrooms(warm + [cold])
    assert headrooms == {'general': (768 * MIB, 3)}
    again = _memory_risk.young_node_risk(cold, headrooms)
    assert again['category'] == 'ok' and again['headroom_bytes'] == 768 * MIB, again
    assert 'warm nodes' in again['headroom_source']
    # With no warm node in its class: what the rule gives a warm node without jumps, max(768 MiB, 50 % of the peak).
    settings = {'memory_headroom_rule': 'jumps', 'memory_headroom_percent': 50.0,
                'memory_headroom_min_bytes': 768 * MIB, 'memory_headroom_max_bytes': 2 * GIB}
    alone = _memory_risk.young_node_risk(dict(cold, settings=settings), {})
    assert alone['category'] == 'ok' and alone['headroom_bytes'] == 768 * MIB, alone
    # A warm node, and an exceeded young one, keep their risk.
    assert _memory_risk.young_node_risk(dict(cold, cold_start=None), headrooms)['category'] == 'thin'


@pytest.mark.parametrize('reserved, capacity, flags', [
    (2 * GIB, 16 * GIB, []),
    (2500 * MIB, 16 * GIB, ['above_vendor_formulas']),
    (3 * GIB, 8 * GIB, ['above_vendor_formulas', 'above_node_share']),
    (int(0.25 * 8 * GIB), 8 * GIB, []),  # 25 % exactly is not above it
])
def test_reservation_flags(reserved, capacity, flags):
    formulas = {'gke': {'reserved_memory_bytes': 1800 * MIB}, 'aks-hardened': {'reserved_memory_bytes': 2 * GIB}}
    found = _memory_risk.reservation_flags(reserved, capacity, formulas)
    assert [flag['flag'] for flag in found] == flags
    assert all(flag['reason'] for flag in found)


@pytest.mark.parametrize('value, names', [
    (None, None), ('', None), ([], None), ('alpha', ('alpha',)), (' alpha , beta,', ('alpha', 'beta')),
    (['alpha', 'beta'], ('alpha', 'beta')),
])
def test_selected_classes(value, names):
    assert _class_selection.selected_classes(value) == names


@pytest.mark.parametrize('value', [3, {'alpha': True}, ['alpha', ''], ['a,b'], [None]])
def test_selected_classes_refuses_other_shapes(value):
    with pytest.raises(NodeallocError):
        _class_selection.selected_classes(value)


def test_fleet_report_carries_node_class_and_summary_verdicts():
    report = _fleet_report._report([node(), young(host='n2'), node(host='n3', status='failed', template_class='general')],
                                   None)
    assert report['schema_version'] == 4
    assert report['summary']['verdicts'] == {'general': 'fix'}
    entry = report['classes'][0]
    assert entry['verdict']['nodes_by_action'] == {'apply': 0, 'fix': 1, 'observe': 1, 'keep': 1}
    assert {n['host']: n['verdict']['action'] for n in report['nodes']} == {'n1': 'keep', 'n2': 'observe', 'n3': 'fix'}
