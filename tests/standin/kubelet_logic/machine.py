"""What the kubelet learns about the machine: capacity and the cgroup hierarchies.

Upstream: cAdvisor (google/cadvisor machine/machine.go: memory capacity is MemTotal from /proc/meminfo;
huge pages from /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages) as the kubelet's
``CapacityFromMachineInfo`` (pkg/kubelet/cadvisor/util.go) turns it into capacity; the cgroup mounts as
opencontainers/cgroups finds them (``IsCgroup2UnifiedMode``: /sys/fs/cgroup is cgroup2; v1 controllers
from /proc/self/mountinfo).
"""

from __future__ import annotations

import collections
import os

Layout = collections.namedtuple('Layout', ['version', 'memory_root', 'cpu_root', 'cpuacct_root'])


def meminfo_total_bytes(path='/proc/meminfo'):
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            fields = line.split()
            if fields and fields[0] == 'MemTotal:':
                return int(fields[1]) * 1024
    raise ValueError('no MemTotal in %s' % path)


def hugepages_bytes(base='/sys/kernel/mm/hugepages'):
    total = 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    for name in names:
        if name.startswith('hugepages-') and name.endswith('kB'):
            with open(os.path.join(base, name, 'nr_hugepages'), encoding='utf-8') as handle:
                total += int(handle.read().strip()) * int(name[len('hugepages-'):-2]) * 1024
    return total


def _mounts(path):
    """(mount point, fstype, super options) per visible mount point: the last mount over a point wins."""
    visible = {}
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            before, _sep, after = line.partition(' - ')
            fields, tail = before.split(), after.split()
            if len(fields) >= 5 and len(tail) >= 3:
                visible[fields[4]] = (tail[0], set(tail[2].split(',')))
    return visible


def cgroup_layout(mountinfo='/proc/self/mountinfo'):
    mounts = _mounts(mountinfo)
    root = mounts.get('/sys/fs/cgroup')
    if root and root[0] == 'cgroup2':
        return Layout('v2', '/sys/fs/cgroup', '/sys/fs/cgroup', '/sys/fs/cgroup')
    found = {}
    for mount_point, (fstype, options) in sorted(mounts.items()):
        if fstype == 'cgroup':
            for controller in ('memory', 'cpu', 'cpuacct'):
                if controller in options:
                    found.setdefault(controller, mount_point)
    if 'memory' not in found:
        raise ValueError('no cgroup v1 memory hierarchy and /sys/fs/cgroup is not cgroup2')
    return Layout('v1', found['memory'], found.get('cpu', found['memory']), found.get('cpuacct', found['memory']))


def numa_node_ids(base='/sys/devices/system/node'):
    """The NUMA node ids cAdvisor finds (node*[0-9] directories); None where there are none to read."""
    try:
        names = os.listdir(base)
    except OSError:
        return None
    ids = {int(name[4:]) for name in names if name.startswith('node') and name[4:].isdigit()}
    return ids or None


def online_cpus(path='/sys/devices/system/cpu/online', parse_cpuset=None):
    """The kernel's online CPU ids, or None where the file cannot be read."""
    try:
        with open(path, encoding='ascii') as handle:
            return parse_cpuset(handle.read().strip())
    except (OSError, ValueError):
        return None
