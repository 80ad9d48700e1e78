# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Static reservation formulas of the managed Kubernetes offerings, for comparison and as floors.

Constants and their sources are listed in docs/formulas.md. Every function takes the
node's memory capacity in bytes, its CPU count and (where the vendor uses it) the
maximum number of pods, and returns kubeReserved, systemReserved and the hard
eviction threshold each vendor sets, as integers (bytes, millicores).
"""

from __future__ import annotations

MIB = 1024 * 1024
GIB = 1024 * MIB

# (tier size, fraction) applied in order; the last tier has no upper bound.
MEMORY_TIERS = ((4 * GIB, 0.25), (4 * GIB, 0.20), (8 * GIB, 0.10), (112 * GIB, 0.06), (None, 0.02))
# (tier size in cores, fraction of a core) applied in order.
CPU_TIERS = ((1, 0.06), (1, 0.01), (2, 0.005), (None, 0.0025))
# AKS: kube-reserved CPU by core count (cores -> millicores), for 1 to 64 cores.
AKS_CPU_TABLE = ((1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740))


def _tiered(amount, tiers):
    reserved = 0.0
    remaining = amount
    for size, fraction in tiers:
        portion = remaining if size is None else min(remaining, size)
        if portion <= 0:
            break
        reserved += portion * fraction
        remaining -= portion
    return reserved


def tiered_memory_bytes(capacity_bytes):
    """25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128."""
    return int(_tiered(capacity_bytes, MEMORY_TIERS))


def tiered_cpu_millicores(cpus):
    """6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of every core above four."""
    return int(round(_tiered(cpus, CPU_TIERS) * 1000))


def _result(name, kube_memory, kube_cpu, system_memory=0, system_cpu=0, eviction_bytes=100 * MIB, notes=()):
    return {
        'name': name,
        'kube_reserved_memory_bytes': int(kube_memory),
        'kube_reserved_millicores': int(kube_cpu),
        'system_reserved_memory_bytes': int(system_memory),
        'system_reserved_millicores': int(system_cpu),
        'eviction_hard_memory_bytes': int(eviction_bytes),
        'reserved_memory_bytes': int(kube_memory + system_memory),
        'reserved_millicores': int(kube_cpu + system_cpu),
        'notes': list(notes),
    }


def gke(capacity_bytes, cpus, max_pods=None):
    if capacity_bytes < GIB:
        memory = 255 * MIB
    else:
        memory = tiered_memory_bytes(capacity_bytes)
    return _result('gke', memory, tiered_cpu_millicores(cpus))


def aks_legacy(capacity_bytes, cpus, max_pods=None):
    """AKS before Kubernetes 1.29: tiered memory, CPU by table, 750Mi hard eviction."""
    return _result('aks-legacy', tiered_memory_bytes(capacity_bytes), aks_cpu_millicores(cpus),
                   eviction_bytes=750 * MIB)


def aks(capacity_bytes, cpus, max_pods=110):
    """AKS from Kubernetes 1.29: min(20 MiB x max pods + 50 MiB, 25% of memory), 100Mi hard eviction."""
    memory = min(20 * MIB * max_pods + 50 * MIB, capacity_bytes // 4)
    return _result('aks', memory, aks_cpu_millicores(cpus))


def aks_cpu_millicores(cpus):
    """The AKS table; a core count between two rows takes the row below it."""
    reserved = AKS_CPU_TABLE[0][1]
    for cores, millicores in AKS_CPU_TABLE:
        if cpus >= cores:
            reserved = millicores
    return reserved


def eks(capacity_bytes, cpus, max_pods=110):
    """EKS (Amazon Linux bootstrap): 11 MiB x max pods + 255 MiB memory, tiered CPU, 100Mi hard eviction."""
    return _result('eks', 11 * MIB * max_pods + 255 * MIB, tiered_cpu_millicores(cpus))


def openshift(capacity_bytes, cpus, max_pods=None):
    """OpenShift automatic node sizing: all of it is systemReserved (kubeReserved is not used)."""
    memory = 255 * MIB if capacity_bytes <= GIB else tiered_memory_bytes(capacity_bytes)
    return _result('openshift', 0, 0, system_memory=memory, system_cpu=tiered_cpu_millicores(cpus))


FORMULAS = {'gke': gke, 'aks': aks, 'aks-legacy': aks_legacy, 'eks': eks, 'openshift': openshift}


def all_formulas(capacity_bytes, cpus, max_pods=110):
    return {name: function(capacity_bytes, cpus, max_pods) for name, function in FORMULAS.items()}
