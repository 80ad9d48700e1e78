"""The recommendation arithmetic: each number checked against the formula in docs/arithmetic.md."""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas as formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._quantity import parse_quantity, milli_value

GI, MI = 1 << 30, 1 << 20


def measured(**overrides):
    values = dict(mem_total_bytes=10 * GI, mem_available_bytes=1 * GI, kubepods_working_set_bytes=7 * GI,
                  kube_components_working_set_bytes=512 * MI, capacity_millicores=4000,
                  non_pod_millicores=300, kube_components_millicores=150)
    values.update(overrides)
    return values


def settled(values, **settings):
    """Recommend from a history of many samples at these values, with no floor: the plain arithmetic."""
    basis = {'samples': 100, 'span_seconds': 7 * 86400, 'percentile': 100.0,
             'non_pod_bytes': max(0, values['mem_total_bytes'] - values['mem_available_bytes']
                                  - values['kubepods_working_set_bytes']),
             'non_pod_millicores': values['non_pod_millicores'],
             # A week of steady readings: warm, six days of jumps, none above the day before (_headroom.basis).
             'jumps': {'warm': True, 'jump_days': 6, 'memory_jump_bytes': 0}}
    options = dict({'min_reserved': '0'}, **settings)
    return _recommend.recommend(values, options, None, basis, formulas.all_formulas(values['mem_total_bytes'], 4))


def total_memory(rec):
    return int(parse_quantity(rec['kube_reserved']['memory']) + parse_quantity(rec['system_reserved']['memory']))


def test_the_poc_example_plus_headroom():
    # PoC: MemTotal 10Gi, working set 7Gi, available 1Gi -> non-pod 2Gi; the percent rule adds 50% (issue 29).
    rec = settled(measured(), memory_headroom_rule='percent')
    non_pod = 2 * GI
    assert rec['reserved_memory_bytes'] == -(-(non_pod + non_pod // 2) // MI) * MI
    assert total_memory(rec) == rec['reserved_memory_bytes']
    # The kubelet + runtime hold a quarter of non-pod memory, so kubeReserved gets a quarter, rounded up.
    assert parse_quantity(rec['kube_reserved']['memory']) == -(-rec['reserved_memory_bytes'] // 4 // MI) * MI


def test_minimum_headroom_applies_to_small_usage():
    # The shipped floor of the headroom (memory_headroom_min_bytes, 768 MiB since issue 38).
    rec = settled(measured(mem_available_bytes=3 * GI - 10 * MI))
    assert rec['memory_headroom_bytes'] == 768 * MI
    assert rec['reserved_memory_bytes'] == 778 * MI
    low = settled(measured(mem_available_bytes=3 * GI - 10 * MI), memory_headroom_min_bytes=100 * MI)
    assert low['reserved_memory_bytes'] == 110 * MI


def test_cpu_recommendation_and_split():
    rec = settled(measured())
    assert rec['reserved_millicores'] == 300 + 50  # 10% of 300m is below the 50m minimum
    kube = milli_value(parse_quantity(rec['kube_reserved']['cpu']))
    system = milli_value(parse_quantity(rec['system_reserved']['cpu']))
    assert kube + system == 350
    assert kube == 175  # the kubelet + runtime used half of non-pod CPU


def test_negative_non_pod_is_reported_and_floored():
    rec = settled(measured(mem_available_bytes=4 * GI))
    assert any('negative' in line for line in rec['explanation'])
    assert rec['reserved_memory_bytes'] == 768 * MI  # 0 + the floor


def test_allocatable_subtracts_default_hard_eviction_when_no_config():
    rec = settled(measured())
    assert rec['eviction_hard_memory_bytes'] == 100 * MI
    expected = 10 * GI - rec['reserved_memory_bytes'] - 100 * MI
    assert parse_quantity(rec['allocatable']['memory']) == expected
    assert rec['kubepods_memory_limit_bytes'] == 10 * GI - rec['reserved_memory_bytes']


def test_explanation_names_every_input():
    rec = _recommend.recommend(measured())
    text = '\n'.join(rec['explanation'])
    for figure in (10 * GI, 1 * GI, 7 * GI, 2 * GI):
        assert str(figure) in text


def test_warns_when_pods_already_use_more_than_the_new_limit():
    rec = _recommend.recommend(measured(kubepods_working_set_bytes=int(9.9 * GI), mem_available_bytes=0,
                                        mem_total_bytes=10 * GI), {'memory_headroom_min_bytes': GI})
    assert any(line.startswith('WARNING') for line in rec['explanation'])


def test_one_reading_without_a_prior_takes_the_cap_and_says_so():
    # No formulas, so no cold-start prior: one reading has seen nothing of the node's jumps, so the jumps rule adds
    # the most it ever adds (memory_headroom_max_bytes, 2 GiB); a steady week, the floor (768 MiB). Under the
    # percent rule both get half of P (no widening since issue 29).
    single = _recommend.recommend(measured(), {'min_reserved': '0'})
    history = settled(measured())
    assert single['single_reading'] and not history['single_reading']
    assert single['memory_headroom_bytes'] == 2 * GI and history['memory_headroom_bytes'] == 768 * MI
    assert any('one reading' in line for line in single['explanation'])
    percent = _recommend.recommend(measured(), {'min_reserved': '0', 'memory_headroom_rule': 'percent'})
    assert percent['memory_headroom_bytes'] == settled(measured(), memory_headroom_rule='percent')[
        'memory_headroom_bytes'] == GI


def test_min_reserved_floor_and_ceiling():
    small = settled(measured(mem_available_bytes=3 * GI - 10 * MI), min_reserved='512Mi',
                    memory_headroom_min_bytes=100 * MI)
    assert small['reserved_memory_bytes'] == 512 * MI
    capped = settled(measured(mem_available_bytes=0, kubepods_working_set_bytes=0), max_reserved_fraction=0.25)
    assert capped['reserved_memory_bytes'] == int(10 * GI * 0.25) // MI * MI
    assert any('capped' in line for line in capped['explanation'])


def test_floor_policy_and_formula_policy():
    floored = settled(measured(mem_available_bytes=3 * GI - 10 * MI), floor_policy='gke')
    assert floored['reserved_memory_bytes'] >= formulas.gke(10 * GI, 4)['reserved_memory_bytes']
    eks = settled(measured(), policy='eks')
    assert total_memory(eks) == -(-formulas.eks(10 * GI, 4)['reserved_memory_bytes'] // MI) * MI


def test_cpu_is_capped_too():
    busy = settled(measured(non_pod_millicores=3900, capacity_millicores=4000))
    assert busy['reserved_millicores'] == 2000
    assert any('reserved CPU capped' in line for line in busy['explanation'])


# Issue 36: a report says where its figure came from. A cold start names its floor beside the measured figure and
# says when the measurement takes over.
HOUR = 3600


def short_history(span_seconds, source, since=1000000.0, non_pod_bytes=300 * MI):
    return {'samples': 20, 'span_seconds': span_seconds, 'percentile': 100.0, 'non_pod_bytes': non_pod_bytes,
            'non_pod_millicores': 40, 'history_source': source, 'history_since': since}


def test_a_cold_start_names_its_floor_beside_the_measured_figure_and_when_it_takes_over():
    values = measured(mem_available_bytes=10 * GI - 7 * GI - 300 * MI)
    # The percent rule, whose cold figure stays under GKE's here (the jumps rule gives a cold node its 2 GiB cap).
    percent = {'memory_headroom_rule': 'percent', 'memory_headroom_min_bytes': 100 * MI}
    rec = _recommend.recommend(values, percent, None, short_history(2 * HOUR, 'node'),
                               formulas.all_formulas(values['mem_total_bytes'], 4))
    cold = rec['cold_start']
    gke = formulas.gke(10 * GI, 4)
    assert (cold['floor'], cold['floor_memory_bytes'], cold['floor_millicores']) == (
        'gke', -(-gke['reserved_memory_bytes'] // MI) * MI, gke['reserved_millicores'])
    # P 300 MiB + 50 % headroom (docs/arithmetic.md), below GKE's figure: the floor is the figure.
    assert (cold['measured_memory_bytes'], cold['raised']) == (450 * MI, True)
    assert rec['reserved_memory_bytes'] == cold['floor_memory_bytes']
    # 90 % of the 24 h reaction time after the oldest sample (_headroom.WARM_SHARE).
    assert cold['takes_over_at'] == 1000000.0 + 0.9 * 24 * HOUR
    assert (cold['history_source'], cold['history_span_seconds']) == ('node', 2 * HOUR)


def test_a_cold_start_with_no_history_never_takes_over_by_itself():
    values = measured()
    rec = _recommend.recommend(values, {}, None, short_history(0, 'none', since=None),
                               formulas.all_formulas(values['mem_total_bytes'], 4))
    assert rec['cold_start']['takes_over_at'] is None and rec['cold_start']['history_source'] == 'none'


def test_a_class_prior_is_named_as_the_class():
    values = measured()
    basis = dict(short_history(HOUR, 'node'), class_prior=(3 * GI, 500, 2))
    cold = _recommend.recommend(values, {}, None, basis, formulas.all_formulas(10 * GI, 4))['cold_start']
    assert (cold['floor'], cold['floor_memory_bytes'], cold['floor_millicores']) == ('class', 3 * GI, 500)


def test_a_warm_history_or_a_vendor_policy_has_no_cold_start():
    values = measured()
    assert settled(values)['cold_start'] is None
    vendor = _recommend.recommend(values, {'policy': 'eks'}, None, short_history(HOUR, 'node'),
                                  formulas.all_formulas(10 * GI, 4))
    assert vendor['cold_start'] is None


def _no_components(current=None):
    values = measured(kube_components_working_set_bytes=0, kube_components_millicores=0, components_found=False)
    basis = {'samples': 100, 'span_seconds': 7 * 86400, 'percentile': 100.0, 'non_pod_bytes': 2 * GI,
             'non_pod_millicores': 300}
    return _recommend.recommend(values, {'min_reserved': '0'}, current, basis, formulas.all_formulas(10 * GI, 4))


def test_no_kubelet_or_runtime_process_found_leaves_kube_reserved_out():
    # k3s, RKE2: the kubelet runs inside another binary. Its share is unknown, not measured as 0: no kubeReserved '0'.
    rec = _no_components()
    assert rec['kube_reserved'] == {}
    assert parse_quantity(rec['system_reserved']['memory']) == rec['reserved_memory_bytes']
    assert milli_value(parse_quantity(rec['system_reserved']['cpu'])) == rec['reserved_millicores']
    assert any('no kubelet or container runtime process was found' in line for line in rec['explanation'])
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision
    decision = _decision.decide({'system_reserved': {'memory': '100Mi'}}, rec, {}, {'span_seconds': 7 * 86400})
    assert decision['action'] == 'increase' and decision['kube_reserved'] == {}


def test_no_process_found_keeps_the_configured_kube_reserved_and_reserves_the_rest_as_system():
    current = {'kube_reserved': {'memory': '512Mi', 'cpu': '100m'}, 'system_reserved': {}}
    rec = _no_components(current)
    assert rec['kube_reserved'] == {'memory': '512Mi', 'cpu': '100m'}
    assert parse_quantity(rec['system_reserved']['memory']) == rec['reserved_memory_bytes'] - 512 * MI
    assert total_memory(rec) == rec['reserved_memory_bytes']
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision
    decision = _decision.decide(current, rec, {}, {'span_seconds': 7 * 86400})
    assert decision['kube_reserved'] == {'memory': '512Mi', 'cpu': '100m'}


CONTROL_PLANE = {'detected': True, 'why': 'the static pods in /etc/kubernetes/manifests run etcd (etcd.yaml)'}


def test_a_control_plane_node_reserves_at_least_openshifts_fixed_control_plane_reservation():
    # 10 MiB and 20m measured: P + headroom is 778 MiB and 70m, under the control-plane floor of 1 GiB and 500m.
    quiet = measured(mem_available_bytes=3 * GI - 10 * MI, non_pod_millicores=20)
    worker = settled(quiet)
    control_plane = settled(dict(quiet, control_plane=CONTROL_PLANE))
    assert worker['reserved_memory_bytes'] == 778 * MI and worker['reserved_millicores'] == 70
    assert worker['control_plane_floor'] is None
    assert control_plane['reserved_memory_bytes'] == 1024 * MI and control_plane['reserved_millicores'] == 500
    assert total_memory(control_plane) == 1024 * MI
    assert control_plane['control_plane_floor'] == {'memory_bytes': 1024 * MI, 'millicores': 500,
                                                    'raised': ['memory', 'cpu'], 'why': CONTROL_PLANE['why']}
    text = '\n'.join(control_plane['explanation'])
    assert 'control-plane node (the static pods in /etc/kubernetes/manifests run etcd (etcd.yaml))' in text
    assert 'reserved memory raised to the control-plane floor: 1024 MiB' in text
    assert 'reserved CPU raised to the control-plane floor: 500m' in text
    assert 'control-plane' not in '\n'.join(worker['explanation'])
    # Not detected (or detection's dict says no): no floor.
    assert settled(dict(quiet, control_plane={'detected': False}))['reserved_memory_bytes'] == 778 * MI


def test_the_control_plane_floor_raises_nothing_above_it_and_the_ceiling_still_caps_it():
    busy = settled(dict(measured(), control_plane=CONTROL_PLANE))  # 2 GiB non-pod: above the floor
    assert busy['reserved_memory_bytes'] == settled(measured())['reserved_memory_bytes'] > 1024 * MI
    assert busy['control_plane_floor']['raised'] == ['cpu']
    small = settled(measured(mem_total_bytes=2 * GI, mem_available_bytes=GI, kubepods_working_set_bytes=GI - 10 * MI,
                             control_plane=CONTROL_PLANE), max_reserved_fraction=0.25)
    assert small['reserved_memory_bytes'] == 512 * MI  # 2 GiB x 0.25: the kubelet must still have room for the pods
    assert any(line.startswith('WARNING: reserved memory capped') for line in small['explanation'])


def test_a_vendor_policy_is_taken_as_named_on_a_control_plane_node():
    rec = settled(dict(measured(), control_plane=CONTROL_PLANE), policy='gke')
    assert rec['control_plane_floor'] is None and rec['reserved_memory_bytes'] == formulas.gke(10 * GI, 4)['reserved_memory_bytes']
