"""What the generated traces allow a daily-applied policy at best: reference policies no node could run.

Usage: python benchmarks/quality_bounds.py [--json] [--days D] [--seed S[,S...]] [--traces DIR | --family F]

They reserve the GKE formula on day 0 (as the measured policy's cold-start prior does), but for the one that
says otherwise, and change once a day, at the same times as the measured policy's runs; all are scored by
benchmarks/quality.py's own score():

  clairvoyant: each day, exactly the largest non-pod memory of that day (every 5-s point): zero exposure with
      the least waste a daily change allows;
  cap-known: each day, from the 1-min samples so far (as the sampler records them), the peak of the level
      (a rolling median over +-30 min, which a log burst does not move) + its largest climb within a day
      + the generator's own log-burst cap (5 % of memory, at most 1 GiB), never less than the peak + 100 MiB.
      It knows what no policy can: how large a burst can get.
  burst-covering: each day, that day's largest non-pod memory without its log bursts (the generator's own
      components, known in advance) + the log-burst cap: the least a daily reservation can be and still hold
      a burst of any size the generator makes, whenever it comes;
  burst-covering-from-day-0: the same on day 0 too, with no cold-start prior at all.
  clairvoyant-daily (quality.py's own, as it scores every run): each day, day 0 too, exactly that day's peak;
  best-constant (quality.py's own): the trace's peak all along, the best constant per node in hindsight.

--traces DIR (nodes' own histories, as quality.py --traces reads them) and --family (benchmarks/
trace_families.py) know nothing of the bursts: only clairvoyant, clairvoyant-daily, best-constant and gke run.

If burst-covering wastes more than 0.5x GKE's, no policy applied daily that starts from GKE's reservation
on day 0 (the measured policy's prior) and holds every burst the generator can make, whenever it comes,
meets the waste target on these traces, whatever it knows of the days ahead. It bounds nothing for a
policy that holds only the bursts that do come (the clairvoyant one).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quality  # noqa: E402  (benchmarks/quality.py: the generator, the GKE formula and the scoring)

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _headroom_policy  # noqa: E402

DAY, MIB, GIB = quality.DAY, quality.MIB, quality.GIB
SAMPLER_STEP_SECONDS = 60
LEVEL_HALF_WINDOW_SECONDS = 1800


def _rolling_median(times, values, half):
    result = []
    for time_value in times:
        low, high = bisect.bisect_left(times, time_value - half), bisect.bisect_right(times, time_value + half)
        window = sorted(values[low:high])
        result.append(window[len(window) // 2])
    return result


def _daily(trace, reserve_for_day, prior_on_day_0=True):
    """A series holding reserve_for_day(d) over day d, GKE's over day 0 (with ``prior_on_day_0``); the restarts."""
    first = 1 if prior_on_day_0 else 0
    reserves = [quality.replay_formula(trace, 'gke')[0][0]] if prior_on_day_0 else []
    reserves += [reserve_for_day(day) for day in range(first, int((trace['t'][-1] - trace['t'][0]) // DAY) + 1)]
    series = [reserves[int((t - trace['t'][0]) // DAY)] for t in trace['t']]
    restarts = [trace['t'][0] + day * DAY for day, value in enumerate(reserves) if day == 0 or value != reserves[day - 1]]
    return series, restarts


def clairvoyant(trace):
    memory, start = trace['non_pod_bytes'], trace['t'][0]
    by_day = {}
    for t, value in zip(trace['t'], memory):
        day = int((t - start) // DAY)
        by_day[day] = max(by_day.get(day, 0), value)
    return _daily(trace, lambda day: by_day[day])


def cap_known(trace):
    step = max(1, int(SAMPLER_STEP_SECONDS // quality.GENERATED_STEP_SECONDS))
    times, values = trace['t'][::step], trace['non_pod_bytes'][::step]
    level = _rolling_median(times, values, LEVEL_HALF_WINDOW_SECONDS)
    cap = trace['log_burst_cap_bytes']

    def reserve(day):
        cut = bisect.bisect_right(times, times[0] + day * DAY)
        # Climbs within a day need two days of history; on day 1, climbs within half a day, doubled.
        reaction, scale = (DAY, 1) if day > 1 else (DAY / 2, 2)
        climb, _windows = _headroom_policy.largest_jump(times[:cut], level[:cut], reaction, 7 * DAY)
        return int(max(max(values[:cut]) + 100 * MIB, max(level[:cut]) + (climb or 0) * scale + cap))
    return _daily(trace, reserve)


def burst_covering(trace, prior_on_day_0=True):
    start, by_day = trace['t'][0], {}
    for t, value, burst in zip(trace['t'], trace['non_pod_bytes'], trace['log_burst_bytes']):
        day = int((t - start) // DAY)
        by_day[day] = max(by_day.get(day, 0), value - burst)
    return _daily(trace, lambda day: by_day[day] + trace['log_burst_cap_bytes'], prior_on_day_0)


POLICIES = (('clairvoyant', clairvoyant), ('cap-known', cap_known), ('burst-covering', burst_covering),
            ('burst-covering-from-day-0', lambda trace: burst_covering(trace, prior_on_day_0=False)),
            ('clairvoyant-daily', quality.replay_clairvoyant_daily), ('best-constant', quality.replay_best_constant),
            ('gke', None))
# What needs the generator's own record of its log bursts (quality.py's generated traces only).
NEEDS_BURSTS = ('cap-known', 'burst-covering', 'burst-covering-from-day-0')


def run(traces):
    result = {}
    known_bursts = all('log_burst_bytes' in trace for trace in traces)
    for name, policy in POLICIES:
        if name in NEEDS_BURSTS and not known_bursts:
            continue
        total = {'exposure_samples': 0, 'exposure_after_warmup': 0, 'waste_gib_hours': 0.0, 'changes': 0}
        for trace in traces:
            series, restarts = policy(trace) if policy else quality.replay_formula(trace, 'gke')
            scored = quality.score(trace, series, restarts)
            for key in total:
                total[key] += scored[key]
        result[name] = total
    for entry in result.values():
        entry['waste_gib_hours'] = round(entry['waste_gib_hours'], 1)
        entry['waste_vs_gke'] = round(entry['waste_gib_hours'] / result['gke']['waste_gib_hours'], 2)
    return result


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--days', type=int, help='length of generated traces (7 for quality, 10 for the others)')
    parser.add_argument('--seed', default='1')
    parser.add_argument('--family', choices=('quality',) + tuple(quality.trace_families.FAMILIES), default='quality')
    parser.add_argument('--traces', help='every *.jsonl in this directory, as quality.py --traces reads them')
    args = parser.parse_args(argv)
    try:
        traces = quality.load_traces(args)
    except quality.TraceError as exc:
        parser.error(str(exc))
    if not traces:
        parser.error('no *.jsonl traces in %s' % args.traces)
    result = run(traces)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, entry in result.items():
            print('%-25s exposure after warm-up %6d  waste %8.1f GiB·h (%.2fx GKE)  changes %d'
                  % (name, entry['exposure_after_warmup'], entry['waste_gib_hours'], entry['waste_vs_gke'],
                     entry['changes']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
