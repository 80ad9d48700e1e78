"""cgroup layout discovery and reading; v2 against trees from tests/unit/fixtures/cgroup_v2.py."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError, MeasurementError
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

# This build machine's /proc/self/mountinfo (Debian 12 guest, hybrid: v1 controllers + empty cgroup2).
HYBRID_MOUNTINFO = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
# A systemd node with the unified hierarchy only (Debian 12 default).
UNIFIED_MOUNTINFO = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
# A legacy node where cpu and cpuacct share one hierarchy (CentOS 7 style).
LEGACY_MOUNTINFO = """25 18 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:6 - tmpfs tmpfs ro,mode=755
30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,cpuacct,cpu
33 25 0:30 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
"""
# Inside one of our test nodes (copied from /proc/self/mountinfo there): the read-only controllers
# nspawn mounted, the node's own subtree bound over them, and the staging mounts under /mnt.
NODE_MOUNTINFO = """121 108 0:30 /nodealloc/node1 /mnt/cg/cpuacct rw,relatime shared:13 - cgroup cgroup rw,cpuacct
122 108 0:32 /../../nodealloc/node1 /mnt/cg/memory rw,relatime shared:14 - cgroup cgroup rw,memory
49 47 0:32 / /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime shared:19 - cgroup cgroup rw,memory
51 47 0:30 / /sys/fs/cgroup/cpuacct ro,nosuid,nodev,noexec,relatime shared:21 - cgroup cgroup rw,cpuacct
56 47 0:38 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:26 - cgroup2 cgroup rw
62 49 0:32 /../../nodealloc/node1 /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory
64 51 0:30 /nodealloc/node1 /sys/fs/cgroup/cpuacct rw,relatime shared:13 - cgroup cgroup rw,cpuacct
"""


def test_hybrid_is_v1_with_the_v1_controllers():
    layout = _cgroup.layout_from_mountinfo(HYBRID_MOUNTINFO)
    assert (layout.version, layout.mode) == ('v1', 'hybrid')
    assert layout.memory_root == '/sys/fs/cgroup/memory'
    assert layout.cpu_root == '/sys/fs/cgroup/cpuacct'


def test_unified_is_v2():
    layout = _cgroup.layout_from_mountinfo(UNIFIED_MOUNTINFO)
    assert (layout.version, layout.mode, layout.memory_root) == ('v2', 'unified', '/sys/fs/cgroup')


def test_legacy_with_combined_cpu_cpuacct():
    layout = _cgroup.layout_from_mountinfo(LEGACY_MOUNTINFO)
    assert (layout.version, layout.mode) == ('v1', 'legacy')
    assert layout.cpu_root == '/sys/fs/cgroup/cpu,cpuacct'


def test_bind_mounted_subtree_maps_process_paths():
    layout = _cgroup.layout_from_mountinfo(NODE_MOUNTINFO)
    assert (layout.memory_root, layout.cpu_root) == ('/sys/fs/cgroup/memory', '/sys/fs/cgroup/cpuacct')
    assert layout.mount_roots['/sys/fs/cgroup/memory'] == '/../../nodealloc/node1'
    relative = _cgroup.process_memory_cgroup(
        layout, {'memory': '/nodealloc/node1/system.slice/kubelet.service'})
    assert relative == 'system.slice/kubelet.service'


@pytest.mark.parametrize('text', ['', '22 1 0:21 / /proc rw - proc proc rw\n',
                                  '35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n'])
def test_unrecognised_layouts_are_refused(text):
    with pytest.raises(LayoutError):
        _cgroup.layout_from_mountinfo(text)


def test_v2_working_set_is_current_minus_inactive_file(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=700 << 20, active_file_bytes=100 << 20,
                         inactive_file_bytes=200 << 20)
    layout = _cgroup.layout_from_root(root)
    assert layout.version == 'v2'
    assert _cgroup.find_kubepods(layout) == ('systemd', 'kubepods.slice')
    ws = _cgroup.memory_working_set(layout, 'kubepods.slice')
    assert ws['usage_bytes'] == 1000 << 20
    assert ws['inactive_file_bytes'] == 200 << 20
    assert ws['working_set_bytes'] == 800 << 20


def test_working_set_never_below_zero(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    directory = cgroup_v2.make_group(root, 'kubepods', 0, 0, 10)
    with open(os.path.join(directory, 'memory.current'), 'w') as handle:
        handle.write('4\n')  # usage read before the stat file moved on: inactive > usage
    assert _cgroup.memory_working_set(_cgroup.layout_from_root(root), 'kubepods')['working_set_bytes'] == 0


def test_v2_without_memory_controller_is_refused(tmp_path):
    cgroup_v2.make_root(str(tmp_path), controllers='cpu io pids')
    with pytest.raises(LayoutError, match='memory controller'):
        _cgroup.layout_from_root(str(tmp_path))


def test_v2_cpu_usage_is_read_in_nanoseconds(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods', 0, 0, 0, usage_usec=1234567)
    assert _cgroup.cpu_usage_ns(_cgroup.layout_from_root(root), 'kubepods') == 1234567000


def test_cgroupfs_driver_and_override(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods', 1, 0, 0)
    cgroup_v2.make_group(root, 'kubepods.slice', 1, 0, 0)
    layout = _cgroup.layout_from_root(root)
    assert _cgroup.find_kubepods(layout, driver_hint='cgroupfs') == ('cgroupfs', 'kubepods')
    assert _cgroup.find_kubepods(layout) == ('systemd', 'kubepods.slice')
    assert _cgroup.find_kubepods(layout, override='/kubepods/') == ('cgroupfs', 'kubepods')
    with pytest.raises(LayoutError, match='does not exist'):
        _cgroup.find_kubepods(layout, override='/nope')


def test_missing_inactive_file_is_a_measurement_error(tmp_path):
    root = str(tmp_path)
    cgroup_v2.make_root(root)
    directory = cgroup_v2.make_group(root, 'kubepods', 1, 0, 0)
    with open(os.path.join(directory, 'memory.stat'), 'w') as handle:
        handle.write('anon 1\n')
    with pytest.raises(MeasurementError, match='inactive_file'):
        _cgroup.memory_working_set(_cgroup.layout_from_root(root), 'kubepods')


def test_neither_v1_nor_v2_root_is_refused(tmp_path):
    with pytest.raises(LayoutError, match='neither'):
        _cgroup.layout_from_root(str(tmp_path))
