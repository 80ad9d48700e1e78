# Private to nodealloc.kubelet: not a public API, may change without notice.
"""One measurement pass over a node, in one order, for the facts module (_gather) and the sampler (_sample_once).

The order: one pass over /proc's command lines finds the kubelet and the container runtime (most of a run's cost,
and the facts read the kubelet's cgroupDriver from what it finds), then the node's capacity and cgroup layout
(_probe.read_node), then where the kubelet and runtime are measured and the memory (_measure.memory), then CPU.
The two callers differ only in how CPU is taken (the module samples ``sample_seconds``; the sampler goes on from
its previous run's snapshot) and in what they read beside it: the facts read the kubelet's settings, version and
files too (_facts_measure), the sampler nothing of the kubelet's. Light on purpose, as _measure: the sampler
imports it once a minute, and its import closure is what the sampler installs.
"""

from __future__ import annotations

import time
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process, _measure, _procfs

# seen: [{pid, program}] of the kubelet and runtime processes found; cgroups: their own groups, measured as groups;
# pids: those in shared groups, measured by their own RSS and CPU ticks (_measure.component_targets).
Components = namedtuple('Components', 'seen cgroups pids')


def scan_processes(names, proc_root='/proc', units=None, ignored=None, need_executable=True):
    """(cmdlines, found): one pass over /proc's command lines, and the processes among them named ``names``.

    Only root's processes running root's programs count (_kubelet_process.find_processes: ``units``, ``ignored``,
    ``need_executable``). The command lines are handed on to _tool_processes (through ``read_memory``), which would
    otherwise read them all again."""
    cmdlines = _procfs.read_cmdlines(proc_root)
    return cmdlines, _kubelet_process.find_processes(names, proc_root, cmdlines, units, ignored, need_executable)


def read_memory(node, cmdlines, found, proc_root='/proc', own_pids=()):
    """(Components, memory): where the kubelet and runtime are measured, and the node's memory readings.

    ``node``: _probe.read_node's answer; ``own_pids``: the measuring process itself, left out of non-pod memory with
    Ansible's interpreters (_tool_processes)."""
    components = Components(*_measure.component_targets(node.layout, found, proc_root, node.kubepods))
    memory = _measure.memory(node.layout, node.kubepods, node.meminfo, components.cgroups, components.pids,
                             proc_root, own_pids=own_pids, cmdlines=cmdlines)
    return components, memory


def cpu_snapshot(node, components, proc_root='/proc'):
    """The cumulative CPU counters now (_measure.cpu_snapshot) of this node and its kubelet and runtime."""
    return _measure.cpu_snapshot(node.layout, node.kubepods, components.cgroups, components.pids, proc_root)


def sample_cpu(node, components, sample_seconds, proc_root='/proc', sleep=time.sleep):
    """CPU use over ``sample_seconds`` (_measure.sample_cpu)."""
    return _measure.sample_cpu(node.layout, node.kubepods, components.cgroups, components.pids,
                               node.capacity_millicores, sample_seconds, proc_root, sleep)
