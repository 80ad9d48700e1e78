"""_measure's CPU arithmetic: SSH sessions' CPU (where this role runs) is left out of non-pod CPU."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _measure
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

# 10 s on a 2-CPU node at 100 jiffies a second: 2000 jiffies in all.
ELAPSED_NS = 10 * 10 ** 9


def snapshot(time, busy, kubepods_ns, session_ns=0, sessions=('system.slice/ssh.service',)):
    return {'time': time, 'busy_jiffies': busy, 'total_jiffies': 2000 * time // 10, 'kubepods_ns': kubepods_ns,
            'component_cgroup_ns': 0, 'component_ticks': 0, 'session_cgroups': list(sessions), 'session_ns': session_ns}


def test_session_cpu_is_reported_and_left_out_of_non_pod_cpu():
    # Node busy 1500 jiffies of 2000 = 1500m; kubepods 3 s of CPU in 10 s = 300m; sessions 6 s = 600m.
    cpu = _measure.cpu_between(snapshot(10, 0, 0), snapshot(20, 1500, 3 * 10 ** 9, 6 * 10 ** 9), 2000)
    assert (cpu['node_busy_millicores'], cpu['kubepods_millicores']) == (1500, 300)
    assert cpu['session_millicores'] == 600
    assert cpu['non_pod_millicores'] == 1500 - 300 - 600
    assert cpu['session_cgroups'] == ['system.slice/ssh.service']


def test_session_groups_that_changed_during_the_sample_subtract_nothing():
    # user.slice appeared (a first login): its counter started within the sample, so nothing honest to subtract.
    before = snapshot(10, 0, 0, sessions=())
    after = snapshot(20, 1500, 3 * 10 ** 9, 6 * 10 ** 9, sessions=('user.slice',))
    cpu = _measure.cpu_between(before, after, 2000)
    assert cpu['session_millicores'] == 0
    assert cpu['non_pod_millicores'] == 1200


def test_a_session_counter_that_went_back_subtracts_nothing():
    # sshd restarted: its unit's group was made anew and counts from 0.
    cpu = _measure.cpu_between(snapshot(10, 0, 0, 9 * 10 ** 9), snapshot(20, 1500, 3 * 10 ** 9, 10 ** 9), 2000)
    assert cpu['session_millicores'] == 0
    assert cpu['non_pod_millicores'] == 1200


def test_sessions_never_take_non_pod_cpu_below_zero():
    # Counters read a few ms apart can disagree; the sessions cannot have used more than the node outside pods.
    cpu = _measure.cpu_between(snapshot(10, 0, 0), snapshot(20, 500, 3 * 10 ** 9, 4 * 10 ** 9), 2000)
    assert cpu['session_millicores'] == 200
    assert cpu['non_pod_millicores'] == 0


def test_snapshot_reads_the_session_groups_that_exist(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'system.slice', 0, 0, 0)
    cgroup_v2.make_group(root, 'system.slice/ssh.service', 0, 0, 0)
    cgroup_v2.make_group(root, 'user.slice', 0, 0, 0)
    cgroup_v2.set_cpu_usage(root, 'system.slice/ssh.service', 250)
    cgroup_v2.set_cpu_usage(root, 'user.slice', 750)
    layout = _cgroup.discover_layout(root)
    taken = _measure.cpu_snapshot(layout, None, [], [])
    assert taken['session_cgroups'] == ['user.slice', 'system.slice/ssh.service']
    assert taken['session_ns'] == 1000 * 1000


def _tree_with_components(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    for group in ('system.slice', 'system.slice/kubelet.service', 'system.slice/containerd.service'):
        cgroup_v2.make_group(root, group, 64 << 20, 0, 0)
    cgroup_v2.set_cpu_usage(root, 'system.slice/kubelet.service', 2000)
    cgroup_v2.set_cpu_usage(root, 'system.slice/containerd.service', 500)
    return root, _cgroup.discover_layout(root)


def test_a_component_group_removed_after_its_process_was_found_is_left_out(tmp_path):
    # The runtime restarted between finding its process and reading its group (a node's kubelet or containerd
    # restarts at any time; on a test machine, a process that ran a command and exited): the measurement goes on.
    root, layout = _tree_with_components(tmp_path)
    found = ['system.slice/kubelet.service', 'system.slice/containerd.service', 'system.slice/gone.service']
    taken = _measure.cpu_snapshot(layout, None, found, [])
    assert taken['component_cgroup_ns_by_cgroup'] == {'system.slice/kubelet.service': 2000 * 1000,
                                                      'system.slice/containerd.service': 500 * 1000}
    memory = _measure.memory(layout, None, {'MemTotal': 8 << 30, 'MemAvailable': 6 << 30}, found, [],
                             proc_root=str(tmp_path / 'noproc'))
    assert [c['cgroup'] for c in memory['kube_components']['cgroups']] == ['/' + group for group in found[:2]]


def test_a_component_group_that_exists_but_cannot_be_read_is_still_an_error(tmp_path):
    root, layout = _tree_with_components(tmp_path)
    os.remove(os.path.join(root, 'system.slice/containerd.service', 'cpu.stat'))
    with pytest.raises(_cgroup.MeasurementError):
        _measure.cpu_snapshot(layout, None, ['system.slice/containerd.service'], [])


def test_component_cpu_counts_only_the_groups_seen_in_both_snapshots():
    # containerd's group was made anew during the sample (counting from 0 again): only the kubelet's delta counts.
    before = dict(snapshot(10, 0, 0), component_cgroup_ns_by_cgroup={'k': 10 ** 9, 'c': 9 * 10 ** 9})
    after = dict(snapshot(20, 1500, 0), component_cgroup_ns_by_cgroup={'k': 3 * 10 ** 9, 'c2': 10 ** 8})
    assert _measure.cpu_between(before, after, 2000)['kube_components_millicores'] == 200


def test_a_snapshot_an_older_sampler_kept_still_gives_the_components_cpu():
    before = dict(snapshot(10, 0, 0), component_cgroup_ns=10 ** 9)
    after = dict(snapshot(20, 1500, 0), component_cgroup_ns_by_cgroup={'k': 2 * 10 ** 9, 'c': 10 ** 9})
    assert _measure.cpu_between(before, after, 2000)['kube_components_millicores'] == 200
