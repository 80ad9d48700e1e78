"""The one node reader: capacity and the node-allocatable group, as the facts module, sampler and config modules see it."""

from __future__ import annotations

import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _probe
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1 << 20
MEMINFO = 'MemTotal:       24683656 kB\nMemFree:        23535104 kB\nMemAvailable:   24012640 kB\n'


@pytest.fixture
def node(tmp_path):
    """A v2 node that kept the cgroupfs driver's kubepods (40 MiB) beside the systemd driver's kubepods.slice (650 MiB)."""
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.write(str(tmp_path / 'proc' / 'meminfo'), MEMINFO)
    cgroup_v2.make_group(root, 'kubepods.slice', 600 * MIB, 50 * MIB, 300 * MIB)
    cgroup_v2.make_group(root, 'kubepods', 40 * MIB, 0, 0)
    return tmp_path


def config(tmp_path, **fields):
    path = tmp_path / 'config.json'
    path.write_text(json.dumps(dict({'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration'},
                                    **fields)))
    return str(path)


@pytest.mark.parametrize('fields, working_set_bytes', [
    ({'cgroupDriver': 'cgroupfs'}, 40 * MIB),
    ({'cgroupDriver': 'systemd'}, 650 * MIB),
    ({}, 650 * MIB),  # no driver named: the first group found, kubepods.slice
])
def test_the_config_modules_check_the_group_the_kubelets_driver_uses(node, fields, working_set_bytes):
    params = {'path': config(node, **fields), 'cgroup_root': str(node / 'cgroup'), 'kubepods_margin': '0'}
    probe = _probe.probe_node(params, proc_root=str(node / 'proc'))
    assert probe['kubepods_working_set_bytes'] == working_set_bytes
    assert probe['capacity_memory_bytes'] == 24683656 * 1024


def test_a_node_without_cgroups_still_has_its_capacity_and_says_what_was_not_checked(tmp_path):
    cgroup_v2.write(str(tmp_path / 'proc' / 'meminfo'), MEMINFO)
    cgroup_v2.write(str(tmp_path / 'proc' / 'self' / 'mountinfo'), '')
    probe = _probe.probe_node({'kubepods_margin': '0'}, proc_root=str(tmp_path / 'proc'))
    assert probe['capacity_memory_bytes'] == 24683656 * 1024 and probe['kubepods_working_set_bytes'] is None
    assert [note.split(':')[0] for note in probe['notes']] == ['kubepods-limit-above-usage', 'enforce-reserved-cgroup']
    with pytest.raises(LayoutError):
        _probe.read_node(proc_root=str(tmp_path / 'proc'))
