"""keep / increase / decrease, and the thresholds that decide."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_sustained, _headroom
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy._decision import decide

MI = 1 << 20
DAY = 86400
NOW = 1796558400.0  # 2026-12-06 12:00 UTC


def history(cpu_m, hours=48.0, live_cpu_m=None, every_seconds=60):
    """The basis of a sampler's history (one reading a minute) at ``cpu_m``, this run's reading last, as _gather makes it.

    ``live_cpu_m``: this run's own reading (the module's 5 s sample), when it differs from the history's.
    """
    count = int(hours * 3600 // every_seconds)
    samples = [{'t': NOW - (count - index) * every_seconds, 'non_pod_bytes': 500 * MI, 'non_pod_millicores': cpu_m}
               for index in range(count)]
    samples.append({'t': NOW, 'non_pod_bytes': 500 * MI,
                    'non_pod_millicores': cpu_m if live_cpu_m is None else live_cpu_m})
    return _headroom.basis(samples, NOW, 100.0, DAY, DAY)


def rec(memory_mi, cpu_m):
    return {'kube_reserved': {'memory': '%dMi' % (memory_mi // 2), 'cpu': '%dm' % (cpu_m // 2)},
            'system_reserved': {'memory': '%dMi' % (memory_mi - memory_mi // 2), 'cpu': '%dm' % (cpu_m - cpu_m // 2)}}


CURRENT = {'kube_reserved': {'memory': '1Gi', 'cpu': '200m'}, 'system_reserved': {'memory': '1Gi'}}


@pytest.mark.parametrize('memory_mi,cpu_m,action', [
    (2048, 200, 'keep'),          # identical
    (2048 + 60, 200, 'keep'),     # +60Mi is within the 64 MiB minimum
    (2048 + 100, 200, 'increase'),  # an increase needs only the minimum: 10% would eat into the headroom
    (2048 - 200, 200, 'keep'),    # -200Mi is within 10% of 2Gi: a decrease needs both
    (2048 + 210, 200, 'increase'),
    (2048 - 210, 200, 'decrease'),
    (2048, 260, 'increase'),      # +60m beyond the 50m minimum, and two days of readings at 300m ask for it
    (2048 - 300, 300, 'increase'),  # any increase wins: under-reservation risks a global OOM
])
def test_actions(memory_mi, cpu_m, action):
    basis = dict(history(300), stabilization_seconds=0)  # memory: no stabilization window to wait for
    assert decide(CURRENT, rec(memory_mi, cpu_m), None, basis)['action'] == action


def test_no_current_reservations_means_increase_with_reasons():
    result = decide(None, rec(512, 100))
    assert result['action'] == 'increase'
    assert result['memory_delta_bytes'] == 512 * MI
    assert any('beyond' in reason for reason in result['reasons'])


def test_thresholds_are_options():
    settings = {'change_threshold_percent': 1, 'change_threshold_min_bytes': 0}
    assert decide(CURRENT, rec(2048 + 100, 200), settings)['action'] == 'increase'


def test_a_decrease_waits_for_the_stabilization_window():
    lower = rec(1024, 200)
    short = {'span_seconds': 3600, 'stabilization_seconds': 86400}
    long_enough = {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400}
    deferred = decide(CURRENT, lower, None, short)
    assert deferred['action'] == 'keep' and any('deferred' in r for r in deferred['reasons'])
    assert decide(CURRENT, lower, None, long_enough)['action'] == 'decrease'
    # Increases never wait.
    assert decide(CURRENT, rec(4096, 200), None, short)['action'] == 'increase'


def test_a_cpu_increase_does_not_carry_an_early_memory_decrease():
    # Seen on a node: the recommendation fell by 1 GiB of memory and rose by 100m of CPU with 10 min of history.
    current = {'kube_reserved': {'memory': '1Gi', 'cpu': '100m', 'ephemeral-storage': '1Gi'},
               'system_reserved': {'memory': '2Gi', 'cpu': '100m'}}
    recommendation = {'kube_reserved': {'memory': '1Gi', 'cpu': '150m'},
                      'system_reserved': {'memory': '1Gi', 'cpu': '150m'}}
    # The CPU rise is sustained (the readings of the last day ask for it); memory's history spans 10 min.
    basis = dict(history(300), span_seconds=600, stabilization_seconds=86400)
    result = decide(current, recommendation, None, basis)
    assert result['memory']['action'] == 'keep'
    assert result['cpu']['action'] == 'increase'
    assert result['action'] == 'increase'
    # What gets written keeps today's memory and takes the new CPU.
    assert result['kube_reserved'] == {'memory': '1Gi', 'cpu': '150m', 'ephemeral-storage': '1Gi'}
    assert result['system_reserved'] == {'memory': '2Gi', 'cpu': '150m'}


def test_a_memory_increase_does_not_carry_an_early_cpu_decrease():
    current = {'kube_reserved': {'memory': '1Gi', 'cpu': '500m'}, 'system_reserved': {}}
    recommendation = {'kube_reserved': {'memory': '2Gi', 'cpu': '100m'}, 'system_reserved': {}}
    result = decide(current, recommendation, None, {'span_seconds': 600, 'stabilization_seconds': 86400})
    assert (result['memory']['action'], result['cpu']['action']) == ('increase', 'keep')
    assert result['kube_reserved'] == {'memory': '2Gi', 'cpu': '500m'}
    # Once the history spans the window, both move.
    settled = decide(current, recommendation, None, {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400})
    assert settled['kube_reserved'] == {'memory': '2Gi', 'cpu': '100m'}


def test_a_small_increase_acts_when_less_than_half_the_headroom_is_left():
    current = {'kube_reserved': {'memory': '1000Mi', 'cpu': '100m'}, 'system_reserved': {}}
    recommendation = {'kube_reserved': {'memory': '1040Mi', 'cpu': '100m'}, 'system_reserved': {},
                      'memory_headroom_bytes': 200 * MI}
    # +40Mi is within the 64 MiB minimum, but 1000Mi leaves 1000 - (1040 - 200) = 160Mi above the need: enough.
    assert decide(current, recommendation)['memory']['action'] == 'keep'
    recommendation['memory_headroom_bytes'] = 60 * MI  # now 1000 - 980 = 20Mi left, less than half of 60Mi
    assert decide(current, recommendation)['memory']['action'] == 'increase'


def test_a_run_that_may_not_decrease_keeps_what_would_fall_and_still_raises():
    # The near-reservation alert's job: memory would fall by 210 MiB (beyond both thresholds), CPU rises by 100m.
    sustained = dict(history(300), stabilization_seconds=0)  # CPU: a day of readings at 300m; memory: no window to wait for
    allowed = decide(CURRENT, rec(2048 - 210, 300), None, sustained)
    assert allowed['memory']['action'] == 'decrease' and allowed['cpu']['action'] == 'increase'
    held = decide(CURRENT, rec(2048 - 210, 300), {'allow_decrease': False}, sustained)
    assert held['action'] == 'increase'
    assert held['memory']['action'] == 'keep' and held['cpu']['action'] == 'increase'
    assert held['kube_reserved']['memory'] == '1Gi' and held['system_reserved']['memory'] == '1Gi'
    assert any('allow_decrease is false' in reason for reason in held['reasons'])
    # Nothing else to do: the whole decision keeps, and a rise still acts.
    assert decide(CURRENT, rec(2048 - 210, 200), {'allow_decrease': False})['action'] == 'keep'
    assert decide(CURRENT, rec(2048 + 210, 200), {'allow_decrease': False})['action'] == 'increase'


# Issue 45 item 7, measured: a third apply.yml minutes after a converged one, on a busy machine, restarted both
# kubelets of a two-node fleet for 'cpu: reserved now 398m leaves -200m above the measured need ... increase to 658m',
# memory unchanged. The module's own 5 s reading was 598m; the history around it was quiet.
CONVERGED = {'kube_reserved': {'memory': '1Gi', 'cpu': '199m'}, 'system_reserved': {'memory': '1Gi', 'cpu': '199m'}}


def recommended(cpu_m=658, memory_mi=2048, headroom_m=60):
    """What _recommend gives for a peak of ``cpu_m - headroom_m`` (598m + max(50m, 10 %) = 658m), memory kept."""
    result = rec(memory_mi, cpu_m)
    result.update(cpu_headroom_millicores=headroom_m, memory_headroom_bytes=768 * MI, settings={'policy': 'measured'})
    return result


def test_a_cpu_increase_on_one_live_sample_with_a_quiet_history_restarts_nothing():
    basis = history(120, live_cpu_m=598)  # two days of one-minute readings at 120m, then this run's 5 s at 598m
    assert basis['non_pod_millicores'] == 598  # the recommendation rests on the live reading: the peak
    result = decide(CONVERGED, recommended(), None, basis)
    assert (result['action'], result['memory']['action'], result['cpu']['action']) == ('keep', 'keep', 'keep')
    assert result['kube_reserved'] == CONVERGED['kube_reserved']
    assert result['system_reserved'] == CONVERGED['system_reserved']
    why = [reason for reason in result['reasons'] if reason.startswith('cpu increase not made')]
    assert why and 'p95 of the 1440 CPU readings over the last 24.0 h = 120m' in why[0]
    assert "this run's reading, 598m, is one of them" in why[0]
    assert 'it asks for 180m against 398m reserved now' in why[0] and 'reconsidered at the next run' in why[0]


@pytest.mark.parametrize('hours,every_seconds,expected', [
    # Ten minutes of history: not yet a reaction time; reconsidered once it spans 0.9 x 24 h from its oldest reading.
    (10 / 60.0, 60, 'the history spans 0.2 h, less than the 24.0 h reaction time, so one short sample cannot show '
                    'the need sustained; reconsidered at the first run after 2026-12-07 09:26 UTC, once the history '
                    'spans 21.6 h'),
    # Two days of the module's own daily readings (no sampler): warm, but two readings cannot show a need sustained.
    (48.0, DAY, 'the last 24.0 h hold 1 CPU reading(s), fewer than the 20 the p95 needs to rest on more than the '
                'highest one; reconsidered at the first run with 20'),
])
def test_a_cpu_increase_on_a_history_too_short_to_judge_is_deferred_with_when(hours, every_seconds, expected):
    result = decide(CONVERGED, recommended(), None, history(598, hours, every_seconds=every_seconds))
    assert (result['action'], result['cpu']['action']) == ('keep', 'keep')
    assert 'cpu increase deferred: CPU is compressible and ' + expected in ' | '.join(result['reasons'])


def test_without_a_history_of_cpu_readings_a_cpu_increase_waits():
    result = decide(CONVERGED, recommended())
    assert result['action'] == 'keep'
    assert any(reason.startswith('cpu increase deferred') for reason in result['reasons'])


@pytest.mark.parametrize('cpu_m,live_cpu_m', [
    (598, 598),  # two days at 598m: the need holds
    (598, 20),   # this run's reading is low; the day's readings still ask for it
])
def test_a_cpu_need_sustained_over_the_history_is_applied(cpu_m, live_cpu_m):
    result = decide(CONVERGED, recommended(), None, history(cpu_m, live_cpu_m=live_cpu_m))
    assert (result['action'], result['memory']['action'], result['cpu']['action']) == ('increase', 'keep', 'increase')
    assert result['kube_reserved'] == {'memory': '1Gi', 'cpu': '329m'}  # the recommendation, memory as it is
    assert any(reason.startswith('cpu increase sustained: p95 of the 1440 CPU readings') for reason in result['reasons'])


def test_a_need_held_for_more_than_5_percent_of_the_day_is_sustained_and_less_is_not():
    def day(busy_minutes):
        samples = [{'t': NOW - (2880 - index) * 60, 'non_pod_bytes': 500 * MI,
                    'non_pod_millicores': 598 if 2880 - index < busy_minutes else 120} for index in range(2881)]
        return _headroom.basis(samples, NOW, 100.0, DAY, DAY)
    # 1440 readings in the last day: p95 is the 1368th, so the 73 highest decide: 72 busy minutes are not enough.
    assert decide(CONVERGED, recommended(), None, day(72))['cpu']['action'] == 'keep'
    assert decide(CONVERGED, recommended(), None, day(73))['cpu']['action'] == 'increase'


def test_a_small_cpu_step_still_needs_the_sustained_need_to_leave_less_than_half_the_headroom():
    # +40m is within the 50m minimum; it acts only when the day's p95 leaves less than half the 60m headroom.
    current = {'kube_reserved': {'memory': '1Gi', 'cpu': '300m'}, 'system_reserved': {'memory': '1Gi'}}
    recommendation = recommended(cpu_m=340)
    assert decide(current, recommendation, None, history(280))['cpu']['action'] == 'increase'  # 20m left
    assert decide(current, recommendation, None, history(270))['cpu']['action'] == 'keep'  # 30m left: half, not less


@pytest.mark.parametrize('memory_mi,memory_action', [(2048 + 256, 'increase'), (2048 - 512, 'decrease')])
def test_memory_decisions_are_unchanged_and_cpu_moves_with_them(memory_mi, memory_action):
    """Memory is not compressible: it acts on one reading as before, and CPU moves with it (one restart either way)."""
    basis = history(120, live_cpu_m=598)
    result = decide(CONVERGED, recommended(memory_mi=memory_mi), None, basis)
    assert (result['memory']['action'], result['cpu']['action']) == (memory_action, 'increase')
    assert result['action'] == 'increase'
    assert result['kube_reserved']['cpu'] == '329m' and result['system_reserved']['cpu'] == '329m'
    # Memory decides as without the CPU rule: the same action, delta and reasons with CPU left as it is.
    alone = decide(CONVERGED, recommended(cpu_m=398, memory_mi=memory_mi), None, basis)
    assert alone['memory'] == result['memory']
    assert [r for r in alone['reasons'] if r.startswith('memory')] == [r for r in result['reasons']
                                                                       if r.startswith('memory')]


def test_a_memory_increase_on_one_reading_still_acts_at_once():
    result = decide(CONVERGED, recommended(cpu_m=398, memory_mi=2048 + 256), None, history(120, hours=0))
    assert (result['action'], result['memory']['action']) == ('increase', 'increase')


def test_a_vendor_formula_s_cpu_rests_on_no_sample_and_is_not_held_back():
    recommendation = dict(recommended(), settings={'policy': 'gke'})
    assert decide(CONVERGED, recommendation, None, history(120, hours=0))['cpu']['action'] == 'increase'


def test_the_sustained_summary_counts_this_run_s_reading_as_one_among_the_last_reaction_time():
    summary = history(120, live_cpu_m=598)['cpu_sustained']
    assert summary == {'percentile': 95.0, 'millicores': 120, 'readings': 1440, 'window_seconds': DAY,
                       'span_seconds': 48 * 3600, 'warm': True, 'reconsider_at': None,
                       'warm_span_seconds': 0.9 * DAY, 'latest_millicores': 598}
    # From MIN_READINGS on the percentile is below the highest reading: one reading alone never sets it.
    few = [{'t': NOW - index, 'non_pod_millicores': 0 if index else 598} for index in range(19, -1, -1)]
    assert _cpu_sustained.summary(few, NOW, DAY, 0.9)['millicores'] == 0
    assert _cpu_sustained.summary(few[1:], NOW, DAY, 0.9)['millicores'] is None
