"""The enforceNodeAllocatable *-compressible proposal: starved daemons (PSI), the weight it would write, validation."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_enforcement as ce
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.guest_v2_protection import CAPTURE

# The guest's system.slice a minute after boot: the boot's contention shows over 10 s (20 %) and 60 s, not over 5 min.
BOOTED = CAPTURE['idle']['system.slice']['cpu.pressure']
# The guest's system.slice after 150 s of a busy service behind CPU hogs in kubepods (weight 1000 against 100).
STARVED = CAPTURE['starved']['system.slice']['cpu.pressure']
V134, V131 = _version_rules.parse('Kubernetes v1.34.2'), _version_rules.parse('Kubernetes v1.31.4')


def pressure(**texts):
    return {'node': {}, 'note': None,
            'cgroups': {group: {'cpu': _cpu_guarantee.parse_pressure(text)} for group, text in texts.items()}}


def test_the_guests_cpu_pressure_parses_and_its_boot_burst_is_not_starvation():
    parsed = _cpu_guarantee.parse_pressure(BOOTED)
    assert parsed['some'] == {'avg10': 20.12, 'avg60': 12.79, 'avg300': 3.40, 'total_usec': 11028957}
    assert parsed['full']['total_usec'] == 1485675
    assert ce.starved_groups(pressure(**{'/system.slice': BOOTED}), ['/system.slice']) == []


def test_the_guests_starved_system_slice_is_starved_and_its_idle_kubelet_group_is_not():
    groups = {'/system.slice': STARVED,
              '/system.slice/kubelet.service': CAPTURE['starved']['system.slice/kubelet.service']['cpu.pressure']}
    found = ce.starved_groups(pressure(**groups), sorted(groups))
    assert found == [('/system.slice', 39.20, 85.18)]


@pytest.mark.parametrize('state,group', sorted((state, group) for state in CAPTURE for group in CAPTURE[state]))
def test_every_captured_cpu_pressure_file_parses_to_some_and_full(state, group):
    parsed = _cpu_guarantee.parse_pressure(CAPTURE[state][group]['cpu.pressure'])
    assert sorted(parsed) == ['full', 'some']
    assert sorted(parsed['some']) == ['avg10', 'avg300', 'avg60', 'total_usec']


@pytest.mark.parametrize('line,starved', [
    # The five-minute average decides: a burst of seconds (an image pull, a build) is not starvation.
    ('some avg10=80.00 avg60=30.00 avg300=4.00 total=9000000', False),
    ('some avg10=0.00 avg60=2.00 avg300=10.00 total=90000000', True),
    ('some avg10=0.00 avg60=2.00 avg300=9.99 total=89000000', False),
])
def test_starvation_is_the_five_minute_some_average_at_the_threshold(line, starved):
    text = line + '\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
    assert bool(ce.starved_groups(pressure(**{'/system.slice': text}), ['/system.slice'])) is starved


def _propose(config, system_cpu='3', weights=None, version=V134, text=STARVED, components=()):
    return ce.propose(config, {'system_reserved': {'cpu': system_cpu, 'memory': '1Gi'}, 'kube_reserved': {'cpu': '100m'}},
                      pressure(**{'/system.slice': text}), list(components), 'v2', 8000, weights or {}, version,
                      driver='systemd', cgroup_exists=lambda relative: True)


def test_starved_daemons_with_a_reservation_above_systemds_weight_get_the_key_and_the_cgroup_it_needs():
    result = _propose({'cgroupDriver': 'systemd'})
    assert result['proposed'] is True, result['reasons']
    # The kubelet refuses the key without systemReservedCgroup: the proposal names system.slice.
    assert result['changes'] == {'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'],
                                 'systemReservedCgroup': '/system.slice'}
    target = result['targets'][0]
    # 3 CPUs: MilliCPUToShares 3072, cpu.weight (3072-2)*9999/262142+1 = 118, above systemd's 100.
    assert (target['weight_now'], target['weight_enforced']) == (100, 118)
    assert target['guaranteed_millicores_enforced'] > target['guaranteed_millicores_now']
    assert result['validation']['refusal'] is None


def test_a_small_reservation_would_lower_system_slices_weight_so_it_is_not_proposed():
    # 500m: cpu.weight 20 against systemd's 100: enforcing it would starve the daemons more.
    result = _propose({}, system_cpu='500m')
    assert result['proposed'] is False and result['changes'] == {}
    assert result['targets'][0]['weight_enforced'] == 20
    assert any('not above its 100 now' in reason for reason in result['reasons'])


def test_idle_daemons_get_no_proposal():
    result = _propose({}, text=BOOTED)
    assert result['proposed'] is False and result['starved'] == []


@pytest.mark.parametrize('config,why', [
    ({'enforceNodeAllocatable': ['none']}, "is ['none']"),
    ({'enforceNodeAllocatable': ['pods', 'system-reserved'], 'systemReservedCgroup': '/system.slice'},
     'already enforced'),
])
def test_nothing_is_proposed_beside_none_or_the_full_key(config, why):
    result = _propose(config)
    assert result['proposed'] is False
    assert any(why in reason for reason in result['reasons'])


@pytest.mark.parametrize('config,version,refusal', [
    # validation.go: reservedSystemCPUs cannot go with systemReservedCgroup, which the proposal must set.
    ({'reservedSystemCPUs': '0-1'}, V134, 'reservedSystemCPUs'),
    # The compressible keys exist from 1.32 (kubernetes/kubernetes#125982).
    ({}, V131, 'exists from 1.32 only'),
    # cgroupsPerQOS false: no enforcement key but none.
    ({'cgroupsPerQOS': False, 'enforceNodeAllocatable': []}, V134, 'cgroupsPerQOS'),
])
def test_a_proposal_the_kubelet_would_refuse_is_not_made(config, version, refusal):
    result = _propose(config, version=version)
    assert result['proposed'] is False and result['changes'] == {}
    assert refusal in result['validation']['refusal']


def test_a_missing_cgroup_is_refused_like_the_container_manager_does():
    result = ce.propose({}, {'system_reserved': {'cpu': '3'}}, pressure(**{'/system.slice': STARVED}), [], 'v2', 8000,
                        {}, V134, driver='systemd', cgroup_exists=lambda relative: relative != 'system.slice')
    assert result['proposed'] is False
    assert 'does not exist' in result['validation']['refusal']


def test_kube_reserved_compressible_only_where_a_kube_reserved_group_is_named_and_starved():
    config = {'kubeReservedCgroup': '/kube.slice', 'cgroupDriver': 'systemd', 'systemReservedCgroup': '/system.slice'}
    result = ce.propose(config, {'system_reserved': {'cpu': '100m'}, 'kube_reserved': {'cpu': '3'}},
                        pressure(**{'/kube.slice/kubelet.service': STARVED}), ['kube.slice/kubelet.service'], 'v2',
                        8000, {}, V134, driver='systemd', cgroup_exists=lambda relative: True)
    assert result['proposed'] is True, result['reasons']
    assert result['changes'] == {'enforceNodeAllocatable': ['pods', 'kube-reserved-compressible']}


def test_v1_proposes_nothing():
    result = ce.propose({}, {'system_reserved': {'cpu': '3'}}, {'node': {}, 'cgroups': {}}, [], 'v1', 8000, {}, V134)
    assert result['proposed'] is False and 'cgroup v1' in result['reasons'][0]


@pytest.mark.parametrize('changes,refused', [
    ({'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'], 'systemReservedCgroup': '/system.slice'}, False),
    ({'enforceNodeAllocatable': ['pods', 'system-reserved-compressible']}, True),
    ({'enforceNodeAllocatable': ['system-reserved', 'system-reserved-compressible'],
      'systemReservedCgroup': '/system.slice'}, True),
    ({'enforceNodeAllocatable': ['none', 'system-reserved-compressible'], 'systemReservedCgroup': '/system.slice'}, True),
])
def test_validate_change_answers_with_a_refusal_field(changes, refused):
    result = ce.validate_change({'systemReserved': {'cpu': '1'}}, changes, V134, 'v2')
    assert (result['refusal'] is not None) == refused


def test_a_reserved_group_holding_none_of_the_starved_ones_is_not_proposed_and_the_reasons_say_so():
    # CI, stop 32: the guest's system.slice was starved while systemReservedCgroup named /sysres.slice; the old
    # proposal returned no reason at all.
    result = _propose({'systemReservedCgroup': '/sysres.slice', 'cgroupDriver': 'systemd'})
    assert result['proposed'] is False and result['changes'] == {}
    assert [t['starved'] for t in result['targets']] == [[]]
    assert result['reasons'] == ['system-reserved-compressible would weigh /sysres.slice (systemReservedCgroup), which '
                                 'holds none of the starved groups (/system.slice): not proposed there']
