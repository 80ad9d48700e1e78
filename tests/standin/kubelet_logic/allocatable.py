"""Node allocatable: what the kubelet gives the kubepods cgroup and what it reports to the scheduler.

Upstream (kubernetes/kubernetes):
* pkg/kubelet/cm/node_container_manager_linux.go: ``getNodeAllocatableAbsoluteImpl`` (the kubepods
  limit when ``pods`` is enforced: capacity - systemReserved - kubeReserved, floored at 0; eviction
  thresholds are not subtracted), ``GetNodeAllocatableReservation`` (reserved + hard eviction, for
  the scheduler), ``validateNodeAllocatable`` (a reservation above capacity stops the container
  manager), ``getCgroupConfigInternal`` (memory bytes and ``MilliCPUToShares`` of the CPU);
* pkg/kubelet/cm/helpers_linux.go ``MilliCPUToShares`` (MinShares 2, 1024 per CPU, MaxShares 262144);
* pkg/kubelet/nodestatus/setters.go ``MachineInfo`` (status.allocatable = capacity - reservation,
  floored at 0, minus every hugepages-<size> capacity from memory);
* opencontainers/cgroups ``ConvertCPUSharesToCgroupV2Value`` (cpu.weight on cgroup v2).
"""

from __future__ import annotations

from . import eviction, quantity

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000


class AllocatableError(ValueError):
    pass


def milli_cpu_to_shares(millicores):
    """helpers_linux.go MilliCPUToShares."""
    if millicores == 0:
        return MIN_SHARES
    shares = millicores * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def cpu_shares_to_weight(shares):
    """opencontainers/cgroups ConvertCPUSharesToCgroupV2Value: [2, 262144] -> [1, 10000]."""
    if shares == 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def reserved(resource_list, name):
    """The parsed reservation of one resource: bytes for memory, millicores for cpu (0 when absent)."""
    amount = (resource_list or {}).get(name)
    if amount is None:
        return 0
    return quantity.milli_value(amount) if name == 'cpu' else quantity.value(amount)


def compute(capacity_memory_bytes, capacity_millicores, kube_reserved, system_reserved, hard_thresholds,
            enforce_node_allocatable, hugepages_bytes=0):
    """Everything the kubelet derives from one config on one node; raises AllocatableError like it stops.

    ``kube_reserved``/``system_reserved`` are parsed resource lists (validation.parse_resource_list);
    ``hard_thresholds`` what eviction.parse_threshold_config returned for evictionHard.
    """
    reserved_memory = reserved(kube_reserved, 'memory') + reserved(system_reserved, 'memory')
    reserved_millicores = reserved(kube_reserved, 'cpu') + reserved(system_reserved, 'cpu')
    eviction_bytes = eviction.hard_eviction_memory_bytes(hard_thresholds, capacity_memory_bytes)
    errors = []
    # validateNodeAllocatable: only resources whose total reservation is non-zero are checked.
    for name, total, capacity in (('cpu', reserved_millicores, capacity_millicores),
                                  ('memory', reserved_memory + eviction_bytes, capacity_memory_bytes)):
        if total and capacity - total < 0:
            errors.append('Resource "%s" has a reservation of %s but capacity of %s. Expected capacity >= reservation.'
                          % (name, total, capacity))
    if errors:
        raise AllocatableError('invalid Node Allocatable configuration. %s' % ' '.join(errors))
    pods_enforced = 'pods' in (enforce_node_allocatable or [])
    if pods_enforced:
        limit_bytes = max(0, capacity_memory_bytes - reserved_memory)
        limit_millicores = max(0, capacity_millicores - reserved_millicores)
    else:  # enforceNodeAllocatableCgroups still updates kubepods, with capacity
        limit_bytes, limit_millicores = capacity_memory_bytes, capacity_millicores
    allocatable_bytes = max(0, capacity_memory_bytes - reserved_memory - eviction_bytes)
    allocatable_bytes = max(0, allocatable_bytes - hugepages_bytes)
    return {
        'capacity_memory_bytes': capacity_memory_bytes,
        'capacity_millicores': capacity_millicores,
        'kubepods_memory_limit_bytes': limit_bytes,
        'kubepods_cpu_shares': milli_cpu_to_shares(limit_millicores),
        'allocatable_memory_bytes': allocatable_bytes,
        'allocatable_millicores': max(0, capacity_millicores - reserved_millicores),
        'hard_eviction_memory_bytes': eviction_bytes,
    }


def status_quantities(derived):
    """status.capacity and status.allocatable as the kubelet serialises them (memory BinarySI, cpu DecimalSI)."""
    return ({'memory': quantity.format_bytes(derived['capacity_memory_bytes']),
             'cpu': quantity.format_millicores(derived['capacity_millicores'])},
            {'memory': quantity.format_bytes(derived['allocatable_memory_bytes']),
             'cpu': quantity.format_millicores(derived['allocatable_millicores'])})
