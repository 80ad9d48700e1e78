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


def test_unmeasured_nodes_first_then_closest_to_oom():
    report = _report.build_report({
        'roomy': result(GI, current_memory='3Gi'),
        'tight': result(2 * GI, current_memory='1Gi'),
        'broken': {'failed': True, 'msg': 'boom'},
        'gone': {},
    }, now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    assert [n['host'] for n in report['nodes']] == ['broken', 'gone', 'tight', 'roomy']
    assert [n['status'] for n in report['nodes']] == ['failed', 'unreachable', 'ok', 'ok']
    assert report['nodes'][0]['error'] == 'boom'
    assert report['nodes'][2]['margin_bytes'] == -GI and report['nodes'][2]['risk'] == 'high'
    assert report['nodes'][3]['risk'] == 'low'  # 3Gi reserved, 1Gi used
    assert report['summary']['status'] == {'failed': 1, 'unreachable': 1, 'ok': 2}
    assert report['generated_at'] == '2026-01-01T00:00:00Z'
    json.loads(_report.render_json(report))


def test_config_diff_is_what_the_kubelet_config_merge_writes():
    # kubeReserved keeps its ephemeral-storage key (map keys merge one by one) and an equal quantity keeps its text.
    current = {'kube_reserved': {'memory': '1Gi', 'ephemeral-storage': '1Gi'}, 'system_reserved': {'cpu': '0.5'}}
    recommended = {'kube_reserved': {'memory': '1024Mi', 'cpu': '100m'},
                   'system_reserved': {'memory': '512Mi', 'cpu': '500m'}}
    diff = _report.config_diff(current, recommended, '/var/lib/kubelet/config.yaml')
    assert diff[:2] == ['--- /var/lib/kubelet/config.yaml (now)', '+++ /var/lib/kubelet/config.yaml (apply)']
    assert [line for line in diff[3:] if line[:1] in '+-'] == ['+  cpu: 100m', '+  memory: 512Mi']
    assert '   memory: 1Gi' in diff and '   ephemeral-storage: 1Gi' in diff and "   cpu: '0.5'" in diff
    assert _report.config_diff(current, {'kube_reserved': {'memory': '1024Mi'}, 'system_reserved': {'cpu': '500m'}}) == []


def test_merged_slices_equal_one_report_of_all_hosts():
    results = {'a': result(GI, current_memory='3Gi'), 'b': result(2 * GI, current_memory='1Gi'),
               'c': {'failed': True, 'msg': 'boom'}}
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    slices = [_report.build_report({'a': results['a'], 'c': results['c']}, now), _report.build_report({'b': results['b']}, now)]
    whole = _report.build_report(results, now)
    assert json.loads(_report.render_json(_report.merge_reports(slices, now))) == json.loads(_report.render_json(whole))


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
    lines = _report.render_text_lines(report)
    assert '\n'.join(lines) == text and not any('\n' in line for line in lines)


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
