"""The shipped rule (P + max(100Mi, 50 % of P)), class pooling, the cold-start prior, and the near-reservation flag.

Each rule has a test that fails when that rule alone breaks (the ablation of docs/benchmarks.md, in small).
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


def test_the_reservation_is_the_peak_plus_half_of_it():
    # Three days peaking at 800 MiB, 600 MiB now: P is the peak, the headroom half of it.
    result = _recommend.recommend(_node(), None, None, _basis(_days(3, [500, 800, 600])))
    assert result['memory_headroom_bytes'] == 400 * MIB
    assert result['reserved_memory_bytes'] == 1200 * MIB
    assert 'max(%d x 50.0%%, %d) = %d' % (800 * MIB, 100 * MIB, 400 * MIB) in '\n'.join(result['explanation'])


def test_a_small_peak_takes_the_minimum_headroom():
    result = _recommend.recommend(_node(non_pod_mib=150), None, None, _basis(_days(3, [150])))
    assert result['memory_headroom_bytes'] == 100 * MIB
    # 250 MiB is under min_reserved (256Mi): the floor holds it up.
    assert result['reserved_memory_bytes'] == 256 * MIB


def test_headroom_rounds_up_and_takes_the_larger_of_the_two():
    assert _headroom.headroom(1000, 50.0, 0)[0] == 500
    assert _headroom.headroom(1001, 50.0, 0)[0] == 501
    assert _headroom.headroom(1000, 50.0, 600)[0] == 600
    assert _headroom.headroom(0, 50.0, 100)[0] == 100


def test_a_peak_older_than_the_default_window_no_longer_holds_the_reservation_up(tmp_path):
    # A 2 GiB peak 4 days ago, 600 MiB since: the shipped 3-day window has let it go; a peak 2 days ago has not.
    window = _duration.parse_window(_option_specs.OPTIONS['history_window']['default'])
    now = 5 * DAY
    path = tmp_path / 'history.jsonl'
    for peak_day in (1, 3):
        lines = [{'t': now - day * DAY + minute * 600, 'non_pod_bytes': 600 * MIB, 'non_pod_millicores': 100}
                 for day in range(5, 0, -1) for minute in range(144)]
        lines.append({'t': peak_day * DAY + 60, 'non_pod_bytes': 2 * GIB, 'non_pod_millicores': 100})
        path.write_text(''.join('{"t": %d, "non_pod_bytes": %d, "non_pod_millicores": %d}\n'
                                % (s['t'], s['non_pod_bytes'], s['non_pod_millicores'])
                                for s in sorted(lines, key=lambda s: s['t'])))
        history, _problems = _history_store.read(str(path), now, window)
        reserved = _recommend.recommend(_node(), None, None, _basis(history))['reserved_memory_bytes']
        if peak_day == 1:
            assert reserved == 900 * MIB
        else:
            assert reserved == 3 * GIB


def test_a_peer_s_larger_peak_raises_the_node_s_reservation():
    quiet = _basis(_days(3, [600]))
    busy = _basis(_days(3, [900]))
    alone = _recommend.recommend(_node(), None, None, quiet)
    quiet['jumps'] = _headroom.pool_jumps(quiet['jumps'], [busy['jumps']])
    pooled = _recommend.recommend(_node(), None, None, quiet)
    assert alone['reserved_memory_bytes'] == 900 * MIB
    assert pooled['reserved_memory_bytes'] == 1350 * MIB
    assert any('pooled over 2 nodes' in line and 'raises memory_bytes' in line for line in pooled['explanation'])


def test_pooling_takes_the_largest_peak_of_peers_at_the_same_reaction_time():
    quiet, busy = _basis(_days(3, [600]))['jumps'], _basis(_days(3, [900]))['jumps']
    pooled = _headroom.pool_jumps(quiet, [busy])
    assert pooled['memory_bytes'] == 900 * MIB and pooled['class_nodes'] == 2
    assert pooled['raised_by_class'] == ['memory_bytes'] and pooled['warm_peers'] == 1
    assert _headroom.pool_jumps(busy, [quiet])['memory_bytes'] == 900 * MIB  # a smaller peak changes nothing
    hourly = _headroom.basis(_days(3, [900]), 3 * DAY, 100.0, DAY, HOUR)['jumps']
    assert _headroom.pool_jumps(quiet, [hourly])['memory_bytes'] == 600 * MIB
    # A young peer's reading is a real reading: it raises the class too.
    young = _basis(_days(0.25, [900]))['jumps']
    assert not young['warm'] and _headroom.pool_jumps(quiet, [young])['memory_bytes'] == 900 * MIB


def test_a_history_shorter_than_the_reaction_time_rests_on_the_prior():
    formulas = _vendor_formulas.all_formulas(4 * GIB, 2, 110)
    measured = _node(4 * 1024, 2)
    assert formulas['gke']['reserved_memory_bytes'] == 1024 * MIB
    for hours, floor in ((0, True), (12, True), (21.5, True), (21.7, False), (24, False)):
        history = _days(hours / 24.0, [600]) if hours else None
        result = _recommend.recommend(measured, None, None, _basis(history) if history else None, formulas)
        explained = '\n'.join(result['explanation'])
        if floor:
            assert result['reserved_memory_bytes'] == 1024 * MIB, hours
            assert 'the cold-start prior, what the gke formula reserves' in explained
        else:
            assert result['reserved_memory_bytes'] == 900 * MIB, hours
            assert 'cold-start prior' not in explained


def test_the_prior_is_a_floor_not_a_ceiling():
    formulas = _vendor_formulas.all_formulas(4 * GIB, 2, 110)
    result = _recommend.recommend(_node(4 * 1024, 2, 800), None, None, None, formulas)
    assert result['reserved_memory_bytes'] == 1200 * MIB > formulas['gke']['reserved_memory_bytes']
    none = _recommend.recommend(_node(4 * 1024, 2), {'cold_start_prior': 'none'}, None, None, formulas)
    assert none['single_reading'] and none['reserved_memory_bytes'] == 900 * MIB


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
    quiet, _r = _record(_days(3, [600]), _node())
    busy, _r = _record(_days(3, [900]), _node())
    cold, _r = _record(None, _node())
    bigger_node, _r = _record(_days(3, [2000]), _node(32 * 1024))
    assert _headroom.peers_that_matter(quiet, [busy, cold, bigger_node]) == [busy, cold]
    assert _headroom.peers_that_matter(busy, [quiet, cold, bigger_node]) == []  # its own peak is the largest
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
    basis = {'samples': 1, 'span_seconds': 0, 'percentile': 100.0, 'non_pod_bytes': 300 * MIB,
             'non_pod_millicores': 100, 'class_prior': prior}
    result = _recommend.recommend(measured, None, None, basis, formulas)
    assert result['reserved_memory_bytes'] == largest
    assert any('the largest reservation recommended for the 2 node(s) of the same class' in line
               for line in result['explanation'])
    # Without peers with history the formula stays the prior.
    basis.pop('class_prior')
    alone = _recommend.recommend(measured, None, None, basis, formulas)
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
