# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Raw readings of a node, shared by node_reservation_facts and the sampler: memory and CPU, nothing derived.

Light on purpose (no YAML, no policy): the sampler imports it once a minute.
Memory is ``MemTotal - MemAvailable - working_set(kubepods)`` with the pods' page cache that
MemAvailable already counts added back (_memory_accounting); the working set is cAdvisor's (see
_cgroup). CPU is the difference of two snapshots of cumulative counters (``/proc/stat``, the
kubepods cgroup's CPU time, the kubelet and runtime, the SSH sessions' groups): the module takes
them ``sample_seconds`` apart, the sampler one timer period apart (the previous run's snapshot is
in its state file). Non-pod CPU is node busy - kubepods - SSH sessions (SESSION_CGROUPS says why).
"""

from __future__ import annotations

import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _kubelet_process, _memory_accounting, _procfs, _swap, _tool_processes)

# Groups that hold many unrelated processes: a kubelet found there is measured by its own RSS.
SHARED_CGROUPS = ('', 'system.slice', 'user.slice', 'init.scope')
# Where remote administration runs: SSH sessions in user.slice (pam_systemd), or in sshd's own unit where sessions
# are not split out. This role itself runs there (Ansible over SSH): counted as non-pod CPU, a run's own tasks made
# the next run reserve for them (a 1-vCPU guest measured 689m in the minute of a run that changed nothing, and the
# run after it raised the reservation to the cap). Their CPU is left out of non-pod CPU and reported beside it;
# their memory stays counted (reserving too little memory is the dangerous side). Not nested in one another.
SESSION_CGROUPS = ('user.slice', 'system.slice/ssh.service', 'system.slice/sshd.service')


def component_targets(layout, found, proc_root, kubepods):
    """Where to measure the kubelet and runtime: their own cgroups, or their processes."""
    cgroups, pids, seen = [], [], []
    for process in found:
        seen.append({'pid': process.pid, 'program': _kubelet_process.program_name(process.argv)})
        relative = _cgroup.process_memory_cgroup(layout, _procfs.read_process_cgroups(process.pid, proc_root))
        dedicated = (relative is not None and relative not in SHARED_CGROUPS
                     and not (kubepods and relative.startswith(kubepods))
                     and _cgroup.cgroup_exists(layout, relative))
        if dedicated:
            if relative not in cgroups:
                cgroups.append(relative)
        else:
            pids.append(process.pid)
    return seen, cgroups, pids


def cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root='/proc'):
    """Cumulative CPU counters now (plain numbers, so a snapshot can be kept in a state file)."""
    busy, total = _procfs.read_cpu_times(proc_root)
    sessions = [g for g in SESSION_CGROUPS if os.path.isdir(_procfs.joined(layout.cpu_root, g))]
    return {
        'time': time.monotonic(),
        'busy_jiffies': busy,
        'total_jiffies': total,
        'kubepods_ns': _cgroup.cpu_usage_ns(layout, kubepods) if kubepods else 0,
        'component_cgroup_ns_by_cgroup': _component_cpu_ns(layout, component_cgroups),
        'component_ticks': sum(_procfs.read_process_cpu_ticks(p, proc_root) or 0 for p in component_pids),
        'session_cgroups': sessions,
        'session_ns': sum(_session_usage_ns(layout, g) for g in sessions),
    }


def _component_cpu_ns(layout, component_cgroups):
    """Each kubelet/runtime cgroup's CPU time. A group removed since its process was found (the kubelet or the
    runtime restarted, the process exited) is left out; a group that exists but cannot be read is an error."""
    usage = {}
    for relative in component_cgroups:
        try:
            usage[relative] = _cgroup.cpu_usage_ns(layout, relative)
        except _cgroup.MeasurementError:
            if os.path.isdir(os.path.join(layout.cpu_root, relative)):
                raise
    return usage


def _component_cgroup_delta_ns(before, after):
    """CPU time of the kubelet/runtime groups seen in both snapshots: a group that came or went during the sample
    has no honest delta. A snapshot kept by an older sampler holds only the sum."""
    before_by, after_by = before.get('component_cgroup_ns_by_cgroup'), after.get('component_cgroup_ns_by_cgroup')
    if before_by is None or after_by is None:
        return _component_cgroup_total_ns(after) - _component_cgroup_total_ns(before)
    return sum(after_by[c] - before_by[c] for c in set(before_by) & set(after_by))


def _component_cgroup_total_ns(snapshot):
    by_cgroup = snapshot.get('component_cgroup_ns_by_cgroup')
    return sum(by_cgroup.values()) if by_cgroup is not None else snapshot.get('component_cgroup_ns', 0)


def _session_usage_ns(layout, relative):
    """A session group's CPU time; 0 where it is gone or has no CPU accounting (its CPU then stays counted)."""
    try:
        return _cgroup.cpu_usage_ns(layout, relative)
    except (OSError, _cgroup.MeasurementError):
        return 0


def session_millicores(before, after, elapsed_ns):
    """CPU of SSH sessions between two snapshots; 0 unless both saw the same session groups."""
    if before.get('session_cgroups') != after.get('session_cgroups'):
        return 0
    return max(0, int(round(1000 * (after.get('session_ns', 0) - before.get('session_ns', 0)) / elapsed_ns)))


def cpu_between(before, after, capacity_millicores):
    """CPU use between two snapshots: node busy, kubepods, kubelet+runtime, in millicores.

    None when the counters went backwards (a reboot, a recreated cgroup): no honest figure then.
    """
    if any(after[k] < before[k] for k in ('time', 'busy_jiffies', 'total_jiffies', 'kubepods_ns')):
        return None
    elapsed_ns = max(1, int((after['time'] - before['time']) * 1e9))
    total_delta = max(1, after['total_jiffies'] - before['total_jiffies'])
    node_m = int(round(capacity_millicores * (after['busy_jiffies'] - before['busy_jiffies']) / total_delta))
    pods_m = int(round(1000 * (after['kubepods_ns'] - before['kubepods_ns']) / elapsed_ns))
    sessions_m = min(max(0, node_m - pods_m), session_millicores(before, after, elapsed_ns))
    ticks_per_second = os.sysconf('SC_CLK_TCK')
    component_ns = (_component_cgroup_delta_ns(before, after)
                    + (after['component_ticks'] - before['component_ticks']) * 1e9 / ticks_per_second)
    return {
        'sample_seconds': round(elapsed_ns / 1e9, 3),
        'node_busy_millicores': node_m,
        'kubepods_millicores': pods_m,
        'non_pod_millicores': max(0, node_m - pods_m - sessions_m),
        'session_millicores': sessions_m,
        'session_cgroups': after.get('session_cgroups', []),
        'kube_components_millicores': max(0, int(round(1000 * component_ns / elapsed_ns))),
    }


def sample_cpu(layout, kubepods, component_cgroups, component_pids, capacity_millicores,
               sample_seconds, proc_root='/proc', sleep=time.sleep):
    """CPU use over ``sample_seconds``: node busy, kubepods, kubelet+runtime, in millicores."""
    before = cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root)
    sleep(sample_seconds)
    after = cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root)
    return cpu_between(before, after, capacity_millicores) or cpu_between(after, after, capacity_millicores)


def _component_memory(layout, component_cgroups, stats=None):
    """The kubelet/runtime groups' memory; a group removed since its process was found is left out."""
    readings = []
    for relative in component_cgroups:
        try:
            readings.append(_cgroup.memory_working_set(layout, relative, stats))
        except _cgroup.MeasurementError:
            if _cgroup.cgroup_exists(layout, relative):
                raise
    return readings


def memory(layout, kubepods, meminfo, component_cgroups, component_pids, proc_root='/proc', own_pids=(), cmdlines=None):
    """Memory readings: MemTotal, MemAvailable, kubepods, system.slice, kubelet+runtime, non-pod (with its swap).

    The measuring tool's own processes (Ansible's module interpreters, ``own_pids``) are left out of the non-pod
    figure and returned as ``measurement_tool`` (_tool_processes says why and how); ``cmdlines`` as for
    _tool_processes.find.
    """
    stats = {}  # each group's memory.stat, parsed once for its working set and its swap cache
    if kubepods is None:
        kubepods_memory = {'cgroup': None, 'working_set_bytes': 0}
    else:
        kubepods_memory = _cgroup.memory_working_set(layout, kubepods, stats)
    system_slice = None
    if _cgroup.cgroup_exists(layout, 'system.slice'):
        system_slice = _cgroup.memory_working_set(layout, 'system.slice', stats)
    component_memory = _component_memory(layout, component_cgroups, stats)
    component_rss = sum(_procfs.read_process_rss_bytes(p, proc_root) or 0 for p in component_pids)
    kube_components_ws = sum(c['working_set_bytes'] for c in component_memory) + component_rss
    # Swapped-out non-pod memory is counted in the non-pod figure (_swap says why and how).
    swap = _swap.measure(layout, kubepods, meminfo, component_cgroups, stats)
    tool = _tool_processes.find(proc_root, kubepods, own_pids, cmdlines)
    accounting = _memory_accounting.non_pod_memory(meminfo, kubepods_memory,
                                                   _memory_accounting.read_low_watermark_bytes(proc_root),
                                                   swap['bytes'], tool['bytes'])
    return {
        'mem_total_bytes': meminfo['MemTotal'],
        'mem_available_bytes': meminfo['MemAvailable'],
        'kubepods_working_set_bytes': kubepods_memory['working_set_bytes'],
        # The pods' page cache MemAvailable already counts is not subtracted twice (_memory_accounting).
        'non_pod_bytes': accounting['bytes'],
        'non_pod_poc_bytes': accounting['poc_bytes'],
        'non_pod_accounting': accounting,
        'non_pod_swap_bytes': swap['bytes'],
        'swap': swap,
        'measurement_tool': dict(tool, left_out_bytes=accounting['measurement_tool_bytes']),
        'kube_components_working_set_bytes': kube_components_ws,
        'kubepods': kubepods_memory,
        'system_slice': system_slice,
        'kube_components': {'cgroups': component_memory, 'pids_by_rss': component_pids,
                            'rss_bytes': component_rss},
    }
