# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Static reservation formulas of the managed Kubernetes offerings, for comparison and as floors.

Each function takes the node's memory capacity in bytes (MemTotal), its CPU count and, where the vendor uses
them, the maximum number of pods or the vendor's sizing version, and returns kubeReserved, systemReserved and
the hard eviction threshold the vendor sets, as integers (bytes, millicores). The sources, read file by file
at the commits named in docs/formulas.md, and how each vendor rounds:

* OpenShift: openshift/machine-config-operator templates/common/_base/files/kubelet-auto-sizing.yaml
  (``dynamic-system-reserved-calc.sh``, ``dynamic_memory_sizing`` and ``dynamic_cpu_sizing``).
* EKS: awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go (``getCPUMillicoresToReserve``,
  ``getResourceToReserveInRange``, ``GetMemoryMebibytesToReserve``, ``defaultKubeletSubConfig``).
* GKE: cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes ("Node allocatable resources").
* AKS: MicrosoftDocs/azure-aks-docs articles/aks/node-resource-reservations.md (the AKS resource provider
  computes the values and hands them to Azure/AgentBaker as kubelet flags).
* AKS Node Hardening (preview): learn.microsoft.com/en-us/azure/aks/node-hardening, the "Resource reservations"
  table comparing the standard 1.29+ defaults with the hardened ones.
"""

from __future__ import annotations

from fractions import Fraction

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults

MIB = 1024 * 1024
GIB = 1024 * MIB
# AKS writes "MB": decimal megabytes, as its own worked example (25% of 4 GB = 1000 MB) shows.
MB = 1000 * 1000

# GKE and AKS (before 1.29): (tier size in bytes, fraction) applied in order; the last tier has no bound.
MEMORY_TIERS = ((4 * GIB, Fraction(25, 100)), (4 * GIB, Fraction(20, 100)), (8 * GIB, Fraction(10, 100)),
                (112 * GIB, Fraction(6, 100)), (None, Fraction(2, 100)))
# GKE, and OpenShift's sizing version 1: (tier size in cores, fraction of a core).
CPU_TIERS = ((1, Fraction(6, 100)), (1, Fraction(1, 100)), (2, Fraction(5, 1000)), (None, Fraction(25, 10000)))
# EKS nodeadm getCPUMillicoresToReserve: range bounds in millicores and basis points (1/10000) of each range.
EKS_CPU_RANGES = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, None, 25))
# AKS: kube-reserved CPU by core count (cores -> millicores), the documented rows.
AKS_CPU_TABLE = ((1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740))
# AKS Node Hardening (learn.microsoft.com/en-us/azure/aks/node-hardening): unlike the standard AKS page, it writes
# MiB. kube-reserved memory min(35 MiB x maxPods + max(250 MiB, 2% of node memory), 25% of node memory);
# system-reserved 100m CPU and 200 MiB + 100 MiB per full 32 GiB of node memory (+ 100 MiB with Azure CNI).
AKS_HARDENED_PER_POD_BYTES = 35 * MIB
AKS_HARDENED_BASE_BYTES = 250 * MIB
AKS_HARDENED_SYSTEM_MILLICORES = 100
AKS_HARDENED_SYSTEM_BASE_BYTES = 200 * MIB
AKS_HARDENED_SYSTEM_PER_32_GIB_BYTES = 100 * MIB
AKS_HARDENED_AZURE_CNI_BYTES = 100 * MIB
# OpenShift dynamic-system-reserved-calc.sh: NODE_AUTO_SIZING_VERSION defaults to 2 when the node has no
# /etc/node-sizing-version.json yet (a node keeps the version its file names).
OPENSHIFT_SIZING_VERSIONS = (1, 2)
OPENSHIFT_DEFAULT_SIZING_VERSION = 2
OPENSHIFT_MIN_CPU_MILLICORES = 500
# Hard eviction (memory.available) each vendor sets: AKS before 1.29 750Mi, everyone else 100Mi (EKS and
# AKS 1.29+ write it, GKE documents it, OpenShift leaves the kubelet's own default).
DEFAULT_EVICTION_BYTES = 100 * MIB
AKS_LEGACY_EVICTION_BYTES = 750 * MIB


# Every tier's fraction over one common denominator: the tiers are summed in integers, exactly (a Fraction sum cost a
# seventh of the facts module's gathering).
TIER_DENOMINATOR = 10000


def _tiered(amount, tiers):
    """Sum of each tier's fraction of the part of ``amount`` inside it, in 1/TIER_DENOMINATOR units (exact)."""
    reserved = 0
    remaining = amount
    for size, fraction in tiers:
        portion = remaining if size is None else min(remaining, size)
        if portion <= 0:
            break
        reserved += portion * fraction.numerator * (TIER_DENOMINATOR // fraction.denominator)
        remaining -= portion
    return reserved


def tiered_memory_bytes(capacity_bytes):
    """25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128; bytes, down."""
    return _tiered(capacity_bytes, MEMORY_TIERS) // TIER_DENOMINATOR


def tiered_cpu_millicores(cpus):
    """6% of the first core, 1% of the second, 0.5% of the next two, 0.25% above four; whole millicores, up.

    GKE does not say how it rounds 87.5m (7 cores); a quantity of 0.0875 cores is 88m to the kubelet
    (resource.Quantity.MilliValue rounds up), so up it is.
    """
    return -(-_tiered(cpus, CPU_TIERS) * 1000 // TIER_DENOMINATOR)


def eks_cpu_millicores(cpus):
    """nodeadm getCPUMillicoresToReserve: per range, (part of the capacity in it) x basis points / 10000 in Go
    integer arithmetic, so each range truncates to whole millicores (7 CPUs: 60 + 10 + 10 + 7 = 87m)."""
    total = cpus * 1000
    reserved = 0
    for start, end, basis_points in EKS_CPU_RANGES:
        if total <= start:
            continue
        upper = total if end is None else min(total, end)
        reserved += (upper - start) * basis_points // 10000
    return reserved


def aks_cpu_millicores(cpus):
    """The AKS table; a core count between two documented rows takes the row below it."""
    reserved = AKS_CPU_TABLE[0][1]
    for cores, millicores in AKS_CPU_TABLE:
        if cpus >= cores:
            reserved = millicores
    return reserved


def openshift_memory_bytes(capacity_bytes):
    """dynamic_memory_sizing: whole GiB from ``free -g`` (MemTotal truncated), 1 GiB up to 8, plus 6 % of each
    GiB above 8 while the rest is at most 120 GiB; beyond that 6.72 GiB plus 2 % of (GiB - 120) (the script
    subtracts 112, not 120, so the 2 % starts at 120 GiB); rounded half up to whole GiB (printf %d of x + 0.5)."""
    gib = capacity_bytes // GIB
    rest = gib - 8 if gib > 8 else 0
    if rest <= 120:
        hundredths = 100 + 6 * rest
    else:
        hundredths = 100 + 672 + 2 * (rest - 112)
    return (hundredths + 50) // 100 * GIB


def openshift_cpu_millicores(cpus, version=OPENSHIFT_DEFAULT_SIZING_VERSION):
    """dynamic_cpu_sizing. Version 2: 0.06 + 0.012 x (CPUs - 1) cores printed with %.2f (so whole 10m);
    version 1: the GKE CPU tiers. Both then at least 0.5 core."""
    if version not in OPENSHIFT_SIZING_VERSIONS:
        raise ValueError('OpenShift sizing version must be one of %s, got %r' % (OPENSHIFT_SIZING_VERSIONS, version))
    if version == 1:
        millicores = tiered_cpu_millicores(cpus)
    elif cpus > 1:
        millicores = (60 + 12 * (cpus - 1) + 5) // 10 * 10
    else:
        millicores = 60
    return max(millicores, OPENSHIFT_MIN_CPU_MILLICORES)


def _result(name, kube_memory, kube_cpu, system_memory=0, system_cpu=0, eviction_bytes=DEFAULT_EVICTION_BYTES,
            notes=()):
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
    """GKE: 255 MiB below 1 GiB, else the memory tiers; the CPU tiers; 100Mi hard eviction; all kubeReserved."""
    memory = 255 * MIB if capacity_bytes < GIB else tiered_memory_bytes(capacity_bytes)
    return _result('gke', memory, tiered_cpu_millicores(cpus))


def aks_legacy(capacity_bytes, cpus, max_pods=None):
    """AKS before Kubernetes 1.29: the memory tiers, CPU by table, 750Mi hard eviction."""
    return _result('aks-legacy', tiered_memory_bytes(capacity_bytes), aks_cpu_millicores(cpus),
                   eviction_bytes=AKS_LEGACY_EVICTION_BYTES)


def aks(capacity_bytes, cpus, max_pods=_defaults.MAX_PODS):
    """AKS from Kubernetes 1.29: min(20 MB x max pods + 50 MB, 25% of memory), decimal MB; 100Mi hard eviction."""
    memory = min(20 * MB * max_pods + 50 * MB, capacity_bytes // 4)
    return _result('aks', memory, aks_cpu_millicores(cpus), notes=['MB here are decimal (1,000,000 bytes)'])


def aks_hardened(capacity_bytes, cpus, max_pods=_defaults.MAX_PODS, azure_cni=False):
    """AKS Node Hardening (preview): kube-reserved CPU by the AKS table (unchanged), kube-reserved memory
    min(35 MiB x max pods + max(250 MiB, 2 % of memory), 25 % of memory); system-reserved 100m and 200 MiB plus
    100 MiB per full 32 GiB of memory, plus 100 MiB on clusters using Azure CNI.

    The page says the hardened hard-eviction threshold for memory.available scales with node memory but its
    ladder was not readable where we looked, so 100Mi (the 1.29+ default) stands in: this row's allocatable is
    an upper bound of what a hardened node gets (see docs/formulas.md).
    """
    kube_memory = min(AKS_HARDENED_PER_POD_BYTES * max_pods + max(AKS_HARDENED_BASE_BYTES, capacity_bytes * 2 // 100),
                      capacity_bytes // 4)
    system_memory = AKS_HARDENED_SYSTEM_BASE_BYTES + AKS_HARDENED_SYSTEM_PER_32_GIB_BYTES * (capacity_bytes // (32 * GIB))
    notes = ['Node Hardening preview; also systemReserved ephemeral-storage 1Gi',
             'hard eviction 100Mi assumed: the hardened threshold scales with memory and is not modelled']
    if azure_cni:
        system_memory += AKS_HARDENED_AZURE_CNI_BYTES
        notes.append('includes 100 MiB for Azure CNI')
    return _result('aks-hardened', kube_memory, aks_cpu_millicores(cpus), system_memory=system_memory,
                   system_cpu=AKS_HARDENED_SYSTEM_MILLICORES, notes=notes)


def eks(capacity_bytes, cpus, max_pods=_defaults.MAX_PODS):
    """EKS nodeadm: (11 x max pods + 255) MiB memory, CPU by basis-point ranges, 100Mi hard eviction."""
    return _result('eks', (11 * max_pods + 255) * MIB, eks_cpu_millicores(cpus),
                   notes=['also kubeReserved ephemeral-storage 1Gi'])


def openshift(capacity_bytes, cpus, max_pods=None, version=OPENSHIFT_DEFAULT_SIZING_VERSION):
    """OpenShift automatic node sizing: all of it is systemReserved (kubeReserved is not used)."""
    return _result('openshift', 0, 0, system_memory=openshift_memory_bytes(capacity_bytes),
                   system_cpu=openshift_cpu_millicores(cpus, version),
                   notes=['sizing version %d' % version, 'also systemReserved ephemeral-storage 1Gi'])


FORMULAS = {'gke': gke, 'aks': aks, 'aks-legacy': aks_legacy, 'aks-hardened': aks_hardened, 'eks': eks,
            'openshift': openshift}


def all_formulas(capacity_bytes, cpus, max_pods=_defaults.MAX_PODS, openshift_version=OPENSHIFT_DEFAULT_SIZING_VERSION):
    results = {name: function(capacity_bytes, cpus, max_pods) for name, function in FORMULAS.items()
               if name != 'openshift'}
    results['openshift'] = openshift(capacity_bytes, cpus, max_pods, openshift_version)
    return results
