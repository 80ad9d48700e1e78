"""The class model as the report and the templates show it (issue 45 item 5): the chart per class, escaped; the line
under the verdict; the template header; the reason beside a template above the vendor formulas."""

from __future__ import annotations

import random

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _class_model, _model_template
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_classes, _model_chart, _node_templates)

MIB, GIB, DAY = 1 << 20, 1 << 30, 86400


def record(seed, intercept_mib=600, slope_mib=15, days=2, max_pods=110):
    rng = random.Random(seed)
    readings = []
    for index in range(days * 1440):
        pods = 10 + (index // 20) % 50
        readings.append({'t': index * 60, 'pods': pods, 'non_pod_millicores': 100,
                         'non_pod_bytes': int((intercept_mib + slope_mib * pods) * MIB + rng.gauss(0, 4 * MIB))})
    return {'node_class': [8, 2], 'pods_profile': _class_model.profile(readings), 'max_pods': max_pods}


def test_the_view_gives_the_fitted_line_the_envelope_and_eks_at_max_pods_and_keeps_the_envelopes_points():
    records = [record(1), record(2, intercept_mib=700)]
    shown = _model_template.view(records, points=30)
    assert shown['model']['slope_source'] == 'fit' and shown['model']['nodes'] == 2
    assert abs(shown['model']['slope_bytes_per_pod'] - 15 * MIB) < 0.3 * MIB
    assert shown['eks_at_max_pods_bytes'] == (255 + 11 * 110) * MIB
    assert shown['at_max_pods_bytes'] > shown['typical_at_max_pods_bytes']
    assert len(shown['points']) == 30
    # The point that sets the envelope is drawn, however the rest are thinned.
    slope = shown['model']['slope_bytes_per_pod']
    assert max(value - slope * pods for pods, value in shown['points']) >= shown['model']['envelope_bytes'] - slope * 2
    line = _model_template.header_line(shown)
    assert '15.0 MiB a pod (fitted)' in line and 'over 2 node(s)' in line and 'at maxPods 110' in line
    assert _model_template.view([{'pods_profile': None}]) is None


def test_a_class_name_from_a_node_cannot_leave_the_charts_text():
    name = '<script>alert(1)</script>'
    page = _model_chart.charts([{'name': name, 'model': _model_template.view([record(1)])}])
    assert '<script>' not in page and '&lt;script&gt;' in page
    assert page.count('<svg') == 1
    assert _model_chart.charts([{'name': 'x', 'model': None}]) == ''


def test_a_template_above_the_vendor_formulas_says_the_model_is_why_and_its_header_gives_the_model():
    records = [record(1, intercept_mib=1800)]
    node = {'status': 'ok', 'capacity_memory_bytes': 8 * GIB, 'host': 'a',
            'formulas': {'gke': {'reserved_memory_bytes': GIB}}}
    flags = _fleet_classes.template_flags({'system_reserved': {'memory': '3Gi'}}, [node],
                                          _model_template.view(records))
    assert flags and all('why: its nodes\' non-pod memory, every reading moved to maxPods 110' in flag['reason']
                         for flag in flags)
    hosts = {'a': {'facts': {'class_record': records[0]}}}
    header = _node_templates.model_header(hosts, ['a'])
    assert header[0].startswith('# Class model: non-pod memory = ') and 'Sized for maxPods 110' in header[1]
    assert _node_templates.model_header({'a': {'facts': {}}}, ['a']) == []


def test_a_class_name_cannot_leave_the_charts_attribute_either():
    page = _model_chart.charts([{'name': 'x" onmouseover="alert(1)', 'model': _model_template.view([record(1)])}])
    assert 'onmouseover="' not in page and '&quot; onmouseover=&quot;' in page


def test_a_records_absurd_max_pods_does_not_set_the_classs_figure():
    model, max_pods, problems = _model_template.from_records([record(1), dict(record(2), max_pods=1 << 19)])
    assert max_pods == 110 and model is not None
    assert any('max_pods 524288' in problem for problem in problems)
