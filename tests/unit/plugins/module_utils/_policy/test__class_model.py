"""The class model (issue 45): the slope within nodes, robust to bursts, its prior where pods barely vary, the upper
envelope, enough data, the pods a node may hold, what a profile from another node may be, and the policy's use."""

from __future__ import annotations

import json
import random

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _class_model, _headroom, _model_template, _recommend)

MIB, GIB = 1 << 20, 1 << 30
DAY = 86400


def node_readings(intercept_mib, slope_mib, pods_values, days=2.0, seed=1, bursts=0, start=0):
    """Readings a minute apart over ``days``, pods cycling through ``pods_values``, with ``bursts`` large spikes."""
    rng = random.Random(seed)
    count = int(days * DAY / 60)
    readings = []
    for index in range(count):
        pods = pods_values[(index // 30) % len(pods_values)]
        value = (intercept_mib + slope_mib * pods) * MIB + rng.gauss(0, 3 * MIB)
        readings.append({'t': start + index * 60, 'non_pod_bytes': int(value), 'non_pod_millicores': 50 + 2 * pods,
                         'pods': pods})
    for index in rng.sample(range(count), bursts):
        readings[index]['non_pod_bytes'] += 900 * MIB
    return readings


def test_the_slope_is_fitted_within_nodes_not_across_their_bases():
    # Two nodes of one class with different bases and different pod ranges: across them the slope would read 40 MiB
    # a pod; within each it is 15.
    low = node_readings(500, 15, list(range(10, 31)), seed=1)
    high = node_readings(1300, 15, list(range(40, 61)), seed=2)
    model = _class_model.fit([_class_model.profile(low), _class_model.profile(high)], 110)
    assert model['memory']['slope_source'] == 'fit'
    assert model['memory']['slope'] == pytest.approx(15 * MIB, rel=0.02)
    assert model['enough'] is True and model['nodes'] == 2
    assert model['cpu']['slope'] == pytest.approx(2.0, rel=0.05)


def test_bursts_do_not_tilt_the_slope_and_the_envelope_lies_above_every_reading():
    readings = node_readings(600, 12, list(range(20, 61)), days=3, bursts=40)
    model = _class_model.fit([_class_model.profile(readings)], 110)
    memory = model['memory']
    assert memory['slope'] == pytest.approx(12 * MIB, rel=0.03)
    assert all(r['non_pod_bytes'] <= memory['envelope'] + memory['slope'] * r['pods'] for r in readings)
    assert memory['burst'] >= 850 * MIB
    # Fitted on the largest readings instead of the medians, the bursts would move the line.
    assert memory['intercept'] < 650 * MIB < memory['envelope']


def test_pods_that_barely_vary_give_the_eks_prior_and_say_why():
    model = _class_model.fit([_class_model.profile(node_readings(500, 30, [40, 41, 42], days=4))], 110)
    assert model['memory']['slope'] == _class_model.PRIOR_SLOPE_BYTES == 11 * MIB
    assert model['memory']['slope_source'] == 'eks'
    assert 'span 40 to 42' in model['memory']['prior_reason']


def test_a_class_with_too_little_data_does_not_size_a_cold_node_and_a_warm_node_takes_its_own_envelope():
    short = _class_model.profile(node_readings(500, 15, list(range(10, 51)), days=1.0))
    model = _class_model.fit([short], 110)
    assert model['enough'] is False and model['node_days'] < _class_model.MIN_NODE_DAYS
    value, lines = _class_model.raised_peak(model, short, 110, cold=True)
    assert value is None and 'not used' in lines[0]
    value, lines = _class_model.raised_peak(model, short, 110, cold=False)
    assert value == _class_model.at(_class_model.envelope(short, model['memory']['slope']),
                                    model['memory']['slope'], 110)
    assert any('110 pods' in line for line in lines)


def test_the_climb_is_the_largest_rise_within_a_reaction_time():
    quick = [{'t': i * 600, 'pods': 10 if i < 10 else 40} for i in range(30)]
    assert _class_model.climb(quick, DAY) == 30
    slow = [{'t': i * 3600, 'pods': 10 + i * 10 // 24} for i in range(72)]
    assert _class_model.climb(slow, DAY) == 10


def test_a_profile_survives_json_and_anything_else_is_refused_with_our_error():
    own = _class_model.profile(node_readings(500, 15, list(range(10, 80)), days=1))
    assert len(own['buckets']) <= _class_model.PROFILE_BUCKETS
    assert _class_model.checked(json.loads(json.dumps(own)))['buckets'] == own['buckets']
    broken = []
    for change in (lambda p: p['buckets'][0].__setitem__(3, -1), lambda p: p['buckets'][0].__setitem__(4, True),
                   lambda p: p['buckets'][0].__setitem__(2, 1e9), lambda p: p.__setitem__('buckets', []),
                   lambda p: p['buckets'].extend(p['buckets'] * 2), lambda p: p.pop('first'),
                   lambda p: p.__setitem__('pods_now', 'many'), lambda p: p['buckets'][0].__setitem__(4, float('nan'))):
        bad = json.loads(json.dumps(own))
        change(bad)
        with pytest.raises(_class_model.ModelError):
            _class_model.checked(bad)
        broken.append(bad)
    # A peer's broken profile is left out and said; its own stays.
    profiles, problems = _headroom.class_profiles({'pods_profile': own}, [{'pods_profile': broken[0]}])
    assert len(profiles) == 1 and 'not used' in problems[0]


def _measured(non_pod_mib, memory_gib=32, cpus=8):
    return {'mem_total_bytes': memory_gib * GIB, 'mem_available_bytes': memory_gib * GIB - non_pod_mib * MIB,
            'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
            'capacity_millicores': cpus * 1000, 'non_pod_millicores': 100, 'kube_components_millicores': 0}


def test_a_cold_node_in_a_modelled_class_rests_on_the_model_not_on_the_formula():
    peers = [_class_model.profile(node_readings(700, 15, list(range(20, 71)), days=3, seed=seed)) for seed in (1, 2)]
    cold = node_readings(700, 15, [25], days=0.05, seed=3)
    basis = _headroom.basis(cold, cold[-1]['t'], 100.0, DAY, DAY)
    model = _class_model.fit([basis['pods_profile']] + peers, 110)
    basis['class_model'] = {'model': model, 'max_pods': 110}
    formulas = _vendor_formulas.all_formulas(32 * GIB, 8, 110)
    result = _recommend.recommend(_measured(1100), {}, None, basis, formulas)
    expected = _class_model.at(model['memory']['envelope'], model['memory']['slope'], 110)
    assert result['class_model']['raised'] is True
    assert result['reserved_memory_bytes'] == _recommend.ceil_to(expected, MIB)
    assert result['reserved_memory_bytes'] < formulas['gke']['reserved_memory_bytes']
    assert result['cold_start']['floor'] == 'class model'
    assert any('class model' in line for line in result['explanation'])
    # Without the model the same node takes GKE's formula, the prior.
    del basis['class_model']
    alone = _recommend.recommend(_measured(1100), {}, None, basis, formulas)
    assert alone['reserved_memory_bytes'] >= formulas['gke']['reserved_memory_bytes']


def test_a_template_is_the_envelope_at_max_pods_plus_the_cold_headroom():
    profiles = [_class_model.profile(node_readings(700, 15, list(range(20, 71)), days=3, seed=seed))
                for seed in (1, 2)]
    model = _class_model.fit(profiles, 110)
    template = _model_template.reservation(model, 110)
    floor = _class_model.at(model['memory']['envelope'], model['memory']['slope'], 110)
    assert template['memory_bytes'] >= floor + 768 * MIB
    assert template['max_pods'] == 110
    assert _model_template.reservation(_class_model.fit(profiles[:1][:0] or [_class_model.profile(
        node_readings(700, 15, [20, 40], days=0.5))], 110), 110) is None
    summary = _model_template.summary(model)
    assert summary['slope_bytes_per_pod'] == pytest.approx(15 * MIB, rel=0.02) and summary['nodes'] == 2


def test_a_warm_node_is_held_to_its_own_envelope_at_max_pods_and_a_young_one_to_its_classs():
    # A warm node of 3 days at 20-30 pods, in a class whose other node sits 400 MiB higher.
    own = node_readings(500, 15, list(range(20, 31)), days=3, seed=4)
    high = _class_model.profile(node_readings(900, 15, list(range(10, 61)), days=3, seed=5))
    formulas = _vendor_formulas.all_formulas(32 * GIB, 8, 110)

    def decided(history, young):
        basis = _headroom.basis(history, history[-1]['t'], 100.0, DAY, DAY)
        basis['jumps'] = dict(basis['jumps'], jump_days=0 if young else 2)
        model = _class_model.fit([basis['pods_profile'], high], 110)
        basis['class_model'] = {'model': model, 'max_pods': 110}
        return _recommend.recommend(_measured(900), {}, None, basis, formulas), model, basis

    warm, model, basis = decided(own, young=False)
    slope = model['memory']['slope']
    expected = _class_model.at(_class_model.envelope(basis['pods_profile'], slope), slope, 110)
    assert warm['class_model']['raised'] and not warm['class_model']['cold']
    assert warm['reserved_memory_bytes'] == _recommend.ceil_to(expected, MIB)
    # Its own envelope, not its class's: the other node's 400 MiB more does not raise it.
    assert warm['reserved_memory_bytes'] < _class_model.at(model['memory']['envelope'], slope, 110)
    young, model, _basis = decided(own, young=True)
    assert young['reserved_memory_bytes'] == _recommend.ceil_to(
        _class_model.at(model['memory']['envelope'], model['memory']['slope'], 110), MIB)
    assert any("the class's (this node's history has not yet shown its bursts" in line for line in young['explanation'])


def test_a_profile_of_years_or_of_more_pods_than_any_node_is_refused():
    own = _class_model.profile(node_readings(500, 15, list(range(10, 40)), days=1))
    with pytest.raises(_class_model.ModelError, match='spans at most'):
        _class_model.checked(dict(own, last=own['first'] + 400 * DAY))
    bad = json.loads(json.dumps(own))
    bad['buckets'][0][1] = bad['buckets'][0][2] = (1 << 20) + 1
    with pytest.raises(_class_model.ModelError, match='at most'):
        _class_model.checked(bad)


def test_the_second_call_is_asked_for_a_young_node_the_class_raises_and_never_on_a_broken_own_profile():
    own = _class_model.profile(node_readings(500, 15, [30, 31], days=2.5, seed=6))
    high = _class_model.profile(node_readings(1200, 15, [30, 31], days=3, seed=7))
    record = {'pods_profile': own, 'max_pods': 110, 'cold_start': False, 'jumps': {'jump_days': 1}}
    # Both fall back to the prior slope alone and pooled; only the class's envelope, which a young node takes, differs.
    assert _headroom.model_changes(record, [{'pods_profile': high}])
    assert not _headroom.model_changes(dict(record, jumps={'jump_days': 2}), [{'pods_profile': high}])
    broken = dict(record, pods_profile=dict(own, buckets='x'))
    assert not _headroom.model_changes(broken, [{'pods_profile': high}])


def test_a_cold_node_with_no_prior_still_says_its_memory_rests_on_the_class_model():
    peers = [_class_model.profile(node_readings(700, 15, list(range(20, 71)), days=3, seed=seed)) for seed in (1, 2)]
    cold = node_readings(700, 15, [25], days=0.05, seed=3)
    basis = _headroom.basis(cold, cold[-1]['t'], 100.0, DAY, DAY)
    basis['class_model'] = {'model': _class_model.fit([basis['pods_profile']] + peers, 110), 'max_pods': 110}
    result = _recommend.recommend(_measured(1100), {'cold_start_prior': 'none'}, None, basis, {})
    assert result['cold_start']['floor'] == 'class model' and result['class_model']['raised']
