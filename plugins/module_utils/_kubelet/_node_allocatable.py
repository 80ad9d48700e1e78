# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Node allocatable and the kubepods cgroup limit, computed as the kubelet computes them.

pkg/kubelet/cm/node_container_manager_linux.go:
* ``GetNodeAllocatableReservation`` = systemReserved + kubeReserved + hard
  eviction (memory.available for memory); the Node's ``status.allocatable``
  is capacity minus that, floored at zero;
* ``getNodeAllocatableAbsolute`` = capacity - systemReserved - kubeReserved,
  floored at zero: the kubepods cgroup limit when ``enforceNodeAllocatable``
  holds ``pods`` (capacity otherwise). Eviction is not subtracted there;
* ``getCgroupConfig``: memory limit = ``Value()``, cpu shares =
  ``MilliCPUToShares(MilliValue())`` (pkg/kubelet/cm/helpers_linux.go:
  shares = milli * 1024 / 1000, at least 2, at most 262144);
* ``validateNodeAllocatable`` refuses a reservation above capacity.

Ephemeral storage (``compute_ephemeral_storage``) takes the same path with its own capacity: the size of the
filesystem holding the kubelet's root dir (``Start``: ``cadvisor.EphemeralStorageCapacityFromFsInfo(RootFsInfo())``,
cAdvisor's ``GetDirFsInfo(rootPath)``, whose capacity is statfs ``f_frsize * f_blocks``, google/cadvisor fs/fs.go
``getVfsStats`` at 0087906c) and the hard ``nodefs.available`` threshold in place of ``memory.available``
(pkg/kubelet/cm/helpers.go ``hardEvictionReservation`` at 05f67d83).
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._eviction import hard_eviction_memory_bytes
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._defaults import (
    ENFORCE_NODE_ALLOCATABLE, effective_enforce_node_allocatable, effective_eviction_hard)

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000


def milli_cpu_to_shares(milli_cpu):
    if milli_cpu == 0:
        return MIN_SHARES
    shares = (milli_cpu * SHARES_PER_CPU) // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def reserved_amount(reserved, resource, scale):
    """A resource from a reservation map as an integer (bytes: scale 0, millicores: scale -3)."""
    text = (reserved or {}).get(resource)
    if text is None:
        return 0
    value = _quantity.parse_quantity(str(text))
    return _quantity.scaled_value(value, scale)


def compute(capacity_memory_bytes, capacity_millicores, kube_reserved, system_reserved,
            eviction_hard, enforce_node_allocatable=ENFORCE_NODE_ALLOCATABLE, hugepages_bytes=0):
    """Everything the kubelet derives from one set of reservations, as integers.

    Pre-allocated huge pages are part of MemTotal but not available to pods as memory: the kubelet
    takes them out of allocatable memory (pkg/kubelet/nodestatus/setters.go, MachineInfo) and out of
    the kubepods limit (getNodeAllocatableAbsoluteImpl).
    """
    kube_memory = reserved_amount(kube_reserved, 'memory', 0)
    system_memory = reserved_amount(system_reserved, 'memory', 0)
    kube_cpu = reserved_amount(kube_reserved, 'cpu', -3)
    system_cpu = reserved_amount(system_reserved, 'cpu', -3)
    eviction_memory = hard_eviction_memory_bytes(eviction_hard, capacity_memory_bytes)

    enforce_pods = 'pods' in (enforce_node_allocatable or ())
    limit_memory = max(0, capacity_memory_bytes - kube_memory - system_memory - hugepages_bytes)
    limit_cpu = max(0, capacity_millicores - kube_cpu - system_cpu)
    if not enforce_pods:
        limit_memory, limit_cpu = capacity_memory_bytes, capacity_millicores
    return {
        'capacity_memory_bytes': capacity_memory_bytes,
        'capacity_millicores': capacity_millicores,
        'kube_reserved_memory_bytes': kube_memory,
        'system_reserved_memory_bytes': system_memory,
        'kube_reserved_millicores': kube_cpu,
        'system_reserved_millicores': system_cpu,
        'eviction_hard_memory_bytes': eviction_memory,
        'allocatable_memory_bytes': max(0, capacity_memory_bytes - kube_memory - system_memory
                                        - eviction_memory - hugepages_bytes),
        'hugepages_bytes': hugepages_bytes,
        'allocatable_millicores': max(0, capacity_millicores - kube_cpu - system_cpu),
        'kubepods_memory_limit_bytes': limit_memory,
        'kubepods_cpu_shares': milli_cpu_to_shares(limit_cpu),
        'enforces_pods': enforce_pods,
        'reservation_exceeds_capacity': {
            'memory': kube_memory + system_memory + eviction_memory > capacity_memory_bytes,
            'cpu': kube_cpu + system_cpu > capacity_millicores,
        },
    }


def compute_for_config(config, capacity_memory_bytes, capacity_millicores, hugepages_bytes=0):
    """``compute`` for a KubeletConfiguration dict, with the kubelet's defaults for what it leaves out.

    No ``evictionHard`` means the Linux default (pkg/kubelet/eviction/defaults_linux.go; _defaults.effective_eviction_hard
    for mergeDefaultEvictionSettings); no
    ``enforceNodeAllocatable`` means ``[pods]`` (the v1beta1 default).
    """
    return compute(capacity_memory_bytes, capacity_millicores, config.get('kubeReserved'),
                   config.get('systemReserved'), effective_eviction_hard(config),
                   effective_enforce_node_allocatable(config.get('enforceNodeAllocatable')), hugepages_bytes)


def compute_ephemeral_storage(capacity_bytes, kube_reserved, system_reserved, eviction_hard, imagefs_capacity_bytes=None):
    """Allocatable ``ephemeral-storage`` as the kubelet derives it, as integers (bytes).

    pkg/kubelet/cm/node_container_manager_linux.go (018b4651; the same in the versions since):
    ``GetNodeAllocatableReservation``[ephemeral-storage] = systemReserved + kubeReserved + the hard
    ``nodefs.available`` threshold of ``capacity_bytes`` (a percentage: ``int64(float64(capacity) *
    float64(float32 share))``, _eviction.threshold_bytes); the Node's ``status.allocatable`` is capacity minus that,
    floored at zero (pkg/kubelet/nodestatus/setters.go ``MachineInfo``); ``getNodeAllocatableAbsolute`` is capacity -
    systemReserved - kubeReserved (no cgroup takes it: there is no storage controller); ``validateNodeAllocatable``
    refuses a reservation above capacity. A reserved quantity is taken as whole bytes rounded up (``Value()``), as for
    memory.

    ``imagefs_capacity_bytes``: the image filesystem's size where it is a separate filesystem (None: the kubelet's
    filesystem holds the images too). Its hard ``imagefs.available`` threshold is returned in bytes for the
    eviction manager's accounting, but is *not* subtracted: ``hardEvictionReservation`` reserves only for
    ``memory.available`` and ``nodefs.available``, so pods on a node with a separate image filesystem are promised
    the whole kubelet filesystem less its own threshold, and the images' disk is the runtime's and the image
    collector's to keep free.
    """
    kube = reserved_amount(kube_reserved, 'ephemeral-storage', 0)
    system = reserved_amount(system_reserved, 'ephemeral-storage', 0)
    nodefs = _eviction.hard_eviction_bytes(eviction_hard, 'nodefs.available', capacity_bytes)
    reservation = kube + system + nodefs
    imagefs = None
    if imagefs_capacity_bytes is not None:
        imagefs = {'capacity_bytes': imagefs_capacity_bytes,
                   'eviction_hard_imagefs_bytes': _eviction.hard_eviction_bytes(eviction_hard, 'imagefs.available',
                                                                                imagefs_capacity_bytes)}
    return {
        'capacity_bytes': capacity_bytes,
        'kube_reserved_bytes': kube,
        'system_reserved_bytes': system,
        'eviction_hard_nodefs_bytes': nodefs,
        'reservation_bytes': reservation,
        'allocatable_bytes': max(0, capacity_bytes - reservation),
        'absolute_bytes': max(0, capacity_bytes - kube - system),
        'reservation_exceeds_capacity': reservation > capacity_bytes,
        'imagefs': imagefs,
    }


def ephemeral_storage_for_config(config, capacity_bytes, imagefs_capacity_bytes=None, version=None):
    """``compute_ephemeral_storage`` for a KubeletConfiguration dict, with the kubelet's default evictionHard (of
    ``version``: _defaults.effective_eviction_hard) where it sets none."""
    return compute_ephemeral_storage(capacity_bytes, config.get('kubeReserved'), config.get('systemReserved'),
                                     effective_eviction_hard(config, version), imagefs_capacity_bytes)


def compute_pids(capacity, kube_reserved, system_reserved, eviction_hard, enforce_node_allocatable=ENFORCE_NODE_ALLOCATABLE):
    """The kubelet's ``pid`` arithmetic, as integers (tasks).

    ``pid`` is an internal resource: container_manager_linux.go puts ``pidlimit.Stats().MaxPID`` (``capacity``: the
    smaller of kernel.pid_max and kernel.threads-max, _node/_task_count) in ``internalCapacity`` only, not in the
    ``capacity`` the Node reports, so no ``status.allocatable`` pid exists and ``validateNodeAllocatable`` (a loop over
    ``capacity``) never refuses a pid reservation. ``getNodeAllocatableInternalAbsolute`` (node_container_manager_linux.go
    at 018b4651, ``getNodeAllocatableAbsoluteImpl``: capacity - systemReserved - kubeReserved, floored at zero) is the
    kubepods group's ``pids.max`` (``getCgroupConfig``: ``PidsLimit = q.Value()``) where ``enforceNodeAllocatable``
    holds ``pods``, else capacity. The hard ``pid.available`` threshold is not subtracted (``hardEvictionReservation``
    knows only memory.available and nodefs.available): it evicts pods when capacity - every task on the node falls
    below it (eviction/helpers.go ``makeSignalObservations``), a percentage taken of the capacity.
    """
    kube = reserved_amount(kube_reserved, 'pid', 0)
    system = reserved_amount(system_reserved, 'pid', 0)
    eviction = _eviction.hard_eviction_bytes(eviction_hard, 'pid.available', capacity)
    enforce_pods = 'pods' in (enforce_node_allocatable or ())
    absolute = max(0, capacity - kube - system)
    return {
        'capacity': capacity,
        'kube_reserved': kube,
        'system_reserved': system,
        'eviction_hard_pid_available': eviction,
        'absolute': absolute,
        'kubepods_pids_max': absolute if enforce_pods else capacity,
        'enforces_pods': enforce_pods,
        'reservation_exceeds_capacity': kube + system > capacity,
    }


def as_quantities(result):
    """The allocatable part of ``compute`` as Kubernetes quantity strings."""
    return {
        'memory': _quantity.format_memory(result['allocatable_memory_bytes']),
        'cpu': _quantity.format_cpu(result['allocatable_millicores']),
    }
