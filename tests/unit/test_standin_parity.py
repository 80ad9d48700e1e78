"""The same upstream test rows fed to the stand-in kubelet's own logic and to the collection's module_utils.

The stand-in (tests/standin/kubelet_logic/) and the collection were written separately from the
kubelet's source; each must reach the outcome upstream's own tests expect, so a bug in either shows up
here as a disagreement. Rows come from:
* k8s.io/apimachinery pkg/api/resource/quantity_test.go (TestQuantityParse, invalid inputs);
* kubernetes pkg/kubelet/eviction/helpers_test.go (TestParseThresholdConfig);
* kubernetes pkg/kubelet/apis/config/validation/validation_test.go (TestValidateKubeletConfiguration,
  the rows about reservations and enforceNodeAllocatable);
* kubernetes pkg/kubelet/cm/node_container_manager_linux_test.go (TestNodeAllocatableForEnforcement,
  TestNodeAllocatableReservationForScheduling, TestNodeAllocatableInputValidation);
* kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources (the worked example);
* RFC 7386 appendix A (the JSON merge patch the kubelet applies to --config-dir drop-ins);
* rows built from cmd/kubelet/app/server.go parseResourceList and node_container_manager_linux.go
  enforceExistingCgroup, which have no upstream table (marked as such).

Rows the collection gets wrong today are marked xfail(strict=True) with the issue that fixes them: when
the fix lands they pass, strict xfail turns that into a failure, and the mark comes off.
"""

from __future__ import annotations

import decimal
import os
import struct
import sys
from fractions import Fraction

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _eviction, _json_merge_patch, _node_allocatable, _quantity)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._config_rules import ValidationError, validate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
from kubelet_logic import allocatable, config as kubelet_config, eviction, quantity, validation  # noqa: E402
from kubelet_logic import version as standin_version  # noqa: E402

GI, MI = 1 << 30, 1 << 20


def issue13(reason, *values):
    # Rows the collection got wrong until issue 13's fixes; kept named so the history of each is findable.
    return pytest.param(*values, id='issue13: ' + reason)


def unmarked(rows):
    """The rows without their xfail marks: the stand-in must agree with upstream on every one."""
    return [row.values if hasattr(row, 'values') else row for row in rows]


def float32(number):
    return struct.unpack('f', struct.pack('f', number))[0]


# --- quantities: TestQuantityParse (input, exact value) and its invalid inputs -------------------------
QUANTITY_ROWS = [
    ('0', '0'), ('0n', '0'), ('0Ki', '0'), ('1', '1'), ('1Ki', '1024'), ('7Mi', '7340032'),
    ('6Gi', '6442450944'), ('3Ei', '3458764513820540928'), ('5n', '5e-9'), ('4u', '4e-6'), ('3m', '0.003'),
    ('8k', '8000'), ('7M', '7000000'), ('2P', '2e15'), ('1E', '1e18'), ('1E-3', '0.001'), ('1e3', '1000'),
    ('1.3E+6', '1300000'), ('100.035k', '100035'), ('0.0005k', '0.5'), ('0.5e-2', '0.005'),
    ('6.987654321G', '6987654321'), ('3.001n', '4e-9'), ('1.1E-9', '2e-9'), ('0.0000000005', '1e-9'),
    ('0.00000012345', '124e-9'), ('9Ei', '9223372036854775807'), ('9223372036854775807Ki', '9223372036854775807'),
    ('12E', '12e18'), ('100.035Ki', '102435.84'), ('0.05Gi', '53687091.2'), ('0.000000000001Ki', '2e-9'),
    ('.001', '0.001'), ('1.', '1'), ('1.G', '1e9'), ('-1Gi', '-1073741824'), ('+3m', '0.003'),
]
QUANTITY_INVALID = ['1.1.M', '1+1.0M', '0.1mi', '0.1am', 'aoeu', '.5i', '1i', '-3.01i', '-3.01e-', ' 1', '1 ', '',
                    '1K', '5e']


@pytest.mark.parametrize('text,exact', QUANTITY_ROWS)
def test_quantities_parse_to_upstream_values(text, exact):
    assert quantity.parse(text) == Fraction(decimal.Decimal(exact))
    assert _quantity.parse_quantity(text) == decimal.Decimal(exact)


@pytest.mark.parametrize('text', QUANTITY_INVALID)
def test_invalid_quantities_are_refused_by_both(text):
    with pytest.raises(ValueError):
        quantity.parse(text)
    with pytest.raises(ValueError):
        _quantity.parse_quantity(text)


@pytest.mark.parametrize('text,value,milli', [('0.1', 1, 100), ('1.0001', 2, 1001), ('100m', 1, 100),
                                              ('1Ki', 1024, 1024000), ('0.5Mi', 524288, 524288000)])
def test_value_and_milli_value_round_up(text, value, milli):
    # quantity.go Value()/MilliValue(): ScaledValue rounds up (TestQuantityRoundUp, TestScaledValue).
    assert (quantity.value(quantity.parse(text)), quantity.milli_value(quantity.parse(text))) == (value, milli)
    parsed = _quantity.parse_quantity(text)
    assert (_quantity.quantity_value(parsed), _quantity.milli_value(parsed)) == (value, milli)


# --- eviction: TestParseThresholdConfig -----------------------------------------------------------------
# (name, enforceNodeAllocatable, hard, soft, grace, min reclaim, refused?, expected hard memory.available)
EVICTION_ROWS = [
    ('no values', [], {}, {}, {}, {}, False, None),
    ('all memory eviction values', ['pods'], {'memory.available': '150Mi'}, {'memory.available': '300Mi'},
     {'memory.available': '30s'}, {'memory.available': '0'}, False, ('quantity', 150 * MI)),
    ('all memory eviction values in percentages', [], {'memory.available': '10%'}, {'memory.available': '30%'},
     {'memory.available': '30s'}, {'memory.available': '5%'}, False, ('percentage', float32(0.1))),
    ('disk eviction values', [], {'imagefs.available': '150Mi', 'nodefs.available': '100Mi'},
     {'imagefs.available': '300Mi', 'nodefs.available': '200Mi'},
     {'imagefs.available': '30s', 'nodefs.available': '30s'},
     {'imagefs.available': '2Gi', 'nodefs.available': '1Gi'}, False, None),
    ('disk eviction values in percentages', [], {'imagefs.available': '15%', 'nodefs.available': '10.5%'},
     {'imagefs.available': '30%', 'nodefs.available': '20.5%'},
     {'imagefs.available': '30s', 'nodefs.available': '30s'},
     {'imagefs.available': '10%', 'nodefs.available': '5%'}, False, None),
    ('inode eviction values', [], {'imagefs.inodesFree': '150Mi', 'nodefs.inodesFree': '100Mi'},
     {'imagefs.inodesFree': '300Mi', 'nodefs.inodesFree': '200Mi'},
     {'imagefs.inodesFree': '30s', 'nodefs.inodesFree': '30s'},
     {'imagefs.inodesFree': '2Gi', 'nodefs.inodesFree': '1Gi'}, False, None),
    issue13('a soft threshold of 0% is disabled, so it needs no grace period',
            'disable via 0%', [], {'memory.available': '0%'}, {'memory.available': '0%'}, {}, {}, False, None),
    issue13('a soft threshold of 100% is disabled, so it needs no grace period',
            'disable via 100%', [], {'memory.available': '100%'}, {'memory.available': '100%'}, {}, {}, False, None),
    ('invalid-signal', [], {'mem.available': '150Mi'}, {}, {}, {}, True, None),
    ('hard-signal-negative', [], {'memory.available': '-150Mi'}, {}, {}, {}, True, None),
    ('hard-signal-negative-percentage', [], {'memory.available': '-15%'}, {}, {}, {}, True, None),
    ('hard-signal-percentage-greater-than-100%', [], {'memory.available': '150%'}, {}, {}, {}, True, None),
    ('soft-signal-negative', [], {}, {'memory.available': '-150Mi'}, {}, {}, True, None),
    ('valid-and-invalid-signal', [], {'memory.available': '150Mi', 'invalid.foo': '150Mi'}, {}, {}, {}, True, None),
    ('soft-no-grace-period', [], {}, {'memory.available': '150Mi'}, {}, {}, True, None),
    ('soft-negative-grace-period', [], {}, {'memory.available': '150Mi'}, {'memory.available': '-30s'}, {}, True, None),
    ('negative-reclaim', [], {}, {}, {}, {'memory.available': '-300Mi'}, True, None),
]


def eviction_config(enforce, hard, soft, grace, reclaim):
    config = {'enforceNodeAllocatable': enforce or ['pods'], 'evictionHard': hard}
    for field, value in (('evictionSoft', soft), ('evictionSoftGracePeriod', grace), ('evictionMinimumReclaim', reclaim)):
        if value:
            config[field] = value
    return config


def standin_eviction(enforce, hard, soft, grace, reclaim):
    try:
        return eviction.parse_threshold_config(enforce, hard, soft, grace, reclaim)
    except eviction.EvictionError:
        return None


def collection_refuses(config):
    try:
        validate(dict(config))
    except ValidationError:
        return True
    return False


@pytest.mark.parametrize('name,enforce,hard,soft,grace,reclaim,refused,memory', unmarked(EVICTION_ROWS))
def test_eviction_thresholds_standin(name, enforce, hard, soft, grace, reclaim, refused, memory):
    thresholds = standin_eviction(enforce, hard, soft, grace, reclaim)
    assert (thresholds is None) == refused, name
    if thresholds is None:
        return
    hard_memory = [t for t in thresholds if t['signal'] == 'memory.available' and 'grace_period_ns' not in t]
    if memory is None:
        assert not hard_memory
    elif memory[0] == 'quantity':
        assert [t['quantity'] for t in hard_memory] == [memory[1]]
    else:
        assert [t['percentage'] for t in hard_memory] == [memory[1]]
    # Every soft threshold carries its 30s grace period; "pods" enforced copies the hard memory threshold.
    assert all(t['grace_period_ns'] == 30 * 10 ** 9 for t in thresholds if 'grace_period_ns' in t)
    assert any(t['signal'] == 'allocatableMemory.available' for t in thresholds) == ('pods' in enforce and bool(hard_memory))


@pytest.mark.parametrize('name,enforce,hard,soft,grace,reclaim,refused,memory', unmarked(EVICTION_ROWS))
def test_eviction_thresholds_collection_matches_the_standin_on_the_hard_memory_threshold(
        name, enforce, hard, soft, grace, reclaim, refused, memory):
    if refused or memory is None:
        return
    capacity = 10 * GI
    standin = eviction.hard_eviction_memory_bytes(standin_eviction(enforce, hard, soft, grace, reclaim), capacity)
    assert _eviction.hard_eviction_memory_bytes(hard, capacity) == standin


@pytest.mark.parametrize('name,enforce,hard,soft,grace,reclaim,refused,memory', EVICTION_ROWS)
def test_eviction_thresholds_collection(name, enforce, hard, soft, grace, reclaim, refused, memory):
    assert collection_refuses(eviction_config(enforce, hard, soft, grace, reclaim)) == refused, name


# --- config validation: TestValidateKubeletConfiguration rows about reservations ----------------------
# validation_test.go successConfig, as far as it touches reservations: both reserved cgroups named,
# cgroupsPerQOS on; enforceNodeAllocatable is the kubelet's default here.
BASE = {'cgroupsPerQOS': True, 'enforceNodeAllocatable': ['pods'], 'systemReservedCgroup': '/system.slice',
        'kubeReservedCgroup': '/kubelet.service', 'systemCgroups': '', 'cgroupRoot': ''}
CONFIG_ROWS = [
    ('Success', {}, False),
    ('specify EnforceNodeAllocatable without enabling CgroupsPerQOS',
     {'cgroupsPerQOS': False, 'enforceNodeAllocatable': ['pods']}, True),
    issue13('systemCgroups without cgroupRoot is refused upstream',
            'specify SystemCgroups without CgroupRoot', {'systemCgroups': '/', 'cgroupRoot': ''}, True),
    ('specify SystemReservedEnforcementKey without specifying SystemReservedCgroup',
     {'enforceNodeAllocatable': ['system-reserved'], 'systemReservedCgroup': ''}, True),
    ('specify SystemReservedCompressibleEnforcementKey without specifying SystemReservedCgroup',
     {'enforceNodeAllocatable': ['system-reserved-compressible'], 'systemReservedCgroup': ''}, True),
    ('specify SystemReservedCompressibleEnforcementKey with SystemReservedEnforcementKey',
     {'enforceNodeAllocatable': ['system-reserved-compressible', 'system-reserved'], 'systemReserved': {'cpu': '1'}},
     True),
    ('specify KubeReservedCompressibleEnforcementKey without specifying KubeReservedCgroup',
     {'enforceNodeAllocatable': ['kube-reserved-compressible'], 'kubeReservedCgroup': ''}, True),
    ('specify KubeReservedEnforcementKey without specifying KubeReservedCgroup',
     {'enforceNodeAllocatable': ['kube-reserved'], 'kubeReservedCgroup': ''}, True),
    ('specify KubeReservedCompressibleEnforcementKey with KubeReservedEnforcementKey',
     {'enforceNodeAllocatable': ['kube-reserved-compressible', 'kube-reserved'], 'kubeReserved': {'cpu': '1'}}, True),
    ('specify NodeAllocatableNoneKey with additional enforcements',
     {'enforceNodeAllocatable': ['none', 'kube-reserved']}, True),
    # Upstream's row repeats "none", which "none" with others refuses too; the second row isolates the rule.
    ('duplicated EnforceNodeAllocatable', {'enforceNodeAllocatable': ['none', 'none']}, True),
    issue13('duplicated enforceNodeAllocatable entries are refused upstream',
            'duplicated EnforceNodeAllocatable (pods twice; not an upstream row)', {'enforceNodeAllocatable': ['pods', 'pods']},
            True),
    ('invalid EnforceNodeAllocatable', {'enforceNodeAllocatable': ['invalid-enforce-node-allocatable']}, True),
    issue13('reservedSystemCPUs with systemReservedCgroup is refused upstream',
            'specify ReservedSystemCPUs with SystemReservedCgroup',
            {'reservedSystemCPUs': '0-3', 'systemReservedCgroup': '/system.slice', 'kubeReservedCgroup': ''}, True),
    issue13('reservedSystemCPUs with kubeReservedCgroup is refused upstream',
            'specify ReservedSystemCPUs with KubeReservedCgroup',
            {'reservedSystemCPUs': '0-3', 'kubeReservedCgroup': '/system.slice', 'systemReservedCgroup': ''}, True),
    # Not upstream rows: parseResourceList (server.go) and enforceExistingCgroup / getCgroupConfig
    # (node_container_manager_linux.go) have no table; these follow the code.
    ('parseResourceList: cpu, memory, ephemeral-storage and pid can be reserved',
     {'kubeReserved': {'cpu': '100m', 'memory': '1Gi', 'ephemeral-storage': '1Gi', 'pid': '1000'}}, False),
    ('parseResourceList: any other resource cannot', {'kubeReserved': {'nvidia.com/gpu': '1'}}, True),
    ('parseResourceList: a negative quantity cannot', {'systemReserved': {'memory': '-1Gi'}}, True),
    ('parseResourceList: a malformed quantity cannot', {'systemReserved': {'cpu': 'lots'}}, True),
    ('enforceExistingCgroup: kube-reserved enforced with a reservation',
     {'enforceNodeAllocatable': ['pods', 'kube-reserved'], 'kubeReserved': {'memory': '1Gi'}}, False),
    issue13('enforcing kube-reserved with an empty kubeReserved fails the container manager',
            'enforceExistingCgroup: kube-reserved enforced with no reservation',
            {'enforceNodeAllocatable': ['pods', 'kube-reserved']}, True),
    issue13('enforcing system-reserved with an empty systemReserved fails the container manager',
            'enforceExistingCgroup: system-reserved enforced with no reservation',
            {'enforceNodeAllocatable': ['pods', 'system-reserved']}, True),
]


def standin_refusal(config, cgroup_exists=lambda relative: True):
    """The stand-in's start-up decision for a config: the first refusal, or None."""
    errors = validation.validate_configuration(config)
    if errors:
        return errors[0]
    try:
        kube_reserved = validation.parse_resource_list(config.get('kubeReserved'))
        system_reserved = validation.parse_resource_list(config.get('systemReserved'))
        eviction.parse_threshold_config(config.get('enforceNodeAllocatable'), eviction.effective_eviction_hard(config),
                                        config.get('evictionSoft'), config.get('evictionSoftGracePeriod'),
                                        config.get('evictionMinimumReclaim'))
    except (validation.ValidationError, eviction.EvictionError) as exc:
        return str(exc)
    return validation.enforce_reserved_cgroups(config, kube_reserved, system_reserved, cgroup_exists)


@pytest.mark.parametrize('name,change,refused', unmarked(CONFIG_ROWS))
def test_config_rows_standin(name, change, refused):
    assert (standin_refusal(dict(BASE, **change)) is not None) == refused, name


@pytest.mark.parametrize('name,change,refused', CONFIG_ROWS)
def test_config_rows_collection(name, change, refused):
    assert collection_refuses(dict(BASE, **change)) == refused, name


def test_enforcing_on_a_cgroup_that_does_not_exist_stops_the_standin():
    # enforceExistingCgroup: cgroupManager.Validate fails for a missing group; the container manager does
    # not start. The collection has no node-independent form of this check to compare with here.
    config = dict(BASE, enforceNodeAllocatable=['pods', 'system-reserved'], systemReserved={'memory': '1Gi'},
                  systemReservedCgroup='/system-reserved.slice', cgroupDriver='systemd')
    asked = []
    refusal = standin_refusal(config, lambda relative: asked.append(relative) or False)
    assert 'does not exist' in refusal and asked == ['system.slice/system-reserved.slice']
    assert standin_refusal(config, lambda relative: True) is None


# --- allocatable: node_container_manager_linux_test.go and the documented example ----------------------
TEN = (10 * GI, 10000)  # getResourceList("10", "10Gi")
# (kube, system, hard memory.available, expected kubepods limit bytes, expected kubepods cpu shares,
#  expected scheduling reservation (millicores, bytes)). Shares are MilliCPUToShares of the expected
#  millicores, worked by hand: 9850m -> 10086, 9950m -> 10188, 10 -> 10240.
ALLOCATABLE_ROWS = [
    ({'cpu': '100m', 'memory': '100Mi'}, {'cpu': '50m', 'memory': '50Mi'}, {}, 10090 * MI, 10086, (150, 150 * MI)),
    ({'cpu': '100m', 'memory': '100Mi'}, {'cpu': '50m', 'memory': '50Mi'}, {'memory.available': '100Mi'},
     10090 * MI, 10086, (150, 250 * MI)),
    ({'cpu': '100m', 'memory': '100Mi'}, {'cpu': '50m', 'memory': '50Mi'}, {'memory.available': '5%'},
     10090 * MI, 10086, (150, 694157320)),
    ({}, {}, {}, 10 * GI, 10240, (0, 0)),
    ({'memory': '100Mi'}, {'cpu': '50m', 'memory': '50Mi'}, {}, 10090 * MI, 10188, (50, 150 * MI)),
    ({'cpu': '50m', 'memory': '100Mi'}, {'memory': '50Mi'}, {}, 10090 * MI, 10188, (50, 150 * MI)),
]


@pytest.mark.parametrize('kube,system,hard,limit_bytes,shares,reservation', ALLOCATABLE_ROWS)
def test_allocatable_rows_standin(kube, system, hard, limit_bytes, shares, reservation):
    derived = allocatable.compute(TEN[0], TEN[1], validation.parse_resource_list(kube),
                                  validation.parse_resource_list(system),
                                  eviction.parse_threshold_config([], hard, None, None, None), ['pods'])
    assert (derived['kubepods_memory_limit_bytes'], derived['kubepods_cpu_shares']) == (limit_bytes, shares)
    assert (derived['allocatable_millicores'], derived['allocatable_memory_bytes']) == (
        TEN[1] - reservation[0], TEN[0] - reservation[1])


@pytest.mark.parametrize('kube,system,hard,limit_bytes,shares,reservation', ALLOCATABLE_ROWS)
def test_allocatable_rows_collection(kube, system, hard, limit_bytes, shares, reservation):
    derived = _node_allocatable.compute(TEN[0], TEN[1], kube, system, hard, enforce_node_allocatable=['pods'])
    assert (derived['kubepods_memory_limit_bytes'], derived['kubepods_cpu_shares']) == (limit_bytes, shares)
    assert (derived['allocatable_millicores'], derived['allocatable_memory_bytes']) == (
        TEN[1] - reservation[0], TEN[0] - reservation[1])


def test_reservation_above_capacity_is_refused_by_both():
    # TestNodeAllocatableInputValidation's invalid row: 10 CPU / 11Gi node, kube 5/10Gi, system 5/10Gi, hard 2Gi.
    kube, system, hard = {'cpu': '5', 'memory': '10Gi'}, {'cpu': '5', 'memory': '10Gi'}, {'memory.available': '2Gi'}
    with pytest.raises(allocatable.AllocatableError, match='"memory" has a reservation'):
        allocatable.compute(11 * GI, 10000, validation.parse_resource_list(kube), validation.parse_resource_list(system),
                            eviction.parse_threshold_config([], hard, None, None, None), ['pods'])
    assert _node_allocatable.compute(11 * GI, 10000, kube, system, hard)['reservation_exceeds_capacity']['memory']


def test_the_documented_example_with_both():
    # reserve-compute-resources: 32Gi / 16 CPU node; kube 1 CPU 2Gi, system 500m 1Gi, eviction 500Mi:
    # allocatable 14.5 CPU and 29Gi - 500Mi ("28.5Gi" on the page, which rounds 500Mi to 0.5Gi).
    kube, system, hard = {'cpu': '1', 'memory': '2Gi'}, {'cpu': '500m', 'memory': '1Gi'}, {'memory.available': '500Mi'}
    standin = allocatable.compute(32 * GI, 16000, validation.parse_resource_list(kube),
                                  validation.parse_resource_list(system),
                                  eviction.parse_threshold_config([], hard, None, None, None), ['pods'])
    collection = _node_allocatable.compute(32 * GI, 16000, kube, system, hard)
    for derived in (standin, collection):
        assert derived['allocatable_millicores'] == 14500
        assert derived['allocatable_memory_bytes'] == 29 * GI - 500 * MI
        assert derived['kubepods_memory_limit_bytes'] == 29 * GI


# --- drop-in merging: RFC 7386 appendix A, the merge mergeKubeletConfigurations applies ------------------
RFC7386_ROWS = [
    ({'a': 'b'}, {'a': 'c'}, {'a': 'c'}), ({'a': 'b'}, {'b': 'c'}, {'a': 'b', 'b': 'c'}), ({'a': 'b'}, {'a': None}, {}),
    ({'a': 'b', 'b': 'c'}, {'a': None}, {'b': 'c'}), ({'a': ['b']}, {'a': 'c'}, {'a': 'c'}),
    ({'a': 'c'}, {'a': ['b']}, {'a': ['b']}), ({'a': {'b': 'c'}}, {'a': {'b': 'd', 'c': None}}, {'a': {'b': 'd'}}),
    ({'a': [{'b': 'c'}]}, {'a': [1]}, {'a': [1]}), (['a', 'b'], ['c', 'd'], ['c', 'd']), ({'a': 'b'}, ['c'], ['c']),
    ({'a': 'foo'}, None, None), ({'a': 'foo'}, 'bar', 'bar'), ({'e': None}, {'a': 1}, {'e': None, 'a': 1}),
    ([1, 2], {'a': 'b', 'c': None}, {'a': 'b'}), ({}, {'a': {'bb': {'ccc': None}}}, {'a': {'bb': {}}}),
]


@pytest.mark.parametrize('target,patch,expected', RFC7386_ROWS)
def test_merge_patch_examples_with_both(target, patch, expected):
    assert kubelet_config.merge_patch(target, patch) == expected
    assert _json_merge_patch.merge_patch(target, patch) == expected


# --- kubelet version: the failCgroupV1 default and refusal, the compressible keys ----------------------
# Rows built from defaults.go (FailCgroupV1 nil -> true from 1.35, KEP-5573), validation_linux.go
# (validateKubeletOSConfiguration) and the 1.32 enforcement keys (kubernetes/kubernetes#125982): no upstream table.
VERSION_ROWS = [
    ('v1.35.0', True, {}, True),
    ('v1.35.0', True, {'failCgroupV1': False}, False),
    ('v1.35.0', False, {}, False),
    ('v1.34.2', True, {}, False),
    ('v1.33.0', True, {'failCgroupV1': True}, True),
    ('v1.31.4', False, {'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'],
                        'systemReservedCgroup': '/system.slice', 'systemReserved': {'cpu': '100m'}}, True),
    ('v1.32.0', False, {'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'],
                        'systemReservedCgroup': '/system.slice', 'systemReserved': {'cpu': '100m'}}, False),
    # memoryReservationPolicy (KEP-2570, 1.36; validation.go 001332b0): None or TieredReservation, the latter only
    # with the MemoryQoS gate (alpha, off, in 1.36; beta, on, from 1.37); dropped as unknown before 1.36.
    ('v1.35.0', False, {'memoryReservationPolicy': 'TieredReservation'}, False),
    ('v1.36.0', False, {'memoryReservationPolicy': 'TieredReservation'}, True),
    ('v1.36.0', False, {'memoryReservationPolicy': 'TieredReservation', 'featureGates': {'MemoryQoS': True}}, False),
    ('v1.37.0', False, {'memoryReservationPolicy': 'TieredReservation'}, False),
    ('v1.37.0', False, {'memoryReservationPolicy': 'TieredReservation', 'featureGates': {'MemoryQoS': False}}, True),
    ('v1.36.0', False, {'memoryReservationPolicy': 'Hard', 'featureGates': {'MemoryQoS': True}}, True),
    ('v1.36.0', False, {'memoryReservationPolicy': 'None'}, False),
    # memoryThrottlingFactor (validation.go 0ea83df1/001332b0: (0, 1.0] whatever the gate; a float64 field) and its
    # 1.37 default, nil (kubernetes/kubernetes#140007): MemoryQoS on by default with no factor must start.
    ('v1.37.0', False, {'memoryThrottlingFactor': 1.5}, True),
    ('v1.36.0', False, {'memoryThrottlingFactor': 0}, True),
    ('v1.37.0', False, {'memoryThrottlingFactor': 1.0}, False),
    ('v1.37.0', False, {'memoryThrottlingFactor': '0.9'}, True),
    ('v1.37.0', False, {}, False),
    ('v1.37.0', False, {'memoryThrottlingFactor': None}, False),
    ('v1.36.0', False, {'featureGates': {'MemoryQoS': True}}, False),
    ('v1.37.0', True, {'failCgroupV1': False, 'memoryThrottlingFactor': 0.9}, False),
    # NodeSystemPartition (KEP-5894) is in no release up to 1.37: an unknown gate stops the kubelet (component-base
    # featuregate "unrecognized feature gate"); systemPartition is an unknown field, dropped.
    ('v1.37.0', False, {'featureGates': {'NodeSystemPartition': True}}, True),
    ('v1.36.1', False, {'featureGates': {'NodeSystemPartition': False}}, True),
    ('v1.37.0', False, {'systemPartition': {'memoryLimit': '4Gi', 'cpuset': '0-3', 'namespaces': ['kube-system']}},
     False),
]


def standin_version_errors(git_version, cgroup_v1, config):
    """The stand-in's start-up errors that depend on its version, in its order (gates, decoding, validation)."""
    version = standin_version.parse(git_version)
    errors = standin_version.feature_gate_errors(config, version)
    if errors:
        return errors
    try:
        kubelet_config.check_types(config, 'decoding')
    except kubelet_config.ConfigError as exc:
        return [str(exc)]
    config = standin_version.defaults(config, version)
    return (validation.validate_configuration(config) + standin_version.legacy_enforcement_errors(config, version)
            + standin_version.memory_reservation_errors(config, version)
            + standin_version.memory_throttling_errors(config, version) + standin_version.os_errors(config, cgroup_v1))


@pytest.mark.parametrize('git_version,cgroup_v1,change,refused', VERSION_ROWS)
def test_version_rows_standin(git_version, cgroup_v1, change, refused):
    errors = standin_version_errors(git_version, cgroup_v1, dict(BASE, **change))
    assert bool(errors) == refused, errors


@pytest.mark.parametrize('git_version,cgroup_v1,change,refused', VERSION_ROWS)
def test_version_rows_collection(git_version, cgroup_v1, change, refused):
    verdict = _version_rules.check(_version_rules.parse('Kubernetes ' + git_version), 'v1' if cgroup_v1 else 'v2',
                                   dict(BASE, **change))
    assert bool(verdict['refusals']) == refused, verdict


# --- the enforcement proposal (_cpu_enforcement): what the collection proposes, the stand-in starts with ----------
# Each row: the node's config, the reservation it would write, the kubelet version, the groups that exist. The
# collection proposes system-reserved-compressible for a starved system.slice and validates the change; the stand-in
# decides from its own reading of validation.go, the 1.32 keys and enforceExistingCgroup whether it would start with
# the config the proposal leads to. A proposal the stand-in refuses, or a refusal it would start with, is a bug in one.
STARVED_PSI = {'node': {}, 'note': None,
               'cgroups': {'/system.slice': {'cpu': {'some': {'avg10': 50.0, 'avg60': 40.0, 'avg300': 30.0}}}}}
PROPOSAL_ROWS = [
    ('systemd node, no reserved cgroup named', 'v1.34.2', {'cgroupDriver': 'systemd'}, {'cpu': '3'}, ('system.slice',)),
    ('cgroupfs node', 'v1.32.0', {}, {'cpu': '3', 'memory': '1Gi'}, ('system.slice',)),
    ('reservedSystemCPUs set', 'v1.34.2', {'reservedSystemCPUs': '0'}, {'cpu': '3'}, ('system.slice',)),
    ('a kubelet before the compressible keys', 'v1.31.4', {}, {'cpu': '3'}, ('system.slice',)),
    ('cgroupsPerQOS off', 'v1.34.2', {'cgroupsPerQOS': False, 'enforceNodeAllocatable': []}, {'cpu': '3'},
     ('system.slice',)),
    ('the group does not exist (removed since PSI was read)', 'v1.34.2', {'systemReservedCgroup': '/system.slice'},
     {'cpu': '3'}, ()),
    ('a reservation just above systemd\'s cpu.weight 100 (2600m: 102)', 'v1.34.2', {}, {'cpu': '2600m'}, ('system.slice',)),
]


def standin_start_errors(config, git_version, existing):
    errors = standin_version_errors(git_version, False, config)
    if errors:
        return errors
    config = standin_version.defaults(config, standin_version.parse(git_version))
    message = validation.enforce_reserved_cgroups(config, validation.parse_resource_list(config.get('kubeReserved')),
                                                  validation.parse_resource_list(config.get('systemReserved')),
                                                  lambda relative: relative in existing)
    return [message] if message else []


@pytest.mark.parametrize('name,git_version,config,system_reserved,existing', PROPOSAL_ROWS)
def test_the_standin_starts_with_what_the_collection_proposes_and_refuses_what_it_refuses(
        name, git_version, config, system_reserved, existing):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_enforcement
    version = _version_rules.parse('Kubernetes ' + git_version)
    proposal = _cpu_enforcement.propose(config, {'system_reserved': system_reserved}, STARVED_PSI, [], 'v2', 8000, {},
                                        version, driver=config.get('cgroupDriver'),
                                        cgroup_exists=lambda relative: relative in existing)
    assert proposal['validation'] is not None, proposal['reasons']  # starved and worth it: a change was checked
    # The config the proposal leads to, whether or not it was made: what the kubelet would be asked to start with.
    changed = dict(config, enforceNodeAllocatable=['pods', 'system-reserved-compressible'],
                   systemReserved=system_reserved)
    changed.setdefault('systemReservedCgroup', '/system.slice')
    collection_refused = proposal['validation']['refusal'] is not None
    assert proposal['proposed'] is not collection_refused, name
    errors = standin_start_errors(changed, git_version, existing)
    assert bool(errors) == collection_refused, (name, errors, proposal['validation'])
