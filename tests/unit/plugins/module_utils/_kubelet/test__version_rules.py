"""_version_rules against the kubelet sources named in its docstring.

The rows are literals read from those sources (kep.yaml milestones, defaults.go, validation_linux.go,
validation.go), not computed by the module: a rule that moves to another release fails its row.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules as kv

# What `kubelet --version` prints on real nodes and distributions: (output, version, git_version).
VERSION_TEXTS = [
    ('Kubernetes v1.35.0', '1.35.0', 'v1.35.0'),
    ('Kubernetes v1.31.2-eks-7f9249a', '1.31.2', 'v1.31.2-eks-7f9249a'),
    ('Kubernetes v1.35.7+k3s1', '1.35.7', 'v1.35.7+k3s1'),
    ('Kubernetes v1.36.0-rc.1\n', '1.36.0', 'v1.36.0-rc.1'),
    ('Kubernetes v1.28.15', '1.28.15', 'v1.28.15'),
]


@pytest.mark.parametrize('text,version,git_version', VERSION_TEXTS)
def test_parse_reads_what_kubelet_version_prints(text, version, git_version):
    parsed = kv.parse(text)
    assert (parsed['version'], parsed['git_version']) == (version, git_version)


@pytest.mark.parametrize('text', ['', 'kubelet: command not found', 'Kubernetes', None])
def test_parse_without_a_version_is_none(text):
    assert kv.parse(text) is None


def v(text):
    return kv.parse('Kubernetes ' + text)


# (kubelet, cgroup version, config, refused?) for failCgroupV1: defaults.go (true from 1.35, KEP-5573), the field
# from 1.31 (KEP-4569) defaulting to false, validation_linux.go refusing true on a host not in unified mode.
FAIL_CGROUP_V1_ROWS = [
    ('v1.35.0', 'v1', {}, True),                          # the 1.35 default on a v1 node: does not start
    ('v1.36.2', 'v1', {}, True),
    ('v1.35.0', 'v1', {'failCgroupV1': False}, False),    # the supported opt-out
    ('v1.35.0', 'v2', {}, False),                         # unified mode: nothing to refuse
    ('v1.34.3', 'v1', {}, False),                         # 1.31-1.34: default false
    ('v1.34.3', 'v1', {'failCgroupV1': True}, True),      # ... but an explicit true is refused there too
    ('v1.31.0', 'v1', {'failCgroupV1': True}, True),
    ('v1.30.9', 'v1', {'failCgroupV1': True}, False),     # no such field before 1.31: ignored
]


@pytest.mark.parametrize('version,cgroup,config,refused', FAIL_CGROUP_V1_ROWS)
def test_fail_cgroup_v1_refusal_names_the_field(version, cgroup, config, refused):
    refusals = kv.check(v(version), cgroup, config)['refusals']
    assert bool(refusals) == refused
    if refused:
        assert 'failCgroupV1' in refusals[0] and 'cgroup v1' in refusals[0]


def test_fail_cgroup_v1_with_an_unknown_version_warns_and_honours_an_explicit_true():
    assert kv.check(None, 'v1', {})['refusals'] == []
    assert any('failCgroupV1' in w for w in kv.check(None, 'v1', {})['warnings'])
    assert kv.check(None, 'v1', {'failCgroupV1': True})['refusals']
    assert kv.fail_cgroup_v1(None, {}) is None


def test_single_process_oom_kill_false_is_refused_on_cgroup_v1_only():
    config = {'failCgroupV1': False, 'singleProcessOOMKill': False}
    assert kv.check(v('v1.35.0'), 'v1', config)['refusals']
    assert kv.check(v('v1.35.0'), 'v2', config)['refusals'] == []


# enforceNodeAllocatable compressible keys: 1.32 (kubernetes/kubernetes#125982).
@pytest.mark.parametrize('version,refused', [('v1.31.5', True), ('v1.32.0', False), ('v1.35.0', False)])
def test_compressible_enforcement_keys_exist_from_1_32(version, refused):
    config = {'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'], 'systemReservedCgroup': '/system.slice'}
    refusals = kv.check(v(version), 'v2', config)['refusals']
    assert bool(refusals) == refused
    if refused:
        assert 'system-reserved-compressible' in refusals[0]


# memoryReservationPolicy: 1.36 (KEP-2570); ignored (lenient decoding) before, only None/TieredReservation after,
# and TieredReservation only with the MemoryQoS gate on (validation.go: "requires MemoryQoS feature gate").
@pytest.mark.parametrize('version,cgroup,policy,gates,refused,warned', [
    ('v1.35.0', 'v2', 'TieredReservation', {}, False, True),
    ('v1.36.0', 'v2', 'TieredReservation', {'MemoryQoS': True}, False, False),
    ('v1.36.0', 'v2', 'TieredReservation', {}, True, False),          # alpha in 1.36: gate off by default
    ('v1.37.0', 'v2', 'TieredReservation', {'MemoryQoS': False}, True, False),
    ('v1.37.0', 'v2', 'TieredReservation', {}, False, False),         # beta in 1.37: on by default
    ('v1.37.0', 'v1', 'TieredReservation', {'MemoryQoS': True}, False, True),   # nothing to write on v1
    ('v1.36.0', 'v2', 'Tiered', {'MemoryQoS': True}, True, False),
    ('v1.36.0', 'v2', 'None', {}, False, False),
])
def test_memory_reservation_policy_by_version(version, cgroup, policy, gates, refused, warned):
    config = {'memoryReservationPolicy': policy, 'featureGates': gates, 'failCgroupV1': False}
    result = kv.check(v(version), cgroup, config)
    assert bool(result['refusals']) == refused
    assert any('memoryReservationPolicy' in w for w in result['warnings']) == warned
    if refused:
        assert 'memoryReservationPolicy' in result['refusals'][0]


@pytest.mark.parametrize('version,gates,enabled', [
    (None, {}, None), (None, {'MemoryQoS': True}, True), ('v1.36.9', {}, False), ('v1.37.0', {}, True),
    ('v1.37.0', {'MemoryQoS': False}, False),
])
def test_memory_qos_gate_from_config_or_version_default(version, gates, enabled):
    assert kv.memory_qos_enabled(v(version) if version else None, {'featureGates': gates}) is enabled


# --config-dir: unknown before 1.28; 1.28 and 1.29 need KUBELET_CONFIG_DROPIN_DIR_ALPHA; from 1.30 nothing.
@pytest.mark.parametrize('version,environment,refused', [
    ('v1.27.16', {}, True),
    ('v1.28.0', {}, True),
    ('v1.29.4', {'KUBELET_CONFIG_DROPIN_DIR_ALPHA': None}, False),
    ('v1.30.0', {}, False),
    ('v1.35.0', {}, False),
])
def test_config_dir_by_version(version, environment, refused):
    refusals = kv.check(v(version), 'v2', {}, config_dir_in_use=True, environment=environment)['refusals']
    assert bool(refusals) == refused
    assert kv.check(v(version), 'v2', {}, config_dir_in_use=False)['refusals'] == []


def test_features_by_version():
    assert kv.features(v('v1.31.0')) == {
        'fail_cgroup_v1_field': True, 'fail_cgroup_v1_default_true': False, 'compressible_enforcement': False,
        'memory_reservation_policy': False, 'config_dir': True, 'config_dir_without_environment': True,
        'memory_qos_on_by_default': False, 'memory_throttling_factor_unset_by_default': False}
    assert kv.features(v('v1.37.0'))['memory_qos_on_by_default'] is True
    assert kv.features(v('v1.37.0'))['memory_throttling_factor_unset_by_default'] is True
    assert kv.features(v('v1.36.4'))['memory_throttling_factor_unset_by_default'] is False
    assert set(kv.features(None).values()) == {None}


def test_a_v1_node_is_reported_at_end_of_life_whatever_its_kubelet():
    for version in (None, v('v1.30.0'), v('v1.35.0')):
        assert kv.END_OF_LIFE in kv.check(version, 'v1', {'failCgroupV1': False})['warnings']
    assert kv.END_OF_LIFE not in kv.check(v('v1.35.0'), 'v2', {})['warnings']


# memoryThrottlingFactor: validation.go (0ea83df1, 001332b0) refuses a factor outside (0, 1.0] whatever the MemoryQoS
# gate; a non-number fails decoding into the float64; on cgroup v1 nothing writes memory.high (a warning).
@pytest.mark.parametrize('version,cgroup,factor,refused,warned', [
    ('v1.37.0', 'v2', 1.5, True, False),
    ('v1.37.0', 'v2', 0, True, False),            # "greater than 0"
    ('v1.37.0', 'v2', -0.1, True, False),
    ('v1.36.2', 'v2', 1.0001, True, False),
    ('v1.31.0', 'v2', 2, True, False),            # ungated already in the 1.31-era file
    ('v1.37.0', 'v2', 1.0, False, False),         # 1.0: memory.high = limit, allowed
    ('v1.37.0', 'v2', 1, False, False),           # an integer is a number
    ('v1.37.0', 'v2', 0.9, False, False),
    ('v1.37.0', 'v2', '0.9', True, False),        # a string does not decode into float64
    ('v1.37.0', 'v2', True, True, False),
    ('v1.37.0', 'v2', None, False, False),        # explicit null: unset, the 1.37 default
    ('v1.30.9', 'v2', 1.5, False, True),          # not read for this version: a warning
    ('v1.37.0', 'v1', 0.9, False, True),          # cgroup v1: no memory.high
])
def test_memory_throttling_factor_range_and_type(version, cgroup, factor, refused, warned):
    result = kv.check(v(version), cgroup, {'memoryThrottlingFactor': factor, 'failCgroupV1': False})
    assert bool(result['refusals']) == refused, result
    assert any('memoryThrottlingFactor' in w for w in result['warnings']) == warned, result
    if refused:
        assert 'memoryThrottlingFactor' in result['refusals'][0]


def test_memory_throttling_factor_refusal_with_an_unknown_version_is_a_warning():
    result = kv.check(None, 'v2', {'memoryThrottlingFactor': 1.5})
    assert result['refusals'] == []
    assert any('memoryThrottlingFactor 1.5' in w for w in result['warnings'])


# 1.37 (kubernetes/kubernetes#140007; KEP-2570 "Beta v1.37"): the default factor is nil, so no memory.high unless the
# config sets one; until 1.36 it is 0.9.
@pytest.mark.parametrize('version,config,factor', [
    ('v1.36.0', {}, 0.9),
    ('v1.36.9', {'memoryThrottlingFactor': None}, 0.9),   # defaulting fills a nil
    ('v1.37.0', {}, None),
    ('v1.37.3', {'memoryThrottlingFactor': 0.8}, 0.8),
    ('v1.37.0', {'memoryThrottlingFactor': 1}, 1.0),
    (None, {}, None),
    (None, {'memoryThrottlingFactor': 0.7}, 0.7),
])
def test_memory_throttling_factor_default_is_unset_from_1_37(version, config, factor):
    assert kv.memory_throttling_factor(v(version) if version else None, config) == factor


# NodeSystemPartition (KEP-5894) is in no release up to 1.37: the gate is unknown to those kubelets, and component-base
# refuses an unknown gate ("unrecognized feature gate"); systemPartition is an unknown field they drop (a warning).
PARTITION = {'memoryLimit': '4Gi', 'cpuset': '0-3', 'namespaces': ['kube-system']}


@pytest.mark.parametrize('version,gates,refused', [
    ('v1.37.0', {'NodeSystemPartition': True}, True),
    ('v1.37.5', {'NodeSystemPartition': False}, True),    # any value: the name is what is unknown
    ('v1.36.0', {'NodeSystemPartition': True}, True),
    ('v1.37.0', {'MemoryQoS': True}, False),
    ('v1.38.0', {'NodeSystemPartition': True}, False),    # after the last release read: a warning
])
def test_an_unreleased_feature_gate_is_refused(version, gates, refused):
    result = kv.check(v(version), 'v2', {'featureGates': gates})
    assert bool(result['refusals']) == refused, result
    if refused:
        assert 'unrecognized feature gate: NodeSystemPartition' in result['refusals'][0]
    if version == 'v1.38.0':
        assert any('NodeSystemPartition' in w for w in result['warnings'])


@pytest.mark.parametrize('version', ['v1.36.0', 'v1.37.0', 'v1.38.1', None])
def test_system_partition_is_a_warning_naming_its_budget_and_never_a_refusal(version):
    result = kv.check(v(version) if version else None, 'v2', {'systemPartition': PARTITION})
    assert result['refusals'] == []
    (warning,) = [w for w in result['warnings'] if 'systemPartition' in w]
    assert 'memoryLimit 4Gi' in warning and 'not subtracted from allocatable' in warning
    if version in ('v1.36.0', 'v1.37.0'):
        assert 'drops it' in warning


def test_an_empty_system_partition_says_nothing():
    assert kv.check(v('v1.37.0'), 'v2', {'systemPartition': {}}) == {'refusals': [], 'warnings': []}
