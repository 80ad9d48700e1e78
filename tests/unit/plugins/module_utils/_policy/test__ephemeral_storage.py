"""_policy/_ephemeral_storage: the ephemeral-storage recommendation and its allocatable, and that it is written only
with reserve_ephemeral_storage (an upgrade must not restart every kubelet for a resource nobody asked for)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _ephemeral_storage
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB, GIB = 1 << 20, 1 << 30
CAPACITY = 102626232 * 1024  # the Node of _rollout/test__api_health.py


def disk(non_pod_bytes, complete=True, image=None):
    return {'filesystem': {'path': '/var/lib/kubelet', 'capacity_bytes': CAPACITY, 'available_bytes': CAPACITY // 2,
                           'free_bytes': CAPACITY // 2, 'used_bytes': CAPACITY // 2},
            'kubelet_root_dir': {'path': '/var/lib/kubelet', 'non_pod_bytes': non_pod_bytes // 4},
            'logs': {'path': '/var/log', 'same_filesystem': True, 'non_pod_bytes': non_pod_bytes - non_pod_bytes // 4,
                     'journal_bytes': non_pod_bytes // 2},
            'image_filesystem': image, 'non_pod_bytes': non_pod_bytes, 'complete': complete, 'problems': []}


@pytest.mark.parametrize('non_pod,expected', [
    (100 * MIB, GIB),  # the floor: EKS's, OpenShift's 1 GiB
    (2 * GIB, 3 * GIB),  # x 1.5
    (1000 * MIB + 1, 1501 * MIB),  # 1500 MiB + 1.5 B, up to whole MiB
])
def test_reserved_is_the_measured_use_times_the_factor_at_least_the_floor(non_pod, expected):
    result = _ephemeral_storage.recommend(disk(non_pod), {}, _defaults.EVICTION_HARD)
    assert result['recommended_bytes'] == expected
    assert result['system_reserved'] is not None and result['kube_reserved'] is None
    # Allocatable beside it, the kubelet's arithmetic: capacity - reserved - 10 % nodefs in float32.
    assert result['allocatable_now']['allocatable_bytes'] == 94580335255
    assert result['allocatable_recommended']['allocatable_bytes'] == 94580335255 - expected
    assert not result['written']
    assert any('not written' in line for line in result['explanation'])


def test_it_goes_where_today_holds_it():
    eks = {'kube_reserved': {'memory': '1Gi', 'ephemeral-storage': '1Gi'}, 'system_reserved': {}}
    assert _ephemeral_storage.maps_with(eks, 3 * GIB) == ('3Gi', None)
    both = {'kube_reserved': {'ephemeral-storage': '1Gi'}, 'system_reserved': {'ephemeral-storage': '1Gi'}}
    assert _ephemeral_storage.maps_with(both, 3 * GIB) == ('1Gi', '2Gi')
    assert _ephemeral_storage.maps_with({}, 3 * GIB) == (None, '3Gi')


def test_an_unmeasured_filesystem_recommends_nothing_and_says_why():
    result = _ephemeral_storage.recommend({'non_pod_bytes': None, 'filesystem': None,
                                           'problems': ["the kubelet's root dir /var/lib/kubelet not measured: gone"]},
                                          {}, {})
    assert result['recommended_bytes'] is None and 'gone' in result['reason']


def test_a_separate_image_filesystem_is_accounted_but_leaves_allocatable_alone():
    image = {'path': '/var/lib/containerd', 'separate': True, 'capacity_bytes': 200 * GIB}
    result = _ephemeral_storage.recommend(disk(GIB, image=image), {}, _defaults.EVICTION_HARD)
    plain = _ephemeral_storage.recommend(disk(GIB), {}, _defaults.EVICTION_HARD)
    assert result['allocatable_recommended']['allocatable_bytes'] == plain['allocatable_recommended']['allocatable_bytes']
    assert result['allocatable_recommended']['imagefs']['eviction_hard_imagefs_bytes'] == int(
        200 * GIB * 0.15000000596046448)


# --- through _gather.recommend and the decision: the option decides whether it is written ---------------------------
@pytest.fixture
def measured(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=600 * MIB, active_file_bytes=50 * MIB,
                         inactive_file_bytes=300 * MIB)
    cgroup_v2.make_group(root, 'system.slice', anon_bytes=200 * MIB, active_file_bytes=10 * MIB,
                         inactive_file_bytes=90 * MIB)
    options = _gather.with_defaults({'cgroup_root': root, 'kubelet_process_names': ['no/kubelet'],
                                     'runtime_process_names': ['no/runtime'], 'sample_seconds': 0, 'history': False,
                                     'kubelet_config_path': str(tmp_path / 'none.yaml')})
    measurement = _gather.measure(options, sleep=lambda _s: None)
    measurement['ephemeral_storage'] = disk(2 * GIB)
    return options, measurement


def _decided(options, measurement, current):
    measurement = dict(measurement, current=current)
    history = {'basis': None, 'problems': []}
    history['basis'] = _gather._headroom.basis([_gather.reading_from(measurement, 'module', 1000.0)], 1000.0, 100.0,
                                               86400, 86400, 7 * 86400)
    _formulas, recommendation, decision = _gather.recommend(options, measurement, history)
    return recommendation, decision


def test_off_by_default_today_s_maps_are_written_back_and_nothing_moves_for_it(measured):
    options, measurement = measured
    recommendation, _decision_ = _decided(options, measurement, None)
    current = {'kube_reserved': dict(recommendation['kube_reserved'], **{'ephemeral-storage': '1Gi'}),
               'system_reserved': dict(recommendation['system_reserved']), 'eviction_hard': _defaults.EVICTION_HARD}
    recommendation, decision = _decided(options, measurement, current)
    assert recommendation['ephemeral_storage']['recommended_bytes'] == 3 * GIB
    assert 'ephemeral-storage' not in recommendation['system_reserved']
    assert decision['action'] == 'keep' and decision['ephemeral_storage'] is None
    assert decision['kube_reserved']['ephemeral-storage'] == '1Gi'
    assert 'ephemeral-storage' not in decision['system_reserved']


def test_with_the_option_it_is_written_where_today_holds_it_and_decided_like_memory(measured):
    options, measurement = measured
    options = dict(options, reserve_ephemeral_storage=True)
    recommendation, _decision_ = _decided(options, measurement, None)
    current = {'kube_reserved': {k: v for k, v in recommendation['kube_reserved'].items() if k != 'ephemeral-storage'},
               'system_reserved': {k: v for k, v in recommendation['system_reserved'].items()
                                   if k != 'ephemeral-storage'},
               'eviction_hard': _defaults.EVICTION_HARD}
    current['kube_reserved']['ephemeral-storage'] = '1Gi'  # EKS's: kubeReserved holds it
    recommendation, decision = _decided(options, measurement, current)
    assert recommendation['ephemeral_storage']['written']
    assert decision['ephemeral_storage']['action'] == 'increase' and decision['action'] == 'increase'
    assert decision['kube_reserved']['ephemeral-storage'] == '3Gi'
    assert 'ephemeral-storage' not in decision['system_reserved']
    # Memory and CPU kept as they are: only ephemeral-storage moves.
    assert decision['memory']['action'] == 'keep' and decision['cpu']['action'] == 'keep'


def test_an_ephemeral_decrease_waits_like_memorys():
    current = {'kube_reserved': {}, 'system_reserved': {'ephemeral-storage': '10Gi'}}
    recommendation = {'kube_reserved': {}, 'system_reserved': {'ephemeral-storage': '1Gi'}}
    young = _decision.decide(current, recommendation, {}, {'span_seconds': 3600, 'stabilization_seconds': 86400})
    assert young['ephemeral_storage']['action'] == 'keep'
    old = _decision.decide(current, recommendation, {}, {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400})
    assert old['ephemeral_storage']['action'] == 'decrease'
    assert old['system_reserved']['ephemeral-storage'] == '1Gi'
    kept = _decision.decide(current, recommendation, {'allow_decrease': False},
                            {'span_seconds': 2 * 86400, 'stabilization_seconds': 86400})
    assert kept['ephemeral_storage']['action'] == 'keep' and kept['system_reserved']['ephemeral-storage'] == '10Gi'
