"""benchmarks/quality.py's scoring (issue 29): two tiers in and after warm-up, the bounds, the simple-rule baseline,
--write-decisions, and the trace families of benchmarks/trace_families.py."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUALITY = os.path.join(ROOT, 'benchmarks', 'quality.py')
MIB, GIB, DAY = 1 << 20, 1 << 30, 86400


def _load(name, path):
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved


quality = _load('quality_scoring_under_test', QUALITY)
families = quality.trace_families


def _trace(memory_mib, step=60, **node):
    return dict({'name': 'hand', 'mem_total_bytes': 8 * GIB, 'cpus': 2, 'max_pods': 110},
                t=[index * step for index in range(len(memory_mib))], non_pod_bytes=[value * MIB for value in memory_mib],
                non_pod_millicores=[100] * len(memory_mib), **node)


def test_two_tiers_are_scored_apart_during_and_after_warm_up():
    per_day = DAY // 60
    memory = [500] * (2 * per_day)
    memory[10] = 1050                      # 50 MiB over 1000: exposed, within the 100Mi eviction margin
    memory[20:22] = [1150, 1160]           # 150 and 160 over: dangerous, one event of two points
    memory[per_day - 1:per_day + 1] = [1200, 1200]  # one run across the end of warm-up: an event in both
    memory[per_day + 100] = 1080
    scored = quality.score(_trace(memory), [1000 * MIB] * len(memory), [])
    warm, after = scored['exposed']['warmup'], scored['exposed']['after_warmup']
    assert (warm['points'], warm['events'], warm['worst_mib']) == (4, 3, 200)
    assert (after['points'], after['events'], after['worst_mib']) == (2, 2, 200)
    danger_warm, danger_after = scored['dangerous']['warmup'], scored['dangerous']['after_warmup']
    assert (danger_warm['points'], danger_warm['events']) == (3, 2)
    assert (danger_after['points'], danger_after['events']) == (1, 1)
    assert warm['mib_minutes'] == 50 + 150 + 160 + 200  # one minute a point
    # The node's own eviction margin, when its trace gives one: 200 MiB makes none of them dangerous.
    wide = quality.score(_trace(memory, eviction_hard_bytes=200 * MIB), [1000 * MIB] * len(memory), [])
    assert wide['dangerous']['warmup']['points'] == 0 and wide['dangerous']['after_warmup']['points'] == 0
    # Waste after warm-up only counts the second day.
    assert abs(scored['waste_after_warmup_gib_hours'] - (per_day - 2) * 500 / 1024.0 / 60) < 0.01


def test_the_clairvoyant_daily_bound_holds_each_day_s_own_peak_and_the_best_constant_the_trace_s():
    per_day = DAY // 60
    memory = [400] * per_day + [700] * per_day + [500] * per_day
    memory[per_day // 2] = 900
    trace = _trace(memory)
    series, restarts = quality.replay_clairvoyant_daily(trace)
    assert [series[0], series[per_day], series[2 * per_day]] == [900 * MIB, 700 * MIB, 500 * MIB]
    assert len(restarts) == 3
    constant, _restarts = quality.replay_best_constant(trace)
    assert set(constant) == {900 * MIB}
    daily, flat = quality.score(trace, series, restarts), quality.score(trace, constant, [0])
    assert daily['exposure_samples'] == flat['exposure_samples'] == 0
    assert daily['waste_gib_hours'] < flat['waste_gib_hours']


def test_the_simple_rule_reserves_the_window_s_peak_plus_the_larger_of_100mi_and_its_fraction():
    per_day = DAY // 60
    memory = [2000] * per_day + [600] * (3 * per_day)
    memory[5] = 3000  # day 0's peak, seen by the sampler (a reading a minute)
    trace = _trace(memory)
    readings = quality.sampler_readings(trace, 60)
    one_day, _restarts = quality.replay_simple(trace, 0.1, 1, readings, DAY, prior_bytes=4000 * MIB)
    three_days, _restarts = quality.replay_simple(trace, 0.1, 3, readings, DAY, prior_bytes=0)
    # Day 0: one reading (2000 MiB) + 200 MiB, but the cold-start prior is the floor, as for the measured policy.
    assert one_day[0] == 4000 * MIB and three_days[0] == 2200 * MIB
    # Day 1: the last day's largest reading is 3000 MiB (day 0's burst): + 10 % = 3300 MiB.
    assert one_day[per_day] == 3300 * MIB
    # Day 2: W = 1 day sees only 600 MiB: + 100 Mi (more than 10 %); W = 3 days still holds the 3000 MiB.
    assert one_day[2 * per_day] == 700 * MIB and three_days[2 * per_day] == 3300 * MIB


def test_versus_reads_the_curve_at_the_measured_policy_s_risk_and_waste():
    def entry(risk, waste, dangerous=0, total=None):
        tier = {'points': dangerous, 'events': 0, 'mib_minutes': 0.0, 'worst_mib': 0.0}
        return {'exposed': {'after_warmup': dict(tier, mib_minutes=risk), 'warmup': dict(tier)},
                'dangerous': {'after_warmup': dict(tier, points=dangerous), 'warmup': dict(tier, points=dangerous)},
                'waste_after_warmup_gib_hours': waste, 'waste_gib_hours': total or waste, 'changes': 4}
    policies = {'measured': entry(10.0, 100.0, 1), 'gke': entry(0.0, 500.0, 20), 'clairvoyant-daily': entry(0, 50.0),
                'simple a': entry(0.0, 150.0), 'simple b': entry(8.0, 120.0), 'simple c': entry(30.0, 80.0, 3),
                'simple d': entry(40.0, 90.0, 2)}
    result = quality.versus(policies, node_days=4)
    assert result['simple_waste_at_measured_risk']['name'] == 'simple b'
    assert result['simple_waste_at_measured_risk']['ratio'] == 1.2
    assert result['simple_dangerous_at_measured_waste']['name'] == 'simple d'
    assert result['dangerous_warmup_vs_gke'] == 0.05 and result['waste_vs_clairvoyant'] == 2.0
    assert result['changes_per_node_day'] == 1.0


def test_write_decisions_writes_each_change_in_force_from_its_run(tmp_path):
    traces = tmp_path / 'traces'
    traces.mkdir()
    lines = [json.dumps({'node': {'mem_total_bytes': 8 * GIB, 'cpus': 2, 'max_pods': 110}})]
    for minute in range(4 * 24 * 60):
        # A node whose use steps up by 1200 MiB on day 2 (past 700 MiB + the 768 MiB least headroom): the daily run
        # after it (day 3) raises the reservation.
        memory = (700 if minute < 2 * 24 * 60 + 30 else 1900) * MIB
        lines.append(json.dumps({'t': 1700000000 + 60 * minute, 'non_pod_bytes': memory, 'non_pod_millicores': 100}))
    (traces / 'node-a.jsonl').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    result = subprocess.run([sys.executable, QUALITY, '--json', '--no-simple', '--traces', str(traces),
                             '--write-decisions', str(tmp_path / 'decisions')], cwd=ROOT, capture_output=True,
                            text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stderr
    written = [json.loads(line) for line in (tmp_path / 'decisions' / 'node-a.jsonl').read_text().splitlines()]
    assert set(written[0]) == {'t', 'reserved_memory_bytes', 'reserved_millicores'}
    assert written[0]['t'] == 1700000000  # the first run, at the first point
    assert json.loads(result.stdout)['policies']['measured']['changes'] == len(written)
    # Scored by hand from the file alone, the replay's exposure comes out the same as quality.py's.
    by_time = iter(written[1:] + [{'t': float('inf')}])
    upcoming, in_force, exposed = next(by_time), written[0]['reserved_memory_bytes'], 0
    for line in lines[1:]:
        sample = json.loads(line)
        while sample['t'] >= upcoming['t']:
            in_force, upcoming = upcoming['reserved_memory_bytes'], next(by_time)
        exposed += sample['non_pod_bytes'] > in_force
    assert exposed == json.loads(result.stdout)['policies']['measured']['exposure_samples'] > 0
    assert any(line['t'] == 1700000000 + 3 * DAY for line in written)  # the day-3 run raised it, its own line


def test_the_trace_families_are_deterministic_by_seed_and_eight_nodes_of_4_to_256_gib():
    for family in ('shapes', 'incidents', 'weekly'):
        first = families.family_traces(family, [3], days=1)
        again = families.family_traces(family, [3], days=1)
        other = families.family_traces(family, [4], days=1)
        assert first == again
        assert [t['non_pod_bytes'] for t in first] != [t['non_pod_bytes'] for t in other]
        sizes = [t['mem_total_bytes'] // GIB for t in first]
        assert len(first) == 8 and min(sizes) == 4 and max(sizes) == (128 if family == 'weekly' else 256)
        assert all(t['t'][1] - t['t'][0] == 10 and len(t['t']) == DAY // 10 for t in first)
        assert all(0 < min(t['non_pod_bytes']) and max(t['non_pod_bytes']) < t['mem_total_bytes'] for t in first)


def test_quality_bounds_replays_a_directory_of_traces_with_the_bounds_that_need_no_burst_record(tmp_path):
    written = subprocess.run([sys.executable, QUALITY, '--days', '2', '--seed', '6', '--write-traces', str(tmp_path)],
                             cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert written.returncode == 0, written.stderr
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'benchmarks', 'quality_bounds.py'), '--json',
                             '--traces', str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    bounds = json.loads(result.stdout)
    # The files carry no record of the generator's bursts: the bounds that need one are left out, not guessed.
    assert set(bounds) == {'clairvoyant', 'clairvoyant-daily', 'best-constant', 'gke'}
    assert bounds['clairvoyant-daily']['exposure_samples'] == 0
    assert bounds['clairvoyant-daily']['waste_gib_hours'] <= bounds['best-constant']['waste_gib_hours']


def test_the_clairvoyant_daily_bound_replays_a_history_with_a_day_missing():
    # A node's own history can miss a whole day (the sampler stopped): the day after is still a day of its own.
    trace = _trace([300, 400], step=60)
    trace['t'] += [2 * DAY, 2 * DAY + 60]
    trace['non_pod_bytes'] += [500 * MIB, 600 * MIB]
    trace['non_pod_millicores'] += [100, 100]
    series, restarts = quality.replay_clairvoyant_daily(trace)
    assert series == [400 * MIB, 400 * MIB, 600 * MIB, 600 * MIB] and restarts == [0, 2 * DAY]


def test_the_pooled_candidate_raises_a_node_to_its_class_s_window_peak_and_floors_only_the_first_run():
    per_day = DAY // 60
    quiet = _trace([1000] * (6 * per_day))
    spiky_memory = [1000] * (6 * per_day)
    spiky_memory[per_day + 5] = 3000  # day 1 only: in a 3-day window at the runs of days 2-4
    spiky = _trace(spiky_memory)
    other_class = _trace([500] * (6 * per_day), mem_total_bytes=16 * GIB)
    traces = [quiet, spiky, other_class]
    priors = [4000 * MIB, 4000 * MIB, 0]

    def levels(**spec):
        out = quality.replay_candidates(traces, dict(quality.CANDIDATE, **spec), 60, DAY, priors)
        return [[series[day * per_day] // MIB for day in range(6)] for series, _restarts in out]

    pooled = levels(f=0.5, W=3, m=100, pool=1, prior=1)
    # Day 0 has the prior as its floor; from day 2 the quiet node holds its peer's 3000 MiB + 50 %, while the
    # 3-day window holds it (days 2-4), then falls back to its own 1000 + 50 %.
    assert pooled[0] == [4000, 1500, 4500, 4500, 4500, 1500] and pooled[1] == pooled[0]
    # The other class (16 GiB) is not raised by the 8 GiB nodes, and its prior (none) adds nothing:
    # 500 MiB + max(100 Mi, 250 MiB).
    assert pooled[2] == [750] * 6
    alone = levels(f=0.5, W=3, m=100, pool=0, prior=1)
    assert alone[0] == [4000, 1500, 1500, 1500, 1500, 1500] and alone[1] == pooled[1]
    # Without the prior day 0 is the first reading + 50 %; without the window (W=0) the peak stays for good;
    # m is the floor of the headroom: 500 MiB + 10 % is less than 100 Mi.
    assert levels(f=0.5, W=3, prior=0)[0][0] == 1500
    assert levels(f=0.5, W=0)[0][5] == 4500
    assert levels(f=0.1, W=3, m=100, pool=1)[2][1] == 600


def test_a_candidate_is_read_from_its_settings_and_an_unknown_key_is_refused():
    assert quality.parse_candidate('f=0.4,W=0,pool=0') == dict(quality.CANDIDATE, f=0.4, W=0, pool=0)
    try:
        quality.parse_candidate('f=0.4,window=3')
    except ValueError as exc:
        assert 'window=3' in str(exc)
    else:
        raise AssertionError('an unknown candidate key was accepted')


def _daily_peaks_mib(trace):
    per_day = DAY // (trace['t'][1] - trace['t'][0])
    values = trace['non_pod_bytes']
    return [max(values[day * per_day:(day + 1) * per_day]) / MIB for day in range(len(values) // per_day)]


def test_the_weekly_family_has_its_four_shapes():
    nodes = families.family_traces('weekly', [7], days=10)
    peaks = [_daily_peaks_mib(trace) for trace in nodes]
    # A quiet weekend: two days in a row of the weekly node well under its weekday peaks.
    weekly = peaks[2]
    assert any(weekly[day] < 0.85 * max(weekly) and weekly[day + 1] < 0.85 * max(weekly) for day in range(9))
    # One size class, side by side: the node that never climbs and the one that climbs every day.
    flat, climbing = nodes[4], nodes[5]
    assert (flat['mem_total_bytes'], flat['cpus']) == (climbing['mem_total_bytes'], climbing['cpus'])
    assert max(peaks[4]) - min(flat['non_pod_bytes']) / MIB < 40
    per_day = DAY // 10
    lows = [min(climbing['non_pod_bytes'][day * per_day:(day + 1) * per_day]) / MIB for day in range(10)]
    assert all(peak - low > 250 for peak, low in zip(peaks[5], lows))
    # A flat node's unannounced step stays: the last day's peak over the first day's by 150 MiB or more.
    assert peaks[3][-1] - peaks[3][0] >= 150
    # Bursts of a fixed size on the small nodes: 300-1000 MiB above the node's running level, on a 4 GiB node.
    small = nodes[0]['non_pod_bytes']
    rises = [(b - a) / MIB for a, b in zip(small, small[1:])]
    assert 300 <= max(rises) <= 1050


def test_the_fixed_size_rule_reserves_the_window_s_peak_plus_a_fixed_size_whatever_the_node():
    per_day = DAY // 60
    memory = [2000] * per_day + [600] * (3 * per_day)
    memory[5] = 3000
    trace = _trace(memory)
    result = quality.run([trace], 60, DAY, pool_class=False, simple=True)
    names = [name for name in result['policies'] if name.startswith('fixed ')]
    assert names == [quality.fixed_name(margin, days) for days in (3, 7) for margin in (128, 256, 384, 512, 768, 1024)]
    readings = quality.sampler_readings(trace, 60)
    series, _restarts = quality.replay_simple(trace, 0.0, 7, readings, DAY, 0, 256 * MIB)
    # Day 1 and day 3: the week's peak (3000 MiB, day 0's) + 256 MiB, not a share of it.
    assert series[per_day] == series[3 * per_day] == 3256 * MIB
    # In the operator figures beside the percentage rules and the bound.
    assert {'fixed m=256Mi W=7d', 'simple f=0.5 W=3d', 'clairvoyant-daily'} <= set(result['operator'])


def test_the_excess_over_the_clairvoyant_daily_bound_is_what_is_reserved_above_each_day_s_peak():
    per_day = DAY // 60
    memory = [700] * per_day + [400] * per_day
    trace = _trace(memory)
    scored = quality.score(trace, [1000 * MIB] * len(memory), [])
    # 300 MiB above day 0's peak for 24 h, 600 MiB above day 1's for 24 h.
    assert abs(scored['excess_mib_hours'] - (300 + 600) * 24) < 1
    assert abs(scored['excess_after_warmup_mib_hours'] - 600 * 24) < 1
    # Under a day's peak, no excess (that is exposure, scored apart); the bound itself has none.
    series, restarts = quality.replay_clairvoyant_daily(trace)
    assert quality.score(trace, series, restarts)['excess_mib_hours'] == 0
    low = quality.score(trace, [500 * MIB] * len(memory), [])
    assert abs(low['excess_mib_hours'] - 100 * 24) < 1
    figures = quality.operator({'flat': dict(scored, changes=2)}, node_days=2)
    assert figures['flat']['excess_mib_per_node'] == 450.0  # (300 + 600) x 24 MiB·h over 48 node-hours
    assert figures['flat']['excess_after_warmup_mib_per_node'] == 600.0
    assert figures['flat']['changes_per_node_day'] == 1.0


def test_versus_names_the_least_waste_fixed_size_rule_without_a_dangerous_point():
    def entry(waste, dangerous=0, warmup=0):
        tier = {'points': 0, 'events': 0, 'mib_minutes': 0.0, 'worst_mib': 0.0}
        return {'exposed': {'after_warmup': dict(tier), 'warmup': dict(tier)},
                'dangerous': {'after_warmup': dict(tier, points=dangerous), 'warmup': dict(tier, points=warmup)},
                'waste_after_warmup_gib_hours': waste, 'waste_gib_hours': waste, 'changes': 4}
    policies = {'measured': entry(110.0), 'gke': entry(500.0), 'clairvoyant-daily': entry(50.0),
                'fixed a': entry(60.0, dangerous=3), 'fixed b': entry(70.0, warmup=1), 'fixed c': entry(100.0),
                'fixed d': entry(120.0)}
    best = quality.versus(policies, node_days=4)['best_safe_fixed']
    assert best['name'] == 'fixed c' and best['measured_waste_ratio'] == 1.1


def test_write_decisions_writes_the_baselines_too(tmp_path):
    per_day = DAY // 60
    trace = _trace([700] * per_day + [1300] * per_day)
    decisions = {}
    quality.run([trace], 60, DAY, pool_class=False, simple=True, decisions=decisions)
    quality.write_decisions(decisions, str(tmp_path))
    fixed = [json.loads(line) for line in
             (tmp_path / 'baselines' / 'fixed_m_512Mi_W_7d' / 'hand.jsonl').read_text().splitlines()]
    assert fixed == [{'t': 0, 'reserved_memory_bytes': fixed[0]['reserved_memory_bytes']},
                     {'t': DAY, 'reserved_memory_bytes': (1300 + 512) * MIB}]
    assert (tmp_path / 'hand.jsonl').exists() and (tmp_path / 'baselines' / 'simple_f_0p5_W_3d' / 'hand.jsonl').exists()
