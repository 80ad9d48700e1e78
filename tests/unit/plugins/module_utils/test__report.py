"""The fleet report: schema, risk order, and what a failed node looks like."""

from __future__ import annotations

import datetime
import json

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _decision, _recommend, _report

GI = 1 << 30


def result(non_pod_bytes, current_memory=None):
    measured = dict(mem_total_bytes=8 * GI, mem_available_bytes=8 * GI - non_pod_bytes,
                    kubepods_working_set_bytes=0, kube_components_working_set_bytes=0,
                    capacity_millicores=2000, non_pod_millicores=100, kube_components_millicores=0)
    current = None
    if current_memory:
        current = {'kube_reserved': {'memory': current_memory}, 'system_reserved': {},
                   'eviction_hard': {'memory.available': '100Mi'}, 'enforce_node_allocatable': ['pods']}
    recommendation = _recommend.recommend(measured, None, current)
    return {
        'decision': _decision.decide(current, recommendation),
        'capacity': {'memory': '8Gi', 'cpu': '2'},
        'memory': {'non_pod_bytes': non_pod_bytes, 'kubepods_working_set_bytes': 0},
        'cpu': {'non_pod_millicores': 100, 'sample_seconds': 5.0},
        'cgroup': {'version': 'v1', 'mode': 'legacy', 'driver': 'systemd', 'kubepods': '/kubepods.slice'},
        'kubelet': {'config_path': '/var/lib/kubelet/config.yaml' if current else None},
        'current': current,
        'recommendation': recommendation,
        'not_found': [],
    }


def test_nodes_are_sorted_closest_to_oom_first():
    report = _report.build_report({
        'roomy': result(GI, current_memory='3Gi'),
        'tight': result(2 * GI, current_memory='1Gi'),
        'broken': {'failed': True, 'msg': 'boom'},
    }, now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    assert [n['host'] for n in report['nodes']] == ['tight', 'roomy', 'broken']
    assert report['nodes'][0]['margin_bytes'] == -GI
    assert report['nodes'][2]['status'] == 'failed' and report['nodes'][2]['error'] == 'boom'
    assert report['generated_at'] == '2026-01-01T00:00:00Z'
    json.loads(_report.render_json(report))


def test_renderings_show_every_row_and_say_what_was_not_found():
    report = _report.build_report({'node': result(GI)})
    text = _report.render_text(report)
    markdown = _report.render_markdown(report)
    for label in ('capacity', 'current kubeReserved', 'measured non-pod usage', 'recommended kubeReserved',
                  'recommended systemReserved', 'allocatable (recommended)'):
        assert label in text and label in markdown
    assert 'current reservations unknown' in text
    assert 'decision: increase' in text and '**Decision: increase.**' in markdown  # nothing reserved yet
    assert '1024Mi' in text or '1Gi' in text


def test_text_and_markdown_show_pressure_as_evidence():
    facts = result(512 * 1024 * 1024)
    facts['pressure'] = {'node': {'cpu': {'some': {'avg10': 12.5, 'avg60': 3.0, 'avg300': 1.25, 'total_usec': 9}}},
                         'cgroups': {}, 'note': 'cgroup v1 has no per-cgroup pressure files'}
    report = _report.build_report({'node1': facts})
    assert 'pressure (PSI) node: cpu some 12.50% (10 s) 1.25% (5 min)' in _report.render_text(report)
    assert '- cgroup v1 has no per-cgroup pressure files' in _report.render_markdown(report)
def test_the_overcommit_audit_reaches_the_text_and_markdown(tmp_path):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils import _cgroup, _overcommit
    from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', 0, 0, 0, memory_max=str(4 * GI))
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-pod1.slice', 0, 0, 0, memory_max=str(3 * GI))
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice', 0, 0, 0)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice', 0, 0, 0,
                         memory_max=str(3 * GI))
    node = dict(result(GI), overcommit=_overcommit.audit(_cgroup.layout_from_root(root), 'kubepods.slice'))
    report = _report.build_report({'node': node})
    assert report['nodes'][0]['overcommit']['limits_to_kubepods_percent'] == 150.0
    assert 'kubepods would need 150.0 % of its limit' in _report.render_text(report)
    assert '**Overcommit:** 2 pods (0 without a memory limit)' in _report.render_markdown(report)
