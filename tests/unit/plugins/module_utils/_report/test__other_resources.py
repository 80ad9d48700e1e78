"""ephemeral-storage and pid beside memory and CPU in every rendering of the report (issue 47: "the report shows PID
and disk beside memory and CPU"), from the recommendation the policy builds."""

from __future__ import annotations

import html

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _ephemeral_storage, _pids
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _other_resources, _printed
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._report.test__fleet_report import GI, MI, result

DISK = {'filesystem': {'capacity_bytes': 50 * GI, 'available_bytes': 30 * GI, 'free_bytes': 31 * GI,
                       'used_bytes': 19 * GI, 'path': '/var/lib/kubelet'},
        'kubelet_root_dir': {'path': '/var/lib/kubelet', 'non_pod_bytes': 40 * MI, 'complete': True},
        'logs': {'path': '/var/log', 'non_pod_bytes': 24 * MI, 'journal_bytes': 8 * MI, 'complete': True,
                 'same_filesystem': True},
        'image_filesystem': {'path': '/var/lib/containerd', 'separate': False},
        'non_pod_bytes': 64 * MI, 'complete': True, 'problems': []}
# The shape _policy/_pids.recommend returns (its allocatable figures are _node_allocatable.compute_pids's).
PIDS = {'recommended': 1000, 'quantity': '1000', 'non_pod_tasks': 410, 'peak_non_pod_tasks': 612,
        'kube_reserved': None, 'system_reserved': '1000',
        'allocatable_now': {'capacity': 4194304, 'kube_reserved': 0, 'system_reserved': 0, 'absolute': 4194304},
        'allocatable_recommended': {'capacity': 4194304, 'kube_reserved': 0, 'system_reserved': 1000,
                                    'absolute': 4193304},
        'warnings': ['podPidsLimit 65536 x maxPods 110 = 7,208,960 exceeds the 4,193,304 PIDs pods may have'],
        'written': True, 'reason': None}


def _facts(**recommendation):
    facts = result(2 * GI, current_memory='1Gi', kubelet_pid=1)
    facts['recommendation'].update(recommendation)
    return facts


def _node(**recommendation):
    return _fleet_report.build_report({'node1': _facts(**recommendation)})['nodes'][0]


def test_each_resource_gives_its_use_reservation_allocatable_and_whether_apply_writes_it():
    disk = _ephemeral_storage.recommend(DISK, {'kube_reserved': {}, 'system_reserved': {}}, {'nodefs.available': '10%'})
    node = _node(ephemeral_storage=disk, pids=PIDS)
    assert _other_resources.rows(node) == [
        ('ephemeral-storage', '64 MiB', '0 MiB', '1.00 GiB', '45.00 GiB \u2192 44.00 GiB',
         'no: reserve_ephemeral_storage is false'),
        ('pid', '612', '0', '1,000', '4,194,304 \u2192 4,193,304', 'yes')]
    assert _other_resources.warnings(node) == ['pid: ' + PIDS['warnings'][0]]


def test_a_resource_not_measured_says_why_and_an_older_result_gives_no_row():
    unmeasured = _ephemeral_storage.recommend(None, {}, {})
    assert _other_resources.rows(_node(ephemeral_storage=unmeasured))[0][1:] == (
        '-', '-', '-', '-', 'no: the kubelet\'s filesystem was not measured: no measurement')
    assert _other_resources.rows(_node()) == []


def test_a_disk_walk_stopped_at_a_limit_shows_its_use_as_a_lower_bound():
    disk = _ephemeral_storage.recommend(dict(DISK, complete=False), {}, {})
    assert _other_resources.rows(_node(ephemeral_storage=disk))[0][1] == 'at least 64 MiB'


def test_text_markdown_html_and_the_job_output_show_both_beside_memory_and_cpu():
    disk = _ephemeral_storage.recommend(DISK, {}, {}, write=True)
    report = _fleet_report.build_report({'node1': _facts(ephemeral_storage=disk, pids=PIDS)})
    text = _fleet_report.render_text(report)
    assert 'used outside the pods' in text and '4,194,304 \u2192 4,193,304' in text
    assert 'pid: podPidsLimit 65536 x maxPods 110' in text
    markdown = _fleet_report.render_markdown(report)
    assert '| ephemeral-storage |' in markdown and '| pid ' in markdown
    page = html.unescape(_fleet_report.render_html(report))
    assert '<td>ephemeral-storage<td>64 MiB<td>0 MiB<td>1.00 GiB<td>50.00 GiB \u2192 49.00 GiB<td class="w">yes' in page
    assert '<td>pid<td>612<td>0<td>1,000' in page
    screen = ' '.join(' '.join(_printed.node_screen(report['nodes'][0])).split())
    assert ('Disk (ephemeral-storage): 64 MiB used outside the pods, 0 MiB reserved now, 1.00 GiB recommended, '
            'allocatable 50.00 GiB \u2192 49.00 GiB; written: yes.') in screen
    assert 'PIDs (pid): 612 used outside the pods, 0 reserved now, 1,000 recommended' in screen


def test_values_from_the_node_are_escaped_in_the_page():
    hostile = dict(PIDS, warnings=['<script>alert(1)</script>'], recommended=None, reason='<b>x</b>')
    page = _fleet_report.render_html(_fleet_report.build_report({'node1': _facts(pids=hostile)}))
    assert '<script>alert(1)' not in page and '<b>x</b>' not in page
    assert '&lt;script&gt;' in page


def test_the_pid_policys_own_recommendation_gives_its_row():
    measured = {'pid_max': 4194304, 'threads_max': 62000, 'capacity': 62000, 'tasks_total': 900, 'available': 61100,
                'kubepods_tasks': 480, 'measuring_tool_tasks': 2, 'non_pod_tasks': 418, 'problems': []}
    found = _pids.recommend(measured, None, {'kube_reserved': {}, 'system_reserved': {}}, {}, {'podPidsLimit': 1024},
                            110, write=False)
    assert _other_resources.rows(_node(pids=found)) == [
        ('pid', '418', '0', '1,000', '62,000 \u2192 61,000', 'no: reserve_pids is false')]
    assert _other_resources.warnings(_node(pids=found)) == ['pid: ' + text for text in found['warnings']]
    assert found['warnings']  # 1,024 x 110 pods is beyond the 62,000 PIDs


def test_the_job_output_gives_a_resource_not_measured_its_reason_alone():
    unmeasured = _ephemeral_storage.recommend({'problems': ["the kubelet's root dir /var/lib/kubelet does not exist"]},
                                              {}, {})
    report = _fleet_report.build_report({'node1': _facts(ephemeral_storage=unmeasured, pids=PIDS)})
    screen = ' '.join(' '.join(_printed.node_screen(report['nodes'][0])).split())
    assert ("Disk (ephemeral-storage): not measured: the kubelet's filesystem was not measured: the kubelet's root dir "
            "/var/lib/kubelet does not exist.") in screen
    assert 'PIDs (pid): 612 used outside the pods' in screen
