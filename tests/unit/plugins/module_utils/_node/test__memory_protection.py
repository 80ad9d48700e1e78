"""memory.min/memory.low of kubepods and the reserved cgroups, and what the protection costs pods."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _memory_protection as mp
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024
# Read on a Debian 12 QEMU guest (Linux 6.1, cgroup v2, systemd 252), after writing what the kubelet writes with
# MemoryQoS: kubepods.slice memory.min 268435456, the Burstable QoS group's memory.low 134217728, system.slice
# (systemReservedCgroup) memory.min 104857600, kube.slice/kube-reserved.slice memory.min 52428800 (see
# tests/unit/fixtures/guest_v2_protection.py for the whole capture).
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.guest_v2_protection import CAPTURE


@pytest.mark.parametrize('group,name', [
    (group, name) for group in ('kubepods.slice', 'kubepods.slice/kubepods-burstable.slice', 'system.slice',
                                'kube.slice/kube-reserved.slice') for name in ('memory.min', 'memory.low')])
def test_the_guests_protection_files_parse_to_their_bytes(group, name):
    text = CAPTURE['idle'][group][name]
    assert mp.parse_protection(text) == int(text)


@pytest.mark.parametrize('text,value', [('max\n', 'max'), ('0\n', 0), ('4096\n', 4096)])
def test_max_and_numbers(text, value):
    assert mp.parse_protection(text) == value


@pytest.mark.parametrize('text', ['', 'lots\n', '-1\n'])
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError):
        mp.parse_protection(text)


def test_max_counts_as_the_whole_node():
    assert mp.protected_bytes('max', 8 << 30) == 8 << 30
    assert mp.protected_bytes(1 << 40, 8 << 30) == 8 << 30


@pytest.mark.parametrize('config,driver,expected', [
    ({'systemReservedCgroup': '/system.slice', 'kubeReservedCgroup': '/kube-reserved.slice'}, 'systemd',
     [('system-reserved', 'systemReservedCgroup', 'system.slice'),
      ('kube-reserved', 'kubeReservedCgroup', 'kube.slice/kube-reserved.slice')]),
    ({'systemReservedCgroup': '/system', 'kubeReservedCgroup': '/system'}, 'cgroupfs',
     [('system-reserved', 'systemReservedCgroup', 'system')]),
    ({}, 'systemd', []),
])
def test_targets_are_where_the_kubelet_finds_the_reserved_groups(config, driver, expected):
    assert mp.targets(config, driver) == expected


def _guest_tree(tmp_path):
    """A v2 tree holding the guest's protection files as read, and working sets of the test's own."""
    root = str(tmp_path / 'cg')
    cgroup_v2.make_root(root)
    for group, (anon, inactive) in {'kubepods.slice': (300 * MIB, 0), 'system.slice': (60 * MIB, 10 * MIB),
                                    'kube.slice/kube-reserved.slice': (70 * MIB, 0)}.items():
        cgroup_v2.make_group(root, group, anon, 0, inactive)
        for name in ('memory.min', 'memory.low'):
            cgroup_v2.write(os.path.join(root, group, name), CAPTURE['idle'][group][name])
    return _cgroup.layout_from_root(root)


def test_reads_kubepods_and_the_reserved_groups_the_config_names(tmp_path):
    layout = _guest_tree(tmp_path)
    config = {'systemReservedCgroup': '/system.slice', 'kubeReservedCgroup': '/kube-reserved.slice'}
    result = mp.read(layout, 'kubepods.slice', config, 'systemd')
    assert result['problems'] == []
    by_group = {g['cgroup']: g for g in result['cgroups']}
    assert by_group['/kubepods.slice']['memory_min'] == int(CAPTURE['idle']['kubepods.slice']['memory.min'])
    assert by_group['/system.slice']['memory_min'] == int(CAPTURE['idle']['system.slice']['memory.min'])
    assert by_group['/system.slice']['working_set_bytes'] == 60 * MIB
    assert by_group['/kube.slice/kube-reserved.slice']['role'] == 'kube-reserved'


def test_a_named_group_that_does_not_exist_is_a_problem_not_a_zero(tmp_path):
    layout = _guest_tree(tmp_path)
    result = mp.read(layout, 'kubepods.slice', {'systemReservedCgroup': '/nowhere.slice'}, 'systemd')
    entry = [g for g in result['cgroups'] if g['role'] == 'system-reserved'][0]
    assert entry['exists'] is False and entry['memory_min'] is None
    assert any('/nowhere.slice' in p for p in result['problems'])


def test_v1_has_no_protection_files(tmp_path):
    layout = _cgroup.CgroupLayout('v1', 'legacy', str(tmp_path), str(tmp_path), {})
    result = mp.read(layout, 'kubepods.slice', {'systemReservedCgroup': '/system.slice'}, 'systemd')
    assert result['supported'] is False and result['cgroups'] == []
    assert 'no memory.min' in result['note']


def test_cost_is_protection_beyond_each_groups_working_set(tmp_path):
    layout = _guest_tree(tmp_path)
    config = {'systemReservedCgroup': '/system.slice', 'kubeReservedCgroup': '/kube-reserved.slice'}
    protection = mp.read(layout, 'kubepods.slice', config, 'systemd')
    cost = mp.cost(protection, 4 << 30, recommended={'system-reserved': 80 * MIB})
    system_min = int(CAPTURE['idle']['system.slice']['memory.min'])
    kube_min = int(CAPTURE['idle']['kube.slice/kube-reserved.slice']['memory.min'])
    # system.slice: 100 MiB protected, 60 MiB used; kube-reserved: 50 MiB protected, 70 MiB used (nothing beyond).
    assert cost['protected_beyond_use_bytes'] == (system_min - 60 * MIB) + max(0, kube_min - 70 * MIB)
    assert cost['reserved_min_bytes'] == system_min + kube_min
    # kubepods' own protection (the pods' requests) is not a cost of the reservation.
    assert '/kubepods.slice' not in [g['cgroup'] for g in cost['groups']]
    assert cost['after_apply']['protected_beyond_use_bytes'] == 20 * MIB


def test_no_reserved_group_no_cost(tmp_path):
    layout = _guest_tree(tmp_path)
    assert mp.cost(mp.read(layout, 'kubepods.slice', {}, 'systemd'), 4 << 30) is None


@pytest.mark.parametrize('config,cgroup,gate,expected', [
    # enforceExistingCgroup: memory.min = the memory reservation of each enforced, named, reserved group.
    ({'enforceNodeAllocatable': ['pods', 'system-reserved'], 'systemReservedCgroup': '/system.slice',
      'systemReserved': {'memory': '100Mi', 'cpu': '1'}}, 'v2', True, {'system-reserved': 100 * MIB}),
    # ... only with the MemoryQoS gate on, on cgroup v2,
    ({'enforceNodeAllocatable': ['pods', 'system-reserved'], 'systemReservedCgroup': '/system.slice',
      'systemReserved': {'memory': '100Mi'}}, 'v2', False, {}),
    ({'enforceNodeAllocatable': ['pods', 'system-reserved'], 'systemReservedCgroup': '/system.slice',
      'systemReserved': {'memory': '100Mi'}}, 'v1', True, {}),
    # ... and never for the compressible key (getCgroupConfigInternal carries CPU only).
    ({'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'], 'systemReservedCgroup': '/system.slice',
      'systemReserved': {'memory': '100Mi', 'cpu': '1'}}, 'v2', True, {}),
    ({'kubeReservedCgroup': '/kube.slice', 'kubeReserved': {'memory': '1Gi'}}, 'v2', True, {}),  # only pods enforced
])
def test_what_the_kubelet_writes_to_the_reserved_groups(config, cgroup, gate, expected):
    assert mp.kubelet_writes_reserved_min(config, cgroup, gate) == expected


def test_explanation_says_what_the_protection_costs(tmp_path):
    layout = _guest_tree(tmp_path)
    protection = mp.read(layout, 'kubepods.slice', {'systemReservedCgroup': '/system.slice'}, 'systemd')
    lines = mp.explain(protection, mp.cost(protection, 4 << 30), True, 'TieredReservation')
    beyond = int(CAPTURE['idle']['system.slice']['memory.min']) - 60 * MIB
    assert any('memory.min beyond use of /system.slice' in line and '= %d B:' % beyond in line for line in lines)
    assert any('memoryReservationPolicy TieredReservation' in line for line in lines)
