"""_policy/_pids: the pid recommendation from the node's tasks outside the pods and their history peak, the kubelet's
PID arithmetic beside it, the podPidsLimit x maxPods check, the refusal of a reservation that takes every PID, and that
it is written only with reserve_pids (an upgrade must not restart every kubelet for a resource nobody asked for)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _node_plan, _pids
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1 << 20


def tasks(non_pod, capacity=32768, kubepods=400):
    """A _node/_task_count reading: ``non_pod`` tasks outside the pods of a node of ``capacity`` PIDs."""
    return {'pid_max': capacity, 'threads_max': 192735, 'capacity': capacity, 'tasks_total': non_pod + kubepods + 2,
            'kubepods_tasks': kubepods, 'kubepods_source': 'pids.current', 'measuring_tool_tasks': 2,
            'non_pod_tasks': non_pod, 'available': capacity - non_pod - kubepods - 2, 'problems': []}


@pytest.mark.parametrize('non_pod, peak, expected', [
    (135, None, 1000),  # a bare node: the floor
    (900, None, 1400),  # 1350, up to a hundred
    (900, {'peak_non_pod_tasks': 2001, 'lines': 40}, 3100),  # the history's peak, 3001.5 up to a hundred
    (2400, {'peak_non_pod_tasks': 1000, 'lines': 40}, 3600),  # this reading above the history's peak
])
def test_reserved_is_the_peak_times_the_factor_at_least_the_floor(non_pod, peak, expected):
    result = _pids.recommend(tasks(non_pod), peak, {}, _defaults.EVICTION_HARD, {}, 110)
    assert (result['recommended'], result['quantity']) == (expected, str(expected))
    assert result['system_reserved'] == str(expected) and result['kube_reserved'] is None and not result['written']


def test_the_history_peak_is_two_figures_of_the_lines_that_carry_one():
    lines = [{'t': 1}, {'t': 2, 'non_pod_pids': 700}, {'t': 3, 'non_pod_pids': 1900}, {'t': 4, 'non_pod_pids': 12}]
    assert _pids.history_peak(lines) == {'peak_non_pod_tasks': 1900, 'lines': 3}
    assert _pids.history_peak([{'t': 1}]) == {'peak_non_pod_tasks': None, 'lines': 0}


def test_it_goes_where_today_holds_it():
    only_kube = _pids.recommend(tasks(2000), None, {'kube_reserved': {'pid': '500'}}, {}, {}, 110)
    assert (only_kube['kube_reserved'], only_kube['system_reserved']) == ('3000', None)
    both = _pids.recommend(tasks(2000), None, {'kube_reserved': {'pid': '500'}, 'system_reserved': {'pid': '100'}},
                           {}, {}, 110)
    assert (both['kube_reserved'], both['system_reserved']) == ('500', '2500')


def test_kubepods_pids_max_now_and_with_it_and_the_threshold_reserves_nothing():
    result = _pids.recommend(tasks(2000), None, {'system_reserved': {'pid': '1000'}}, {'pid.available': '10%'}, {}, 110)
    assert result['allocatable_now']['kubepods_pids_max'] == 32768 - 1000
    assert result['allocatable_recommended']['kubepods_pids_max'] == 32768 - 3000
    assert result['allocatable_recommended']['eviction_hard_pid_available'] == 3276


def test_unmeasured_tasks_recommend_nothing_and_say_why():
    reading = dict(tasks(100), non_pod_tasks=None, problems=['kernel.pid_max not read'])
    result = _pids.recommend(reading, None, {}, {}, {}, 110)
    assert result['recommended'] is None and 'kernel.pid_max not read' in result['reason']


@pytest.mark.parametrize('limit, max_pods, over', [(4096, 250, True), (250, 110, False), (None, 110, None),
                                                   (-1, 110, None), (0, 110, None)])
def test_pod_pids_limit_times_max_pods_is_a_warning(limit, max_pods, over):
    config = {} if limit is None else {'podPidsLimit': limit}
    result = _pids.recommend(tasks(500), None, {}, {}, config, max_pods)
    assert result['overcommit'] is over and bool(result['warnings']) == bool(over)
    assert result['refusal'] is None  # the kubelet takes any such sum: never refused


def test_the_sum_counts_the_reservation_of_the_maps_that_will_be_in_force():
    # 290 x 110 = 31,900 pods' PIDs fit 32,768 alone; with 1,000 reserved they do not.
    config = {'podPidsLimit': 290}
    today = _pids.recommend(tasks(500), None, {}, {}, config, 110)  # not written: today's maps, none reserved
    assert today['overcommit'] is False and today['warnings'] == []
    written = _pids.recommend(tasks(500), None, {}, {}, config, 110, write=True)
    assert written['overcommit'] is True and '290 x maxPods 110 + reserved pid 1000 = 32900' in written['warnings'][0]


def test_a_written_reservation_that_takes_every_pid_is_refused_and_the_plan_stops():
    # pid_max 4096 (a small node), 2,600 tasks outside the pods: 3,900 reserved + 5 % threshold (204) >= 4,096.
    result = _pids.recommend(tasks(2600, capacity=4096), None, {}, {'pid.available': '5%'}, {}, 110, write=True)
    assert result['refusal'] and 'would take all 4096' in result['refusal']
    shown = _pids.recommend(tasks(2600, capacity=4096), None, {}, {'pid.available': '5%'}, {}, 110, write=False)
    assert shown['refusal'] is None  # not written: nothing to refuse
    facts = {'recommendation': {'pids': result}, 'decision': {'action': 'increase'}}
    assert _node_plan.pids_refusal(facts, {}, {'action': 'increase'}) == [result['refusal']]
    assert _node_plan.pids_refusal(facts, {}, {'action': 'keep'}) == []
    assert _node_plan.pids_refusal in _node_plan.REFUSAL_SOURCES  # the plan counts it with every other refusal


# --- through _gather.recommend and the decision: the option decides whether it is written ---------------------------
@pytest.fixture
def measured(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=600 * MIB, active_file_bytes=50 * MIB,
                         inactive_file_bytes=300 * MIB)
    cgroup_v2.make_group(root, 'system.slice', anon_bytes=200 * MIB, active_file_bytes=10 * MIB,
                         inactive_file_bytes=90 * MIB)
    options = _gather.with_defaults({'cgroup_root': root, 'kubelet_process_names': ['no/kubelet'],
                                     'runtime_process_names': ['no/runtime'], 'sample_seconds': 0, 'history': False,
                                     'kubelet_config_path': str(tmp_path / 'none.yaml')})
    measurement = _gather.measure(options, sleep=lambda _s: None)
    measurement['pids'] = tasks(2000)
    return options, measurement


def _decided(options, measurement, current):
    measurement = dict(measurement, current=current)
    history = {'basis': None, 'problems': [], 'pids': {'peak_non_pod_tasks': 1800, 'lines': 10}}
    history['basis'] = _gather._headroom.basis([_gather.reading_from(measurement, 'module', 1000.0)], 1000.0, 100.0,
                                               86400, 86400, 7 * 86400)
    _formulas, recommendation, decision = _gather.recommend(options, measurement, history)
    return recommendation, decision


def test_the_reading_records_the_tasks_outside_the_pods(measured):
    _options, measurement = measured
    assert _gather.reading_from(measurement, 'module', 1.0)['non_pod_pids'] == 2000


def test_off_by_default_today_s_maps_are_written_back_and_nothing_moves_for_it(measured):
    options, measurement = measured
    recommendation, _first = _decided(options, measurement, None)
    current = {'kube_reserved': dict(recommendation['kube_reserved']),
               'system_reserved': dict(recommendation['system_reserved'], pid='1000'),
               'eviction_hard': _defaults.EVICTION_HARD}
    recommendation, decision = _decided(options, measurement, current)
    assert recommendation['pids']['recommended'] == 3000
    assert 'pid' not in recommendation['system_reserved']
    assert decision['action'] == 'keep' and decision['pids'] is None
    assert decision['system_reserved']['pid'] == '1000'
    assert any(line.startswith('pid reserved = max(floor 1000, ceil_100(2000 x 1.5)) = 3000')
               for line in recommendation['explanation'])


def test_with_the_option_it_is_written_and_decided_like_memory(measured):
    options, measurement = measured
    options = dict(options, reserve_pids=True)
    recommendation, _first = _decided(options, measurement, None)
    current = {key: {k: v for k, v in recommendation[key].items() if k != 'pid'}
               for key in ('kube_reserved', 'system_reserved')}
    current['system_reserved']['pid'] = '1000'
    current['eviction_hard'] = _defaults.EVICTION_HARD
    recommendation, decision = _decided(options, measurement, current)
    assert recommendation['pids']['written']
    assert decision['pids']['action'] == 'increase' and decision['action'] == 'increase'
    assert decision['system_reserved']['pid'] == '3000' and 'pid' not in decision['kube_reserved']
    assert decision['memory']['action'] == 'keep' and decision['cpu']['action'] == 'keep'


def test_a_pid_decrease_waits_and_a_small_move_keeps():
    current = {'kube_reserved': {}, 'system_reserved': {'pid': '20000'}}
    recommendation = {'kube_reserved': {}, 'system_reserved': {'pid': '1000'}}
    young = _decision.decide(current, recommendation, {}, {'span_seconds': 3600, 'stabilization_seconds': 86400})
    assert young['pids']['action'] == 'keep'
    old = _decision.decide(current, recommendation, {}, {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400})
    assert old['pids']['action'] == 'decrease' and old['system_reserved']['pid'] == '1000'
    small = _decision.decide({'system_reserved': {'pid': '1000'}}, {'kube_reserved': {}, 'system_reserved': {'pid': '1100'}},
                             {}, {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400})
    assert small['pids']['action'] == 'keep' and small['system_reserved']['pid'] == '1000'
