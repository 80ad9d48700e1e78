"""keep / increase / decrease, and the thresholds that decide."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy._decision import decide

MI = 1 << 20


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
    (2048, 260, 'increase'),      # +60m beyond the 50m minimum
    (2048 - 300, 300, 'increase'),  # any increase wins: under-reservation risks a global OOM
])
def test_actions(memory_mi, cpu_m, action):
    assert decide(CURRENT, rec(memory_mi, cpu_m))['action'] == action


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
    result = decide(current, recommendation, None, {'span_seconds': 600, 'stabilization_seconds': 86400})
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
    allowed = decide(CURRENT, rec(2048 - 210, 300))
    assert allowed['memory']['action'] == 'decrease' and allowed['cpu']['action'] == 'increase'
    held = decide(CURRENT, rec(2048 - 210, 300), {'allow_decrease': False})
    assert held['action'] == 'increase'
    assert held['memory']['action'] == 'keep' and held['cpu']['action'] == 'increase'
    assert held['kube_reserved']['memory'] == '1Gi' and held['system_reserved']['memory'] == '1Gi'
    assert any('allow_decrease is false' in reason for reason in held['reasons'])
    # Nothing else to do: the whole decision keeps, and a rise still acts.
    assert decide(CURRENT, rec(2048 - 210, 200), {'allow_decrease': False})['action'] == 'keep'
    assert decide(CURRENT, rec(2048 + 210, 200), {'allow_decrease': False})['action'] == 'increase'
