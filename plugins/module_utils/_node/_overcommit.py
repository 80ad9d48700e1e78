# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Memory overcommit audit read from the pods' own cgroups: no API server needed.

The kubelet writes every pod's limits and requests into the pod's cgroup
(pkg/kubelet/cm/pod_container_manager_linux.go, ``EnsureExists`` with
``ResourceConfigForPod`` from pkg/kubelet/cm/helpers_linux.go):

* memory limit: v1 ``memory.limit_in_bytes``, v2 ``memory.max`` (``max``, or the v1 page-counter
  maximum 9223372036854771712, when a container of the pod has no limit);
* CPU request: v1 ``cpu.shares`` = ``MilliCPUToShares(request)`` (request * 1024 / 1000, at least 2);
  v2 ``cpu.weight`` = ``CpuSharesToCpuWeight(shares)`` = 1 + (shares - 2) * 9999 / 262142
  (pkg/kubelet/cm/cgroup_manager_linux.go). Read back here with the kubelet's own inverse,
  ``sharesToMilliCPU`` (pkg/kubelet/kuberuntime/helpers_linux.go: ceil(shares * 1000 / 1024)); the
  v2 weight is first mapped back to shares, which loses up to 26 shares (about 26 millicores).
  Shares of 2 (the kernel minimum, what a pod with no request gets) count as no request.

Pods sit under the kubepods cgroup by QoS class (pkg/kubelet/cm/qos_container_manager_linux.go):
Guaranteed pods directly, Burstable and BestEffort pods under ``burstable`` / ``besteffort``
(``kubepods-burstable.slice`` / ``kubepods-besteffort.slice`` with the systemd driver).
"""

from __future__ import annotations

import math
import os
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

UNLIMITED_AT_LEAST = 1 << 62  # v1 reports "no limit" as PAGE_COUNTER_MAX * PAGE_SIZE (9223372036854771712 with 4 KiB pages)
MIN_SHARES = 2
# The most pods a reading may count (a history line's ``pods``, a Prometheus series of pods). The kubelet bounds maxPods
# only by int32, but no node holds this many: Kubernetes tests 110 per node and OpenShift supports at most 2,500, each
# pod a cgroup and a sandbox. More is not a count of one node's pods (a value another writer made up, a series of
# something else).
MAX_PODS = 1 << 16

_POD = re.compile(r'^(?:pod[0-9a-fA-F_-]+|kubepods(?:-burstable|-besteffort)?-pod[0-9a-fA-F_]+\.slice)$')
_QOS_DIRS = (('burstable', ('burstable', 'kubepods-burstable.slice')),
             ('besteffort', ('besteffort', 'kubepods-besteffort.slice')))
_QOS_NAMES = frozenset(name for _qos, names in _QOS_DIRS for name in names)


def is_pod_count(value):
    """Whether ``value`` is a count of pods a history line may carry: a whole number (not a bool) from 0 to MAX_PODS."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_PODS


def shares_to_millicores(shares):
    """kuberuntime ``sharesToMilliCPU``, with the kernel minimum read as no request."""
    if shares <= MIN_SHARES:
        return 0
    return int(math.ceil(shares * 1000 / 1024.0))


def weight_to_shares(weight):
    """Inverse of cgroup_manager_linux.go ``CpuSharesToCpuWeight`` (to the nearest share)."""
    return MIN_SHARES + int(round((weight - 1) * 262142 / 9999.0))


def _read_limit(path):
    """Bytes, or None for no limit (``max`` on v2, the page-counter maximum on v1)."""
    text = _procfs.read_bytes(path).strip()
    if text == b'max':
        return None
    value = int(text)
    return None if value >= UNLIMITED_AT_LEAST else value


def group_cpu_millicores(layout, relative, roots=None):
    """A group's CPU weight read back as millicores (a pod's request; for kubepods, allocatable CPU).

    ``roots``: on v1, where to look for cpu.shares (``cpu_shares_roots``), found once for all the pods."""
    try:
        if layout.version == 'v2':
            directory = _cgroup.cpu_controller_dir(layout, relative)
            return shares_to_millicores(weight_to_shares(int(_procfs.read_bytes(os.path.join(directory, 'cpu.weight')).strip())))
        for root in roots or _cgroup.cpu_controller_roots(layout):
            # Opened where cpu_controller_dir would test for it first: one system call per pod instead of two.
            try:
                return shares_to_millicores(int(_procfs.read_bytes('%s/%s/cpu.shares' % (root, relative)).strip()))
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                continue
        return None
    except (OSError, ValueError, NodeallocError):
        return None


def cpu_shares_roots(layout, kubepods):
    """_cgroup.cpu_controller_roots with the one holding kubepods' cpu.shares first: its pods are below it, in the
    same hierarchy, so the other cannot hold theirs (the answer is the one each pod's own search would give)."""
    roots = _cgroup.cpu_controller_roots(layout)
    found = _cgroup.cpu_controller_dir(layout, kubepods) if layout.version == 'v1' else None
    return tuple(sorted(roots, key=lambda root: found != os.path.join(root, kubepods)))


def _pods(layout, kubepods):
    """[(qos, relative path)] of every pod cgroup under kubepods."""
    # scandir's is_dir answers from the directory entry's type: no stat per pod, nor per QoS group (kubepods' own
    # listing, which holds its Guaranteed pods, says which QoS groups are there).
    listing = _pod_listing(os.path.join(layout.memory_root, kubepods))
    if listing is None:
        return []
    names, groups = listing
    pods = [('guaranteed', kubepods + '/' + name) for name in names]
    for qos, qos_names in _QOS_DIRS:
        for qos_name in qos_names:
            if qos_name in groups:
                relative = kubepods + '/' + qos_name
                listing = _pod_listing(os.path.join(layout.memory_root, relative))
                if listing is not None:  # else removed while we read
                    pods.extend((qos, relative + '/' + name) for name in listing[0])
    return pods


def _pod_listing(directory):
    """(the pod groups' names in order, the QoS groups' names) of a directory, or None when it cannot be listed."""
    names, groups = [], set()
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                name = entry.name
                if 'pod' in name and _POD.match(name) and _is_dir(entry):
                    names.append(name)
                elif name in _QOS_NAMES and _is_dir(entry):
                    groups.add(name)
    except OSError:
        return None
    return sorted(names), groups


def _is_dir(entry):
    """Whether a directory entry is one, False where that cannot be known (as os.path.isdir answers): one entry that
    cannot be examined (a symlink loop under a ``cgroup_root`` outside cgroupfs) hides no other."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def audit(layout, kubepods):
    """Per-pod memory limits and CPU requests, their sums, and how they compare with the kubepods limit.

    ``limits_to_kubepods_percent`` answers "if every pod used its limit, kubepods would need N % of its
    limit"; pods without a memory limit are counted apart (they are bounded only by kubepods).
    """
    limit_file = _cgroup.memory_limit_file(layout)
    try:
        kubepods_limit = _read_limit(_cgroup.memory_limit_path(layout, kubepods))
    except (OSError, ValueError, NodeallocError):
        kubepods_limit = None
    pods, by_qos = [], {'guaranteed': 0, 'burstable': 0, 'besteffort': 0}
    roots = cpu_shares_roots(layout, kubepods)
    for qos, relative in _pods(layout, kubepods):
        try:
            # Joined by hand, as the CPU shares' path: os.path.join per pod was a tenth of the audit's own work.
            limit = _read_limit('%s/%s/%s' % (layout.memory_root, relative, limit_file))
        except (OSError, ValueError, NodeallocError):
            continue  # a pod removed while we read
        by_qos[qos] += 1
        pods.append({'cgroup': '/' + relative, 'qos': qos, 'memory_limit_bytes': limit,
                     'cpu_request_millicores': group_cpu_millicores(layout, relative, roots)})
    limited = [p['memory_limit_bytes'] for p in pods if p['memory_limit_bytes'] is not None]
    limits_sum = sum(limited)
    return {
        'limit_file': limit_file,
        'pods': len(pods),
        'pods_by_qos': by_qos,
        'pods_with_memory_limit': len(limited),
        'pods_without_memory_limit': len(pods) - len(limited),
        'memory_limits_sum_bytes': limits_sum,
        'cpu_requests_sum_millicores': sum(p['cpu_request_millicores'] or 0 for p in pods),
        'kubepods_memory_limit_bytes': kubepods_limit,
        'limits_to_kubepods_percent': (round(100.0 * limits_sum / kubepods_limit, 1) if kubepods_limit else None),
        'pod_details': pods,
    }
