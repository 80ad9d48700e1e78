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
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quality  # noqa: E402  (benchmarks/quality.py: the generator, the GKE formula and the scoring)


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


# cap-known's climbs: the climb rule the shipped policy had before issue 29 (the largest climb to a new peak within
# a reaction time), kept here as this bound's own arithmetic.
def _sliding_max_before(times, values, window):
    """For each i: max of values[j] with times[i] - window <= times[j] <= times[i]."""
    queue, result = collections.deque(), []
    for index, value in enumerate(values):
        while queue and values[queue[-1]] <= value:
            queue.pop()
        queue.append(index)
        while times[queue[0]] < times[index] - window:
            queue.popleft()
        result.append(values[queue[0]])
    return result


# A history with fewer readings than this per reaction time (the role's own daily readings without the
# sampler) cannot show how use climbs within it: spot readings a reaction time apart are not climbs.
_MIN_READINGS_PER_REACTION = 10


def start_slack(times, reaction_seconds):
    """How far a climb's start may sit from a whole reaction time of history on either side, or None.

    Readings rarely fall on the exact second a whole reaction time from the history's ends (the
    sampler's clock, the module's own reading at run time): one sampling interval, the median gap
    between readings. None when that gap is more than a tenth of the reaction time (fewer than
    ``_MIN_READINGS_PER_REACTION`` readings per reaction time): too sparse to measure climbs.
    """
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    if not gaps:
        return None
    gap = gaps[len(gaps) // 2]
    return gap if gap <= reaction_seconds / float(_MIN_READINGS_PER_REACTION) else None


def largest_jump(times, values, reaction_seconds, window_seconds, slack=None):
    """The largest climb above the running peak within ``reaction_seconds``, and how many windows it rests on.

    Returns (jump, windows) where windows is the count of whole reaction times the history spans;
    (None, 0) when it spans fewer than two (one to establish a peak, one to climb past it); (None, windows)
    when the readings are too sparse or none lies where a climb can start (``start_slack``; pass ``slack``
    when it is already known for these times).
    """
    if len(times) < 2 or times[-1] - times[0] < 2 * reaction_seconds:
        return None, 0
    if slack is None:
        slack = start_slack(times, reaction_seconds)
    if slack is None:
        return None, int((times[-1] - times[0]) // reaction_seconds)
    before = _sliding_max_before(times, values, window_seconds)
    # Forward max over (t, t + reaction]: a second pass with a deque over indices in time order.
    after = [None] * len(values)
    queue = collections.deque()
    right = 0
    for index in range(len(values)):
        while right < len(values) and times[right] <= times[index] + reaction_seconds:
            while queue and values[queue[-1]] <= values[right]:
                queue.pop()
            queue.append(right)
            right += 1
        while queue and queue[0] <= index:
            queue.popleft()
        after[index] = values[queue[0]] if queue else None
    jump = None
    for index, time_value in enumerate(times):
        # A start counts when one reaction time of history lies before it (the peak it climbs from is one
        # the node has shown over a whole reaction time, as at every run but the first) and one after it,
        # each to within one sampling interval.
        if time_value + reaction_seconds > times[-1] + slack:
            break
        if time_value - times[0] < reaction_seconds - slack or after[index] is None:
            continue
        jump = max(jump or 0, after[index] - before[index])
    windows = int((times[-1] - times[0]) // reaction_seconds)
    return jump, windows


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
        climb, _windows = largest_jump(times[:cut], level[:cut], reaction, 7 * DAY)
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
