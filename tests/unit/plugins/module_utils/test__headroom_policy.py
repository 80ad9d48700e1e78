"""Headroom from jumps to a new peak, the cold-start prior, and the sampler's near-reservation flag."""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _formulas, _headroom_policy, _recommend

MIB, GIB = 1 << 20, 1 << 30
HOUR, DAY = 3600, 86400


def samples(values_mib, step=60):
    return [{'t': index * step, 'non_pod_bytes': value * MIB, 'non_pod_millicores': 100}
            for index, value in enumerate(values_mib)]


def test_a_leak_jumps_by_its_growth_over_one_reaction_time():
    # 3 days of one sample a minute, growing 10 MiB an hour: every day climbs 240 MiB past the last peak.
    history = samples([500 + minute // 6 for minute in range(3 * 24 * 60)])
    jumps = _headroom_policy.jumps(history, DAY, 7 * DAY)
    assert jumps['memory_bytes'] == 240 * MIB
    assert jumps['windows'] == 2
    assert jumps['millicores'] == 0


def test_a_burst_below_an_earlier_peak_is_no_jump():
    flat = [600] * (3 * 24 * 60)
    flat[0] = 900     # the first reading sets the peak ...
    flat[2000] = 800  # ... a later smaller one climbs nothing
    assert _headroom_policy.jumps(samples(flat), DAY, 7 * DAY)['memory_bytes'] == 0


def test_no_climb_before_the_history_spans_one_reaction_time():
    jumps = _headroom_policy.jumps(samples([500] * (24 * 60)), DAY, 7 * DAY)  # 23 h 59 min
    assert jumps['memory_bytes'] is None and jumps['horizon_seconds'] is None
    assert _headroom_policy.jumps(samples([500] * (2 * 24 * 60 + 1)), DAY, 7 * DAY)['horizon_seconds'] == DAY


def test_a_day_of_history_measures_climbs_within_half_of_it_scaled_to_the_reaction_time():
    # The second daily run: 24 h of a leak growing 10 MiB an hour. Half a day to know the peak, half a day
    # to climb 120 MiB past it; scaled x2 to the reaction time, the leak's 240 MiB a day.
    leak = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(24 * 60 + 1)]), DAY, 7 * DAY)
    assert leak['horizon_seconds'] == 12 * HOUR and leak['windows'] == 2
    assert leak['memory_bytes'] == 240 * MIB
    assert _headroom_policy.extrapolated(leak)
    # Over 30 h: climbs within 15 h, scaled x1.6.
    longer = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(30 * 60 + 1)]), DAY, 7 * DAY)
    assert longer['horizon_seconds'] == 15 * HOUR and longer['memory_bytes'] == 240 * MIB
    assert not _headroom_policy.extrapolated(
        _headroom_policy.jumps(samples([500] * (2 * 24 * 60 + 1)), DAY, 7 * DAY))


def test_climbs_are_measured_from_readings_off_the_exact_second():
    # The sampler's readings fall 30 s past the minute; the run that reads them comes 10 s after two days,
    # or 7.3 s after one: no reading sits exactly a whole reaction time (or half the history) from the ends.
    def leak(minutes, last_late):
        history = [{'t': 0, 'non_pod_bytes': 500 * MIB, 'non_pod_millicores': 100}]
        history += [{'t': 30 + 60 * minute, 'non_pod_bytes': (500 + minute // 6) * MIB,
                     'non_pod_millicores': 100 + minute // 6} for minute in range(minutes)]
        history.append({'t': 60 * minutes + last_late, 'non_pod_bytes': (500 + minutes // 6) * MIB,
                        'non_pod_millicores': 100 + minutes // 6})
        return _headroom_policy.jumps(history, DAY, 7 * DAY)
    two_days = leak(2 * 24 * 60, 10)
    assert two_days['horizon_seconds'] == DAY and 239 * MIB <= two_days['memory_bytes'] <= 240 * MIB
    one_day = leak(24 * 60, 7.3)
    assert one_day['horizon_seconds'] < DAY
    # Half a day of a 10 MiB/h leak, scaled to the day (the last minute's growth may fall outside the window).
    assert 236 * MIB <= one_day['memory_bytes'] <= 241 * MIB and 236 <= one_day['millicores'] <= 241
    # The sampler was down for the 5 min before the middle: the first reading after it, 30 s past, still starts
    # a climb, its window ending up to one sampling interval past the history's end.
    gap = [sample for sample in [{'t': 60 * minute, 'non_pod_bytes': (500 + minute // 6) * MIB,
                                  'non_pod_millicores': 100} for minute in range(24 * 60 + 1)]
           if not 12 * 60 * 60 - 300 <= sample['t'] <= 12 * 60 * 60]
    gap.insert(next(i for i, sample in enumerate(gap) if sample['t'] > 12 * HOUR),
               {'t': 12 * HOUR + 30, 'non_pod_bytes': 620 * MIB, 'non_pod_millicores': 100})
    assert _headroom_policy.jumps(gap, DAY, 7 * DAY)['memory_bytes'] is not None


def test_a_sparse_history_says_why_it_measures_no_climb():
    # Readings at 0, 1 h and 49 h: over two reaction times, but no reading a whole reaction time from both ends.
    history = [{'t': t * HOUR, 'non_pod_bytes': 600 * MIB, 'non_pod_millicores': 100} for t in (0, 1, 49)]
    basis = _headroom_policy.basis(history, 49 * HOUR, 100.0, DAY, DAY, 7 * DAY)
    assert basis['jumps']['memory_bytes'] is None
    measured = {'mem_total_bytes': 4 * GIB, 'mem_available_bytes': 4 * GIB - 600 * MIB,
                'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
                'capacity_millicores': 2000, 'non_pod_millicores': 100, 'kube_components_millicores': 0}
    result = _recommend.recommend(measured, None, None, basis, _formulas.all_formulas(4 * GIB, 2, 110))
    assert any('too sparse to show climbs' in line for line in result['explanation'])
    assert any(line.startswith('the cold-start prior') for line in result['explanation'])


def test_daily_spot_readings_are_no_climbs():
    # Without the sampler the history holds the role's own readings, one a run: three spot readings a day apart
    # (a run 10 and 5 min late) say nothing of how use climbs within a day. The prior stays.
    history = [{'t': t, 'non_pod_bytes': value * MIB, 'non_pod_millicores': 100}
               for t, value in ((0, 600), (DAY + 600, 650), (2 * DAY + 300, 700))]
    jumps = _headroom_policy.jumps(history, DAY, 7 * DAY)
    assert jumps['memory_bytes'] is None and jumps['too_sparse']
    # One reading a minute is dense enough; one every 2.4 h (a tenth of the day) just so.
    assert _headroom_policy.start_slack([0, 60, 120], DAY) == 60
    assert _headroom_policy.start_slack([0, 8640, 17280], DAY) == 8640
    assert _headroom_policy.start_slack([0, 8641, 17282], DAY) is None
    # The median gap, not the largest: a sampler that was down for a day still measures.
    assert _headroom_policy.start_slack([0, 60, 120, 180, 180 + DAY], DAY) == 60


def _day_of_history(values_mib):
    """A 4 GiB node's second daily run: 24 h of history, one reading a minute, ``values_mib`` spread over it."""
    history = samples([values_mib[minute * len(values_mib) // (24 * 60 + 1)] for minute in range(24 * 60 + 1)])
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY)
    measured = {'mem_total_bytes': 4 * GIB, 'mem_available_bytes': 4 * GIB - 700 * MIB,
                'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
                'capacity_millicores': 2000, 'non_pod_millicores': 100, 'kube_components_millicores': 0}
    formulas = _formulas.all_formulas(4 * GIB, 2, 110)
    return _recommend.recommend(measured, None, None, basis, formulas), formulas


def test_a_day_that_climbs_past_the_prior_raises_the_reservation_above_it():
    # GKE reserves 1 GiB on 4 GiB. The first half-day peaks at 600 MiB, the second climbs to 700 MiB: a day
    # can climb 200 MiB, and the node ends it 324 MiB under the prior. The prior alone would leave it there.
    result, formulas = _day_of_history([600, 700])
    assert formulas['gke']['reserved_memory_bytes'] == 1024 * MIB
    assert result['memory_headroom_bytes'] == 600 * MIB  # 100 MiB x2 (scaled to the day) x1.5 x2/1 (two windows)
    assert result['reserved_memory_bytes'] == 1300 * MIB
    assert any('measured within 12.0 h (half the history) and scaled x2.00' in line for line in result['explanation'])
    assert any(line.startswith('the cold-start prior, what the gke formula reserves') and 'is the floor' in line
               for line in result['explanation'])
    assert not any('raised to the cold-start prior' in line for line in result['explanation'])


def test_a_quiet_day_keeps_the_prior_as_the_floor():
    result, formulas = _day_of_history([600, 600])
    assert result['reserved_memory_bytes'] == formulas['gke']['reserved_memory_bytes']
    assert any('reserved memory raised to the cold-start prior' in line for line in result['explanation'])


def test_a_short_history_widens_the_headroom():
    history = samples([500] * (20 * 60))
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY)
    measured = {'mem_total_bytes': 16 * GIB, 'mem_available_bytes': 15 * GIB, 'kubepods_working_set_bytes': 0,
                'kube_components_working_set_bytes': 0, 'capacity_millicores': 4000, 'non_pod_millicores': 100,
                'kube_components_millicores': 0}
    result = _recommend.recommend(measured, None, None, basis)
    assert result['memory_headroom_bytes'] == 200 * MIB  # the 100 MiB minimum, doubled
    assert any('no climb to a new peak yet (it spans less than one reaction time)' in line
               for line in result['explanation'])
    assert any('widened 2.0x until the history shows climbs' in line for line in result['explanation'])


def test_without_a_prior_the_second_run_keeps_the_widened_minimum():
    # No prior (cold_start_prior: none, no class peer): a quiet day of history measures no climb, and the
    # headroom must not fall below what 20 h of the same history got (the widened 100 MiB minimum).
    history = samples([500] * (24 * 60 + 1))
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY)
    measured = {'mem_total_bytes': 16 * GIB, 'mem_available_bytes': 15 * GIB, 'kubepods_working_set_bytes': 0,
                'kube_components_working_set_bytes': 0, 'capacity_millicores': 4000, 'non_pod_millicores': 100,
                'kube_components_millicores': 0}
    result = _recommend.recommend(measured, {'cold_start_prior': 'none'}, None, basis,
                                  _formulas.all_formulas(16 * GIB, 4, 110))
    assert basis['jumps']['memory_bytes'] == 0 and result['memory_headroom_bytes'] == 200 * MIB


def test_headroom_takes_the_jump_times_the_factor_over_the_fixed_rule():
    value, rule = _headroom_policy.headroom(1000 * MIB, 240 * MIB, 10.0, 100 * MIB, 1.5)
    assert value == 360 * MIB and 'largest climb' in rule
    # Few reaction windows: the largest of few climbs understates the next one.
    assert _headroom_policy.headroom(1000 * MIB, 240 * MIB, 10.0, 100 * MIB, 1.5, windows=2)[0] == 720 * MIB
    assert _headroom_policy.headroom(1000 * MIB, 240 * MIB, 10.0, 100 * MIB, 1.5, windows=7)[0] == 420 * MIB
    assert _headroom_policy.headroom(1000 * MIB, None, 10.0, 100 * MIB, 1.5)[0] == 100 * MIB


def test_basis_carries_the_jumps_into_the_recommendation():
    history = samples([500 + minute // 6 for minute in range(3 * 24 * 60)])
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY)
    measured = {'mem_total_bytes': 16 * GIB, 'mem_available_bytes': 15 * GIB, 'kubepods_working_set_bytes': 0,
                'kube_components_working_set_bytes': 0, 'capacity_millicores': 4000, 'non_pod_millicores': 100,
                'kube_components_millicores': 0}
    result = _recommend.recommend(measured, None, None, basis)
    # 240 MiB climbed, x 1.5, x 2 / 1 for the two windows three days hold.
    assert result['memory_headroom_bytes'] == 720 * MIB
    assert result['reserved_memory_bytes'] == basis['non_pod_bytes'] + 720 * MIB


def test_one_reading_rests_on_the_cold_start_prior_not_twice_the_reading():
    measured = {'mem_total_bytes': 8 * GIB, 'mem_available_bytes': 8 * GIB - 300 * MIB, 'kubepods_working_set_bytes': 0,
                'kube_components_working_set_bytes': 0, 'capacity_millicores': 2000, 'non_pod_millicores': 30,
                'kube_components_millicores': 0}
    formulas = _formulas.all_formulas(8 * GIB, 2, 110)
    result = _recommend.recommend(measured, None, None, None, formulas)
    assert result['reserved_memory_bytes'] == -(-formulas['gke']['reserved_memory_bytes'] // MIB) * MIB
    assert any('cold-start prior' in line for line in result['explanation'])
    none = _recommend.recommend(measured, {'cold_start_prior': 'none'}, None, None, formulas)
    assert none['single_reading'] and none['memory_headroom_bytes'] == 200 * MIB  # the old 2x widening


def test_near_reservation_flag():
    assert _headroom_policy.near_reservation(950 * MIB, GIB, 100 * MIB)
    # Back at the peak the reservation was sized on (reserved - headroom): planned for, no flag.
    assert not _headroom_policy.near_reservation(924 * MIB, GIB, 100 * MIB)
    assert _headroom_policy.near_reservation(924 * MIB + 1, GIB, 100 * MIB)
    assert not _headroom_policy.near_reservation(900 * MIB, GIB, 100 * MIB)
    assert _headroom_policy.near_reservation(2 * GIB, GIB, 0)
    assert not _headroom_policy.near_reservation(2 * GIB, 0, 100 * MIB)


def test_a_node_class_is_its_memory_size_and_cpu_count():
    # MemTotal is a little under the nominal size (firmware, kernel): both read as one 16 GiB class.
    assert _headroom_policy.node_class(16 * GIB - 300 * MIB, 4) == _headroom_policy.node_class(16 * GIB - 120 * MIB, 4)
    assert _headroom_policy.node_class(16 * GIB, 4) != _headroom_policy.node_class(16 * GIB, 8)
    assert _headroom_policy.node_class(16 * GIB, 4) != _headroom_policy.node_class(32 * GIB, 4)


def test_a_peer_s_larger_climb_raises_the_node_s_headroom():
    three_days = 3 * 24 * 60
    quiet = _headroom_policy.jumps(samples([500 + minute // 60 for minute in range(three_days)]), DAY, 7 * DAY)
    leaking = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(three_days)]), DAY, 7 * DAY)
    assert quiet['memory_bytes'] == 24 * MIB and leaking['memory_bytes'] == 240 * MIB
    pooled = _headroom_policy.pool_jumps(quiet, [leaking])
    assert pooled['memory_bytes'] == 240 * MIB and pooled['class_nodes'] == 2
    assert pooled['raised_by_class'] == ['memory_bytes']
    assert pooled['windows'] == quiet['windows']  # the small-sample factor stays the node's own
    # The peer's smaller climb changes nothing; nor does a peer measured over another reaction time.
    assert _headroom_policy.pool_jumps(leaking, [quiet])['memory_bytes'] == 240 * MIB
    other_reaction = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(three_days)]), HOUR, 7 * DAY)
    assert _headroom_policy.pool_jumps(quiet, [other_reaction])['memory_bytes'] == 24 * MIB
    # A node with no climb of its own yet keeps its short-history rules (and the cold-start prior).
    young = _headroom_policy.jumps(samples([500] * (24 * 60)), DAY, 7 * DAY)
    assert _headroom_policy.pool_jumps(young, [leaking])['memory_bytes'] is None


def test_the_recommendation_says_the_class_raised_the_headroom():
    three_days = 3 * 24 * 60
    history = samples([500 + minute // 60 for minute in range(three_days)])
    peer = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(three_days)]), DAY, 7 * DAY)
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY)
    measured = {'mem_total_bytes': 16 * GIB, 'mem_available_bytes': 15 * GIB, 'kubepods_working_set_bytes': 0,
                'kube_components_working_set_bytes': 0, 'capacity_millicores': 4000, 'non_pod_millicores': 100,
                'kube_components_millicores': 0}
    alone = _recommend.recommend(measured, None, None, basis)
    basis['jumps'] = _headroom_policy.pool_jumps(basis['jumps'], [peer])
    pooled = _recommend.recommend(measured, None, None, basis)
    assert alone['memory_headroom_bytes'] == 100 * MIB  # 24 MiB x 1.5 x 2 is below the 100 MiB minimum
    assert pooled['memory_headroom_bytes'] == 720 * MIB  # the peer's 240 MiB x 1.5 x 2
    assert any('pooled over 2 nodes' in line and 'raises memory_bytes' in line for line in pooled['explanation'])


def _node(memory_mib=16 * 1024, cpus=4):
    return {'mem_total_bytes': memory_mib * MIB, 'mem_available_bytes': memory_mib * MIB - 600 * MIB,
            'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
            'capacity_millicores': cpus * 1000, 'non_pod_millicores': 100, 'kube_components_millicores': 0}


def _record(history, measured):
    """The class record a node with ``history`` returns (its own recommendation, made by the policy)."""
    basis = _headroom_policy.basis(history, history[-1]['t'], 100.0, DAY, DAY, 7 * DAY) if history else None
    recommendation = _recommend.recommend(measured, None, None, basis)
    jumps = (basis or {}).get('jumps') or {}
    return _headroom_policy.class_record(measured['mem_total_bytes'], measured['capacity_millicores'] // 1000,
                                         jumps, recommendation), recommendation


def test_a_node_offers_its_class_a_reservation_only_once_it_has_climbs_of_its_own():
    three_days = 3 * 24 * 60
    warm, recommendation = _record(samples([500 + minute // 6 for minute in range(three_days)]), _node())
    assert not warm['cold_start'] and warm['node_class'] == [16, 4]
    assert warm['reserved_memory_bytes'] == recommendation['reserved_memory_bytes']
    assert warm['jumps']['memory_bytes'] == 240 * MIB
    # One reading; under a day (no climb measurable yet); a day (climbs scaled up from half of it).
    for history in (None, samples([500] * (24 * 60)), samples([500 + minute // 6 for minute in range(24 * 60 + 1)])):
        cold, _recommendation = _record(history, _node())
        assert cold['cold_start'] and cold['reserved_memory_bytes'] is None and cold['reserved_millicores'] is None


def test_a_climb_scaled_up_from_a_short_history_raises_no_peer():
    three_days = 3 * 24 * 60
    quiet = _headroom_policy.jumps(samples([500 + minute // 60 for minute in range(three_days)]), DAY, 7 * DAY)
    young = _headroom_policy.jumps(samples([500 + minute // 6 for minute in range(24 * 60 + 1)]), DAY, 7 * DAY)
    assert young['memory_bytes'] == 240 * MIB > quiet['memory_bytes']
    pooled = _headroom_policy.pool_jumps(quiet, [young])
    assert pooled['memory_bytes'] == quiet['memory_bytes'] and pooled['raised_by_class'] == []
    assert pooled['class_nodes'] == 1


def test_only_peers_of_the_class_that_would_change_the_decision_are_passed():
    three_days = 3 * 24 * 60
    quiet, _r = _record(samples([500 + minute // 60 for minute in range(three_days)]), _node())
    leaking, _r = _record(samples([500 + minute // 6 for minute in range(three_days)]), _node())
    cold, _r = _record(None, _node())
    bigger_node, _r = _record(samples([500 + minute // 3 for minute in range(three_days)]), _node(32 * 1024))
    assert _headroom_policy.peers_that_matter(quiet, [leaking, cold, bigger_node]) == [leaking, cold]
    assert _headroom_policy.peers_that_matter(leaking, [quiet, cold, bigger_node]) == []  # its own climb is the largest
    assert _headroom_policy.peers_that_matter(cold, [quiet, leaking]) == [quiet, leaking]
    assert _headroom_policy.peers_that_matter(cold, [cold, bigger_node]) == []  # nobody of its class has history
    assert _headroom_policy.peers_that_matter(None, [quiet]) == []
    assert _headroom_policy.peers_that_matter(quiet, [{'node_class': [16, 4]}, 'junk', None]) == []


def test_a_cold_node_starts_from_the_largest_reservation_of_its_class_not_the_formula():
    three_days = 3 * 24 * 60
    measured = _node()
    warm = [_record(samples([500 + minute // step for minute in range(three_days)]), measured)
            for step in (60, 6)]
    prior = _headroom_policy.class_prior([record for record, _r in warm])
    largest = max(recommendation['reserved_memory_bytes'] for _record_, recommendation in warm)
    assert prior[:2] == (largest, max(recommendation['reserved_millicores'] for _record_, recommendation in warm))
    formulas = _formulas.all_formulas(measured['mem_total_bytes'], 4, 110)
    assert largest != formulas['gke']['reserved_memory_bytes']
    basis = {'samples': 1, 'span_seconds': 0, 'percentile': 100.0, 'non_pod_bytes': 600 * MIB,
             'non_pod_millicores': 100, 'class_prior': prior}
    result = _recommend.recommend(measured, None, None, basis, formulas)
    assert result['reserved_memory_bytes'] == largest
    assert any('the largest reservation recommended for the 2 node(s) of the same class' in line
               for line in result['explanation'])
    # Without peers with history the formula stays the prior.
    basis.pop('class_prior')
    alone = _recommend.recommend(measured, None, None, basis, formulas)
    assert alone['reserved_memory_bytes'] == -(-formulas['gke']['reserved_memory_bytes'] // MIB) * MIB
