"""benchmarks/quality.py's measured policy is the shipped module_utils code; its percent rule is issue 29's rule.

With ``memory_headroom_rule: percent`` (the rule before issue 38, now an option), a 3-day window and the 100 MiB
least headroom, the candidate replay (``replay_candidates``: the simple rule, a few lines of its own, unpooled:
issue 38 stopped pooling peaks) and the measured replay (``replay_measured``: _headroom, _recommend and _decision
as the role runs them) must reserve the same at every run of a small trace of two nodes of one class, one quiet
and one that climbs. The jumps rule (the default) is checked in tests/unit/plugins/module_utils/_policy.
"""

from __future__ import annotations

import importlib.util
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB, GIB, DAY = 1 << 20, 1 << 30, 86400


def _quality():
    spec = importlib.util.spec_from_file_location('quality', os.path.join(ROOT, 'benchmarks', 'quality.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _trace(name, level_mib, climb_mib_per_day, seed, days=6, step=300, spike_day=None):
    """A 4 GiB node, a point every ``step`` s: a level, a daily swing, a climb, a burst at a random time each day,
    and on ``spike_day`` a spike of 400 MiB (which the 3-day window lets go of three days later)."""
    rng = random.Random(seed)
    bursts = {day: rng.randrange(0, DAY, step) for day in range(days)}
    times = list(range(0, days * DAY, step))
    memory = []
    for now in times:
        day = now // DAY
        value = level_mib + climb_mib_per_day * now / DAY + 40 * (1 if (now % DAY) > DAY / 2 else 0)
        value += 150 if now - day * DAY == bursts[day] else 0
        value += 400 if day == spike_day and now - day * DAY == DAY // 4 else 0
        memory.append(int(value * MIB))
    return {'name': name, 'mem_total_bytes': 4 * GIB, 'cpus': 2, 'max_pods': 110, 't': times,
            'non_pod_bytes': memory, 'non_pod_millicores': [100] * len(times)}


# The percent rule as issue 29 shipped it: the options issue 38 changed, set back.
PERCENT = {'memory_headroom_rule': 'percent', 'history_window': '3d', 'memory_headroom_min_bytes': 100 * MIB}


def _levels(series, run_times, times):
    return [series[times.index(run)] for run in run_times]


def test_the_measured_replay_reserves_what_the_candidate_rule_does_at_every_run():
    quality = _quality()
    traces = [_trace('quiet', 500, 0, 1, spike_day=1), _trace('climbing', 450, 60, 2)]
    sampler_every, apply_every = 300, DAY
    # Every recommended change applied (no restart threshold): the decision is then the rule's figure itself.
    settings = dict(quality.module_defaults(), change_threshold_percent=0.0, change_threshold_min_bytes=0,
                    change_threshold_min_millicores=0, **PERCENT)
    priors = [quality._vendor_formulas.gke(trace['mem_total_bytes'], trace['cpus'])['reserved_memory_bytes'] for trace in traces]
    candidate = quality.replay_candidates(traces, dict(quality.CANDIDATE, pool=0), sampler_every, apply_every, priors)
    fleet = quality.Fleet(traces, sampler_every, apply_every, settings)
    run_times = list(range(0, 6 * DAY, DAY))
    for index, trace in enumerate(traces):
        shipped, _restarts = quality.replay_measured(trace, sampler_every, apply_every, settings, fleet=fleet,
                                                     trace_index=index)
        expected = _levels(candidate[index][0], run_times, trace['t'])
        assert _levels(shipped, run_times, trace['t']) == expected, trace['name']
    # The rule is not vacuous here: day 0 rests on GKE's 1 GiB, then the peak + 50 % follows the climb.
    assert expected[0] == 1024 * MIB and len(set(expected[1:])) > 2
    # Peaks are no longer pooled (issue 38): the quiet node keeps its own figure, under the climbing one's.
    assert _levels(candidate[0][0], run_times, traces[0]['t']) != expected


def test_at_the_default_thresholds_the_shipped_code_restarts_no_more_often_than_the_rule():
    quality = _quality()
    traces = [_trace('quiet', 500, 0, 1, spike_day=1), _trace('climbing', 450, 60, 2)]
    settings = dict(quality.module_defaults(), **PERCENT)
    priors = [quality._vendor_formulas.gke(trace['mem_total_bytes'], trace['cpus'])['reserved_memory_bytes'] for trace in traces]
    candidate = quality.replay_candidates(traces, dict(quality.CANDIDATE, pool=0), 300, DAY, priors)
    fleet = quality.Fleet(traces, 300, DAY, settings)
    for index, trace in enumerate(traces):
        shipped, restarts = quality.replay_measured(trace, 300, DAY, settings, fleet=fleet, trace_index=index)
        assert len(restarts) <= len(candidate[index][1])
        # Never below the rule's figure by more than the least change worth a restart (64 MiB by default).
        assert all(level >= rule - settings['change_threshold_min_bytes']
                   for level, rule in zip(shipped, candidate[index][0]))
