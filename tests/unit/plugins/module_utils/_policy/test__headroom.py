"""The shipped rule (P + the node's largest jump, between a floor and a cap), jumps lent to a young node, the percent
rule as an option, the cold-start prior, and the near-reservation flag.

Each rule has a test that fails when that rule alone breaks (the ablations of docs/benchmarks.md and docs/benchmarks-history.md, in small).
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _duration, _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store

MIB, GIB = 1 << 20, 1 << 30
HOUR, DAY = 3600, 86400


def samples(values_mib, step=60):
    return [{'t': index * step, 'non_pod_bytes': value * MIB, 'non_pod_millicores': 100}
            for index, value in enumerate(values_mib)]


def _node(memory_mib=16 * 1024, cpus=4, non_pod_mib=600):
    return {'mem_total_bytes': memory_mib * MIB, 'mem_available_bytes': memory_mib * MIB - non_pod_mib * MIB,
            'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
            'capacity_millicores': cpus * 1000, 'non_pod_millicores': 100, 'kube_components_millicores': 0}


def _basis(history):
    return _headroom.basis(history, history[-1]['t'], 100.0, DAY, DAY)


def _days(days, values_mib):
    """``days`` of history, one reading a minute, ``values_mib`` spread evenly over it."""
    minutes = int(days * 24 * 60) + 1
    return samples([values_mib[minute * len(values_mib) // minutes] for minute in range(minutes)])


PERCENT = {'memory_headroom_rule': 'percent', 'memory_headroom_min_bytes': 100 * MIB}
FLOOR, CAP = 768 * MIB, 2 * GIB  # the shipped memory_headroom_min_bytes and memory_headroom_max_bytes (issue 38)


def _daily(peaks_mib, low_mib=500):
    """One reading a minute over len(peaks_mib) days and one more reading: each day at ``low_mib`` but for an hour
    at its peak (the newest reading, at the end, at ``low_mib``)."""
    values = []
    for peak in peaks_mib:
        values += [low_mib] * (12 * 60) + [peak] * 60 + [low_mib] * (11 * 60)
    return samples(values + [low_mib])


def test_the_percent_rule_reserves_the_peak_plus_half_of_it():
    # Three days peaking at 800 MiB, 600 MiB now: P is the peak, the headroom half of it (the rule before issue 38,
    # kept as memory_headroom_rule=percent).
    result = _recommend.recommend(_node(), PERCENT, None, _basis(_days(3, [500, 800, 600])))
    assert result['memory_headroom_bytes'] == 400 * MIB
    assert result['reserved_memory_bytes'] == 1200 * MIB
    assert 'max(%d x 50.0%%, %d) = %d' % (800 * MIB, 100 * MIB, 400 * MIB) in '\n'.join(result['explanation'])


def test_daily_jumps_are_each_day_s_rise_above_every_reading_before_it():
    # Peaks 600, 900, 800, 1000 MiB: day 0 has nothing before it; day 1 rose 300 above it, day 2 not at all (its
    # 800 is under day 1's 900), day 3 100 above the 900.
    assert _headroom.daily_jumps(_daily([600, 900, 800, 1000]), DAY) == [300 * MIB, 0, 100 * MIB]
    # Against less than (nearly) a reaction time of history, a day's rise is no jump: a node 12 h old has none.
    assert _headroom.daily_jumps(_days(0.5, [500, 900]), DAY) == []
    assert _headroom.daily_jumps([], DAY) == []


def test_the_headroom_is_the_node_s_largest_jump_in_bytes_not_a_share_of_its_peak():
    # A big node with a high, steady peak and small jumps: the floor, not half of its 6 GiB.
    steady = _basis(_daily([6144, 6144, 6150, 6144, 6144], low_mib=6000))
    result = _recommend.recommend(_node(128 * 1024, 32, 6000), None, None, steady)
    assert steady['jumps']['jump_days'] == 4 and result['memory_headroom_bytes'] == FLOOR
    assert result['reserved_memory_bytes'] == 6150 * MIB + FLOOR
    # A small node whose bursts climbed 1200 MiB above the day before: its largest jump, 1200 MiB.
    bursty = _basis(_daily([600, 600, 1800, 1900, 700]))
    result = _recommend.recommend(_node(8 * 1024, 2), None, None, bursty)
    assert result['memory_headroom_bytes'] == 1200 * MIB
    assert result['reserved_memory_bytes'] == 1900 * MIB + 1200 * MIB
    assert 'max(%d, min(%d, largest jump %d)) = %d' % (FLOOR, CAP, 1200 * MIB, 1200 * MIB) in '\n'.join(
        result['explanation'])


def test_the_jump_headroom_is_held_between_the_floor_and_the_cap():
    warm = {'warm': True, 'jump_days': 5}
    assert _headroom.jump_headroom(GIB, dict(warm, memory_jump_bytes=5 * GIB), 50.0, FLOOR, CAP)[0] == CAP
    assert _headroom.jump_headroom(GIB, dict(warm, memory_jump_bytes=10 * MIB), 50.0, FLOOR, CAP)[0] == FLOOR
    # A cap under the floor: the floor (the least headroom is never given up).
    assert _headroom.jump_headroom(GIB, dict(warm, memory_jump_bytes=5 * GIB), 50.0, FLOOR, 0)[0] == FLOOR


def test_a_young_node_also_takes_half_its_peak_and_a_cold_one_the_cap():
    # One day of jumps (fewer than OWN_JUMP_DAYS): the larger of its jump and half of P, within the bounds.
    young = {'warm': True, 'jump_days': 1, 'memory_jump_bytes': 0}
    assert _headroom.OWN_JUMP_DAYS == 2
    assert _headroom.jump_headroom(3 * GIB, young, 50.0, FLOOR, CAP)[0] == 1536 * MIB
    assert _headroom.jump_headroom(3 * GIB, dict(young, jump_days=2), 50.0, FLOOR, CAP)[0] == FLOOR
    # Not yet a reaction time of history: the cap, the most the rule ever adds.
    assert _headroom.jump_headroom(300 * MIB, {'warm': False, 'jump_days': 0}, 50.0, FLOOR, CAP)[0] == CAP
    # A single reading (no basis, no jumps): the cap too, under the node's max_reserved_fraction.
    result = _recommend.recommend(_node(8 * 1024, 2, 600), None, None, None)
    assert result['memory_headroom_bytes'] == CAP and result['reserved_memory_bytes'] == 600 * MIB + CAP


def test_a_peak_older_than_the_default_window_no_longer_holds_the_reservation_up(tmp_path):
    # A 2 GiB peak 8 days ago, 600 MiB since: the shipped 7-day window has let it go (and its jump with it); a
    # peak 6 days ago has not: P is 2 GiB and its jump, 1448 MiB above the days before, the headroom.
    window = _duration.parse_window(_option_specs.OPTIONS['history_window']['default'])
    assert window == 7 * DAY
    now = 10 * DAY
    path = tmp_path / 'history.jsonl'
    for peak_day in (2, 4):
        lines = [{'t': now - day * DAY + minute * 600, 'non_pod_bytes': 600 * MIB, 'non_pod_millicores': 100}
                 for day in range(10, 0, -1) for minute in range(144)]
        lines.append({'t': now, 'non_pod_bytes': 600 * MIB, 'non_pod_millicores': 100})
        lines.append({'t': peak_day * DAY + 60, 'non_pod_bytes': 2 * GIB, 'non_pod_millicores': 100})
        path.write_text(''.join('{"t": %d, "non_pod_bytes": %d, "non_pod_millicores": %d}\n'
                                % (s['t'], s['non_pod_bytes'], s['non_pod_millicores'])
                                for s in sorted(lines, key=lambda s: s['t'])))
        history, _problems = _history_store.read(str(path), now, window)
        reserved = _recommend.recommend(_node(), None, None, _basis(history))['reserved_memory_bytes']
        if peak_day == 2:
            assert reserved == 600 * MIB + FLOOR
        else:
            assert reserved == 2 * GIB + 2 * GIB - 600 * MIB


def test_a_peer_s_peak_no_longer_raises_a_node_that_has_jumps_of_its_own():
    quiet = _basis(_daily([600] * 5))
    busy = _basis(_daily([600, 900, 1200, 1500, 1800]))
    alone = _recommend.recommend(_node(), None, None, quiet)
    quiet['jumps'] = _headroom.pool_jumps(quiet['jumps'], [busy['jumps']])
    pooled = _recommend.recommend(_node(), None, None, quiet)
    assert alone['reserved_memory_bytes'] == pooled['reserved_memory_bytes'] == 600 * MIB + FLOOR
    assert quiet['jumps']['raised_by_class'] == [] and quiet['jumps']['class_nodes'] == 2


def test_peers_lend_their_jumps_to_a_young_node_only():
    busy = _basis(_daily([600, 1500, 2400, 3300, 4200]))['jumps']
    assert busy['memory_jump_bytes'] == 900 * MIB and busy['jump_days'] == 4
    young = _basis(_daily([600, 600]))['jumps']
    assert young['jump_days'] == 1 and _headroom.young(young)
    lent = _headroom.pool_jumps(young, [busy])
    assert lent['memory_jump_bytes'] == 900 * MIB and lent['raised_by_class'] == ['memory_jump_bytes']
    assert lent['memory_bytes'] == young['memory_bytes']  # its P is its own
    settled = _basis(_daily([600] * 4))['jumps']
    assert _headroom.pool_jumps(settled, [busy])['memory_jump_bytes'] == 0
    # Peers at another reaction time, or with no jumps of their own, lend nothing.
    hourly = dict(busy, reaction_seconds=HOUR)
    assert _headroom.pool_jumps(young, [hourly])['raised_by_class'] == []
    assert _headroom.pool_jumps(young, [dict(busy, jump_days=0)])['raised_by_class'] == []


def test_a_history_shorter_than_the_reaction_time_rests_on_the_prior():
    formulas = _vendor_formulas.all_formulas(4 * GIB, 2, 110)
    measured = _node(4 * 1024, 2)
    assert formulas['gke']['reserved_memory_bytes'] == 1024 * MIB
    for hours, floor in ((0, True), (12, True), (21.5, True), (21.7, False), (24, False)):
        history = _days(hours / 24.0, [600]) if hours else None
        result = _recommend.recommend(measured, None, None, _basis(history) if history else None, formulas)
        explained = '\n'.join(result['explanation'])
        if floor:
            # The prior (GKE's 1 GiB) is the floor; the cold headroom (the cap, 2 GiB) passes it, held at
            # max_reserved_fraction (half of 4 GiB).
            assert result['reserved_memory_bytes'] == 2048 * MIB, hours
            assert 'the cold-start prior, what the gke formula reserves' in explained
            assert 'less than a reaction time' in explained
        else:
            # Warm, no jump of its own yet: the floor (over half of P, 300 MiB).
            assert result['reserved_memory_bytes'] == 600 * MIB + FLOOR, hours
            assert 'cold-start prior' not in explained


def test_the_prior_is_a_floor_not_a_ceiling():
    formulas = _vendor_formulas.all_formulas(4 * GIB, 2, 110)
    result = _recommend.recommend(_node(4 * 1024, 2, 800), PERCENT, None, None, formulas)
    assert result['reserved_memory_bytes'] == 1200 * MIB > formulas['gke']['reserved_memory_bytes']
    none = _recommend.recommend(_node(4 * 1024, 2), dict(PERCENT, cold_start_prior='none'), None, None, formulas)
    assert none['single_reading'] and none['reserved_memory_bytes'] == 900 * MIB
    # The jumps rule's cold headroom (the cap) passes the prior too, up to max_reserved_fraction (2 GiB of 4).
    jumps = _recommend.recommend(_node(4 * 1024, 2, 800), None, None, None, formulas)
    assert jumps['reserved_memory_bytes'] == 2 * GIB


def _record(history, measured):
    """The class record a node with ``history`` returns (its own recommendation, made by the policy)."""
    basis = _basis(history) if history else None
    recommendation = _recommend.recommend(measured, None, None, basis)
    jumps = (basis or {}).get('jumps') or {}
    return _headroom.class_record(measured['mem_total_bytes'], measured['capacity_millicores'] // 1000,
                                  jumps, recommendation), recommendation


def test_a_node_offers_its_class_a_reservation_once_its_history_spans_a_reaction_time():
    warm, recommendation = _record(_days(3, [600]), _node())
    assert not warm['cold_start'] and warm['node_class'] == [16, 4]
    assert warm['reserved_memory_bytes'] == recommendation['reserved_memory_bytes']
    assert warm['jumps']['memory_bytes'] == 600 * MIB and warm['jumps']['warm']
    for history in (None, _days(0.5, [600])):
        cold, _recommendation = _record(history, _node())
        assert cold['cold_start'] and cold['reserved_memory_bytes'] is None and cold['reserved_millicores'] is None


def test_only_peers_of_the_class_that_would_change_the_decision_are_passed():
    quiet, _r = _record(_daily([600, 600]), _node())          # young: one day of jumps
    busy, _r = _record(_daily([600, 900, 1200, 1500]), _node())
    cold, _r = _record(None, _node())
    bigger_node, _r = _record(_daily([600, 900, 1200, 2000]), _node(32 * 1024))
    assert _headroom.peers_that_matter(quiet, [busy, cold, bigger_node]) == [busy, cold]
    assert _headroom.peers_that_matter(busy, [quiet, cold, bigger_node]) == []  # it has jumps of its own
    assert _headroom.peers_that_matter(cold, [quiet, busy]) == [quiet, busy]
    assert _headroom.peers_that_matter(cold, [cold, bigger_node]) == []  # nobody of its class knows more
    assert _headroom.peers_that_matter(None, [quiet]) == []
    assert _headroom.peers_that_matter(quiet, [{'node_class': [16, 4]}, 'junk', None]) == []


def test_a_cold_node_starts_from_the_largest_reservation_of_its_class_not_the_formula():
    measured = _node()
    warm = [_record(_days(3, [value]), measured) for value in (600, 900)]
    prior = _headroom.class_prior([record for record, _r in warm])
    largest = max(recommendation['reserved_memory_bytes'] for _record_, recommendation in warm)
    assert prior[:2] == (largest, max(recommendation['reserved_millicores'] for _record_, recommendation in warm))
    formulas = _vendor_formulas.all_formulas(measured['mem_total_bytes'], 4, 110)
    assert largest != formulas['gke']['reserved_memory_bytes']
    # Its peers lend it their jumps (none above their day before): the floor over its one reading, under the prior.
    lent = _headroom.pool_jumps({'reaction_seconds': DAY, 'warm': False, 'jump_days': 0, 'memory_jump_bytes': 0},
                                [record['jumps'] for record, _r in warm])
    assert lent['lent_jumps']
    basis = {'samples': 1, 'span_seconds': 0, 'percentile': 100.0, 'non_pod_bytes': 300 * MIB,
             'non_pod_millicores': 100, 'class_prior': prior, 'jumps': lent}
    result = _recommend.recommend(measured, None, None, basis, formulas)
    assert result['reserved_memory_bytes'] == largest
    assert any('the largest reservation recommended for the 2 node(s) of the same class' in line
               for line in result['explanation'])
    # Without peers with history the formula stays the prior, and the cold headroom (the cap) is over it.
    basis.pop('class_prior')
    basis.pop('jumps')
    alone = _recommend.recommend(measured, None, None, basis, formulas)
    assert alone['reserved_memory_bytes'] == max(-(-formulas['gke']['reserved_memory_bytes'] // MIB) * MIB,
                                                 300 * MIB + 2 * GIB)
    alone = _recommend.recommend(measured, PERCENT, None, basis, formulas)
    assert alone['reserved_memory_bytes'] == -(-formulas['gke']['reserved_memory_bytes'] // MIB) * MIB


def test_near_reservation_flag():
    assert _headroom.near_reservation(1000 * MIB, GIB, 100 * MIB)
    # A new peak that leaves half the headroom or more (974 MiB of 1 GiB with 100 MiB planned) is what the
    # reservation planned for: no flag (_decision would keep it too).
    assert not _headroom.near_reservation(950 * MIB, GIB, 100 * MIB)
    assert not _headroom.near_reservation(974 * MIB, GIB, 100 * MIB)
    assert _headroom.near_reservation(974 * MIB + 1, GIB, 100 * MIB)
    assert not _headroom.near_reservation(900 * MIB, GIB, 100 * MIB)
    assert _headroom.near_reservation(2 * GIB, GIB, 0)
    assert not _headroom.near_reservation(2 * GIB, 0, 100 * MIB)


def test_a_node_class_is_its_memory_size_and_cpu_count():
    # MemTotal is a little under the nominal size (firmware, kernel): both read as one 16 GiB class.
    assert _headroom.node_class(16 * GIB - 300 * MIB, 4) == _headroom.node_class(16 * GIB - 120 * MIB, 4)
    assert _headroom.node_class(16 * GIB, 4) != _headroom.node_class(16 * GIB, 8)
    assert _headroom.node_class(16 * GIB, 4) != _headroom.node_class(32 * GIB, 4)


def test_the_class_is_the_inventory_name_where_set_else_the_size():
    measured = _node()
    basis = _basis(_days(3, [600]))
    recommendation = _recommend.recommend(measured, None, None, basis)
    named = _headroom.class_record(16 * GIB, 4, basis['jumps'], recommendation, 'gpu-pool')
    sized = _headroom.class_record(16 * GIB, 4, basis['jumps'], recommendation)
    assert named['class_name'] == 'gpu-pool' and sized['class_name'] is None
    assert _headroom.class_key(named) == ('name', 'gpu-pool') and _headroom.class_key(sized) == ('size', 16, 4)
    other_pool = dict(named, class_name='general')
    assert _headroom.same_class(named, [named, other_pool, sized]) == [named]
    assert _headroom.same_class(sized, [named, other_pool, sized]) == [sized]
    assert _headroom.same_class(('name', 'general'), [named, other_pool]) == [other_pool]


def test_a_control_plane_node_never_pools_with_a_worker_of_its_size_or_name():
    busy_worker, _r = _record(_daily([600, 900, 1200, 1500]), _node())
    busy_control_plane = dict(busy_worker, control_plane=True)
    cold, _r = _record(None, _node())
    cold_control_plane = dict(cold, control_plane=True)
    # A cold control-plane node takes no worker's reservation as its prior, nor a cold worker a control plane's.
    assert _headroom.peers_that_matter(cold_control_plane, [busy_worker]) == []
    assert _headroom.peers_that_matter(cold, [busy_control_plane]) == []
    assert _headroom.peers_that_matter(cold_control_plane, [busy_worker, busy_control_plane]) == [busy_control_plane]
    assert _headroom.class_key(busy_control_plane) == ('size', 16, 4, 'control-plane')
    named_worker, named_control_plane = dict(busy_worker, class_name='general'), dict(busy_control_plane, class_name='general')
    assert _headroom.same_class(dict(cold, class_name='general'), [named_worker, named_control_plane]) == [named_worker]
    assert _headroom.class_key(named_control_plane) == ('name', 'general', 'control-plane')
    # A record from before detection has no mark: a worker's class, as it was.
    assert _headroom.class_key({'node_class': [16, 4]}) == ('size', 16, 4)


def test_the_class_record_says_whether_the_node_is_a_control_plane():
    measured = _node()
    basis = _basis(_days(3, [600]))
    recommendation = _recommend.recommend(measured, None, None, basis)
    assert _headroom.class_record(16 * GIB, 4, basis['jumps'], recommendation, None, True)['control_plane'] is True
    assert _headroom.class_record(16 * GIB, 4, basis['jumps'], recommendation)['control_plane'] is False
