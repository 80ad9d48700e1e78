"""benchmarks/quality_bounds.py: the reference policies hold what their docstring says, on a short generated set."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOUNDS = os.path.join(ROOT, 'benchmarks', 'quality_bounds.py')


def bounds(*args):
    result = subprocess.run([sys.executable, BOUNDS, '--json'] + list(args), cwd=ROOT, capture_output=True, text=True,
                            check=False, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_burst_covering_bounds_run_and_are_never_exposed():
    # Two days, two seeds: twelve nodes, a log burst every three hours on each. By construction (the day's level
    # without its bursts, plus the cap, above every point of the day), so what this checks is that the recorded burst
    # share is consistent with the trace: never more than what the generator added at that point.
    result = bounds('--days', '2', '--seed', '3,4')
    assert result['burst-covering']['exposure_after_warmup'] == 0, result
    assert result['burst-covering-from-day-0']['exposure_samples'] == 0, result


def _quality_bounds():
    """benchmarks/quality_bounds.py as a module; its ``quality`` attribute is benchmarks/quality.py (the generator)."""
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location('quality_bounds_under_test', BOUNDS)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # it puts benchmarks/ on sys.path to import quality
        return module
    finally:
        sys.path[:] = saved


def test_the_burst_covering_reservation_lies_between_the_day_s_peak_and_the_peak_plus_the_cap():
    quality_bounds = _quality_bounds()
    quality = quality_bounds.quality
    # A 4 GiB node: few pods, so a log burst (up to 5 % of memory) is often what sets a day's peak.
    trace = quality.generated_trace(4, 2, 10, 4, random.Random(11))
    series, _restarts = quality_bounds.burst_covering(trace)
    from_day_0, _restarts = quality_bounds.burst_covering(trace, prior_on_day_0=False)
    per_day = 86400 // quality.GENERATED_STEP_SECONDS
    gke = quality.replay_formula(trace, 'gke')[0][0]
    assert set(series[:per_day]) == {gke} and gke not in from_day_0[:per_day]
    assert series[per_day:] == from_day_0[per_day:]  # the same from day 1 on
    below_peak_plus_cap = 0
    for day in (0, 1, 2, 3):
        peak = max(trace['non_pod_bytes'][day * per_day:(day + 1) * per_day])
        reserved = from_day_0[day * per_day]
        assert set(from_day_0[day * per_day:(day + 1) * per_day]) == {reserved}  # one reservation a day
        assert peak <= reserved <= peak + trace['log_burst_cap_bytes']
        # Below the day's peak + the cap wherever that peak was a burst on top of the level, not the level itself.
        below_peak_plus_cap += reserved < peak + trace['log_burst_cap_bytes']
    assert below_peak_plus_cap


def test_the_generator_records_a_burst_only_where_it_adds_one():
    # The bound subtracts the recorded burst share from each point: recorded where there is none, or larger than the
    # burst, it would lower the level and flatter the bound; recorded nowhere, it would count bursts twice.
    quality = _quality_bounds().quality
    trace = quality.generated_trace(16, 4, 40, 2, random.Random(7))
    bursts, cap = trace['log_burst_bytes'], trace['log_burst_cap_bytes']
    assert len(bursts) == len(trace['non_pod_bytes'])
    with_burst = [index for index, value in enumerate(bursts) if value]
    # A burst about every 3 h lasting about 45 s: a few hundredths of the points at most, and some on two days.
    assert 0 < len(with_burst) < 0.02 * len(bursts)
    assert max(bursts) <= cap and min(bursts) >= 0
    # Where one is recorded the CPU shows it too: the generator adds 250m for every point of a burst.
    quiet = [cpu for cpu, burst in zip(trace['non_pod_millicores'], bursts) if not burst]
    loud = [trace['non_pod_millicores'][index] for index in with_burst]
    assert sum(loud) / len(loud) - sum(quiet) / len(quiet) > 150
    # And the level under a burst carries on from the point before it (a burst is at least 16 MiB; the noise is 4).
    memory = trace['non_pod_bytes']
    steps = sorted(memory[index] - bursts[index] - (memory[index - 1] - bursts[index - 1]) for index in with_burst
                   if not bursts[index - 1])
    assert steps and abs(steps[len(steps) // 2]) < 8 * (1 << 20), steps
