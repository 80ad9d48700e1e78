"""Bytes are bytes: a process's cgroup named with bytes that are not UTF-8 changes nothing but the reading.

A user can name a group in their delegated ``user@.service`` subtree with any byte but '/' and NUL; root's
services can be given such names too. Before, ``/proc/<pid>/cgroup`` was decoded as strict UTF-8 and one such line of
a process named ``containerd`` raised UnicodeDecodeError in measure() and in every sampler run. This machine may not
create cgroups (/sys/fs/cgroup is the lead's), so the groups are a cgroup v2 tree written by the fixture, and /proc a
fake one, as tests/unit/plugins/module_utils/_node/test__kubelet_process.py builds it.
"""

from __future__ import annotations

import os
import shutil

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _kubelet_process, _measure, _procfs)
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024
ROOTS_PROGRAM = os.path.realpath(shutil.which('true'))
ODD = os.fsdecode(b'containerd-\xff\xfe.scope')  # what a name of those bytes is as a str path (surrogateescape)


def _node(tmp_path, runtime_group):
    """A v2 tree (kubepods, system.slice, the runtime's group) and a /proc whose pid 202 is root's containerd there."""
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', 300 * MIB, 0, 0)
    cgroup_v2.make_group(root, 'system.slice', 200 * MIB, 0, 0)
    cgroup_v2.make_group(root, 'system.slice/containerd.service/' + runtime_group, 40 * MIB, 8 * MIB, 2 * MIB)
    proc = tmp_path / 'proc'
    for pid, argv, cgroup in (('self', [b'python3'], b'0::/\n'),
                              (202, [b'/usr/bin/containerd'],
                               b'0::/system.slice/containerd.service/' + os.fsencode(runtime_group) + b'\n')):
        directory = proc / str(pid)
        directory.mkdir(parents=True)
        (directory / 'cmdline').write_bytes(b'\0'.join(argv) + b'\0')
        (directory / 'status').write_bytes(b'Name:\tcontainerd\nUid:\t0\t0\t0\t0\nNSpid:\t1\nVmRSS:\t1024 kB\n')
        (directory / 'cgroup').write_bytes(cgroup)
        os.symlink(ROOTS_PROGRAM, str(directory / 'exe'))
    return _cgroup.layout_from_root(root), str(proc)


def _reading(tmp_path, runtime_group):
    layout, proc = _node(tmp_path, runtime_group)
    found = _kubelet_process.find_processes(_kubelet_process.DEFAULT_RUNTIME_NAMES, proc)
    _seen, groups, pids = _measure.component_targets(layout, found, proc, 'kubepods.slice')
    meminfo = {'MemTotal': 4096 * MIB, 'MemAvailable': 3000 * MIB, 'Active(file)': 0, 'Inactive(file)': 0}
    memory = _measure.memory(layout, 'kubepods.slice', meminfo, groups, pids, proc, cmdlines={})
    return groups, memory


def test_a_containerd_in_a_group_of_any_bytes_is_measured_as_in_any_other(tmp_path):
    plain_groups, plain = _reading(tmp_path / 'plain', 'containerd-1.scope')
    odd_groups, odd = _reading(tmp_path / 'odd', ODD)
    # Found, and its own group measured: the path names the group it is (the same bytes).
    assert odd_groups == ['system.slice/containerd.service/' + ODD]
    assert [os.fsencode(g) for g in odd_groups] == [b'system.slice/containerd.service/containerd-\xff\xfe.scope']
    # Nothing but the name differs.
    assert plain_groups == ['system.slice/containerd.service/containerd-1.scope']
    for name in ('non_pod_bytes', 'kube_components_working_set_bytes', 'kubepods_working_set_bytes'):
        assert odd[name] == plain[name], name
    assert odd['kube_components_working_set_bytes'] == 48 * MIB
    # And what a message shows of it can be printed anywhere.
    assert _procfs.shown(odd_groups[0]).encode('ascii') == b'system.slice/containerd.service/containerd-\\xff\\xfe.scope'
