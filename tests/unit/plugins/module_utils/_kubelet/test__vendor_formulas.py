"""Each formula against its vendor's source (files and commits in docs/formulas.md).

The tables below are literals. They were computed once, not by _vendor_formulas: the OpenShift rows by running the
functions of dynamic-system-reserved-calc.sh (machine-config-operator 36c7cead) themselves in bash with `free -g`
and `getconf _NPROCESSORS_ONLN` answering the node's size; the EKS rows by a line-by-line reading of nodeadm's
getCPUMillicoresToReserve (amazon-eks-ami 01375496); the GKE and AKS rows with exact fractions from the
documented tiers and table.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas as f

MIB, GIB = 1024 * 1024, 1024 * 1024 * 1024
NODE_GIB = (4, 8, 16, 32, 64, 128, 129, 192, 256)
NODE_CPUS = (2, 4, 7, 8, 16, 32, 48, 64)

# SYSTEM_RESERVED_MEMORY (Gi) the script writes for a node whose `free -g` says this many GiB.
OPENSHIFT_MEMORY_GIB = {4: 1, 8: 1, 16: 1, 32: 2, 64: 4, 128: 8, 129: 8, 192: 9, 256: 10}
# SYSTEM_RESERVED_CPU the script writes, in millicores, for sizing version 2 (the default) and 1.
OPENSHIFT_V2_MILLICORES = {2: 500, 4: 500, 7: 500, 8: 500, 16: 500, 32: 500, 48: 620, 64: 820}
OPENSHIFT_V1_MILLICORES = {2: 500, 4: 500, 7: 500, 8: 500, 16: 500, 32: 500, 48: 500, 64: 500}
EKS_MILLICORES = {2: 70, 4: 80, 7: 87, 8: 90, 16: 110, 32: 150, 48: 190, 64: 230}
GKE_MILLICORES = {2: 70, 4: 80, 7: 88, 8: 90, 16: 110, 32: 150, 48: 190, 64: 230}
GKE_MEMORY_BYTES = {4: 1073741824, 8: 1932735283, 16: 2791728742, 32: 3822520893, 64: 5884105195,
                    128: 10007273799, 129: 10028748636, 192: 11381663334, 256: 12756052869}
AKS_MILLICORES = {2: 100, 4: 140, 7: 140, 8: 180, 16: 260, 32: 420, 48: 420, 64: 740}
AKS_MEMORY_BYTES_110_PODS = {4: 1073741824, 8: 2147483648, 16: 2250000000, 32: 2250000000, 64: 2250000000,
                             128: 2250000000, 129: 2250000000, 192: 2250000000, 256: 2250000000}

GRID = [(gib, cpus) for gib in NODE_GIB for cpus in NODE_CPUS]


@pytest.mark.parametrize('gib,cpus', GRID)
def test_openshift_grid(gib, cpus):
    result = f.openshift(gib * GIB, cpus)
    assert result['system_reserved_memory_bytes'] == OPENSHIFT_MEMORY_GIB[gib] * GIB
    assert result['system_reserved_millicores'] == OPENSHIFT_V2_MILLICORES[cpus]
    assert result['kube_reserved_memory_bytes'] == 0 and result['kube_reserved_millicores'] == 0
    assert result['eviction_hard_memory_bytes'] == 100 * MIB
    assert f.openshift(gib * GIB, cpus, version=1)['system_reserved_millicores'] == OPENSHIFT_V1_MILLICORES[cpus]


@pytest.mark.parametrize('gib,cpus', GRID)
def test_eks_grid(gib, cpus):
    result = f.eks(gib * GIB, cpus, max_pods=110)
    assert result['kube_reserved_millicores'] == EKS_MILLICORES[cpus]
    assert result['kube_reserved_memory_bytes'] == (11 * 110 + 255) * MIB
    assert result['eviction_hard_memory_bytes'] == 100 * MIB


@pytest.mark.parametrize('gib,cpus', GRID)
def test_gke_grid(gib, cpus):
    result = f.gke(gib * GIB, cpus)
    assert result['kube_reserved_memory_bytes'] == GKE_MEMORY_BYTES[gib]
    assert result['kube_reserved_millicores'] == GKE_MILLICORES[cpus]
    assert result['eviction_hard_memory_bytes'] == 100 * MIB


@pytest.mark.parametrize('gib,cpus', GRID)
def test_aks_grid(gib, cpus):
    new, legacy = f.aks(gib * GIB, cpus, max_pods=110), f.aks_legacy(gib * GIB, cpus)
    assert new['kube_reserved_memory_bytes'] == AKS_MEMORY_BYTES_110_PODS[gib]
    assert new['kube_reserved_millicores'] == legacy['kube_reserved_millicores'] == AKS_MILLICORES[cpus]
    assert new['eviction_hard_memory_bytes'] == 100 * MIB
    # Before 1.29 AKS used the same memory tiers GKE documents, with a 750Mi threshold.
    assert legacy['kube_reserved_memory_bytes'] == GKE_MEMORY_BYTES[gib]
    assert legacy['eviction_hard_memory_bytes'] == 750 * MIB


def test_openshift_reads_whole_gib_truncated():
    # `free -g` truncates: a nominal 16 GiB VM whose MemTotal is 15.6 GiB counts as 15 GiB.
    assert f.openshift_memory_bytes(int(15.6 * GIB)) == f.openshift_memory_bytes(15 * GIB)
    # 1 + 0.06 x 117 = 8.02 -> 8; 1 + 0.06 x 25 = 2.5 rounds half up to 3 (printf %d of 2.5 + 0.5).
    assert f.openshift_memory_bytes(125 * GIB) == 8 * GIB
    assert f.openshift_memory_bytes(33 * GIB) == 3 * GIB


def test_openshift_above_128_gib_charges_two_percent_from_120():
    # Above 128 GiB the script adds 6.72 (112 x 6%) and subtracts 112, not 120: 1 + 6.72 + 2% of (GiB - 120).
    # 145 GiB: 1 + 6.72 + 0.50 = 8.22 -> 8; "6% up to 128 GiB, 2% above" would give 1 + 7.2 + 0.34 = 8.54 -> 9.
    assert f.openshift_memory_bytes(145 * GIB) == 8 * GIB


@pytest.mark.parametrize('cpus,millicores', [(1, 500), (37, 500), (38, 500), (39, 520), (96, 1200), (128, 1580)])
def test_openshift_cpu_version_2_rounds_to_hundredths_of_a_core(cpus, millicores):
    # printf "%.2f" of 0.06 + 0.012 x (CPUs - 1), at least 0.5: 38 CPUs 0.504 -> 0.50, 39 CPUs 0.516 -> 0.52.
    assert f.openshift_cpu_millicores(cpus) == millicores


def test_openshift_default_version_is_2():
    assert f.OPENSHIFT_DEFAULT_SIZING_VERSION == 2
    assert f.openshift(16 * GIB, 64)['system_reserved_millicores'] == 820
    with pytest.raises(ValueError, match='version'):
        f.openshift_cpu_millicores(8, version=3)


def test_eks_seven_cpus_truncates_each_range():
    # 7000m: 1000 x 600/10000 = 60, 1000 x 100/10000 = 10, 2000 x 50/10000 = 10, 3000 x 25/10000 = 7.5 -> 7.
    assert f.eks_cpu_millicores(7) == 87


def test_eks_m5_large():
    # EKS on m5.large (2 vCPU, 8 GiB, 29 max pods): 11 x 29 + 255 = 574 Mi, 60m + 10m = 70m.
    result = f.eks(8 * GIB, 2, max_pods=29)
    assert result['kube_reserved_memory_bytes'] == 574 * MIB
    assert result['kube_reserved_millicores'] == 70


def test_aks_legacy_seven_gb_example():
    # AKS docs: a 7 GB node: 0.75 GB eviction + 25% of the first 4 GB (1 GB) + 20% of the next 3 GB (0.6 GB).
    result = f.aks_legacy(7 * GIB, 2)
    assert result['kube_reserved_memory_bytes'] == int(1 * GIB + 0.6 * GIB)
    assert result['eviction_hard_memory_bytes'] == 750 * MIB
    assert round(0.75 + result['kube_reserved_memory_bytes'] / GIB, 2) == 2.35


def test_aks_eight_gb_thirty_pods_example_in_decimal_mb():
    # AKS docs (1.29+): 8 GB, 30 max pods: 20 MB x 30 + 50 MB = 650 MB kube-reserved.
    assert f.aks(8 * 10**9, 2, max_pods=30)['kube_reserved_memory_bytes'] == 650 * 10**6


def test_aks_four_gb_seventy_pods_example_caps_at_a_quarter():
    # AKS docs: 4 GB, 70 pods: 25% x 4 GB = 1000 MB, less than 20 MB x 70 + 50 MB = 1450 MB.
    assert f.aks(4 * 10**9, 2, max_pods=70)['kube_reserved_memory_bytes'] == 1000 * 10**6


@pytest.mark.parametrize('cpus,millicores', [(1, 60), (2, 100), (3, 100), (4, 140), (8, 180), (16, 260),
                                             (32, 420), (64, 740), (96, 740)])
def test_aks_cpu_table(cpus, millicores):
    assert f.aks_cpu_millicores(cpus) == millicores


def test_gke_small_machines_reserve_255_mib():
    assert f.gke(GIB - 1, 1)['kube_reserved_memory_bytes'] == 255 * MIB


def test_all_formulas_passes_the_openshift_version():
    assert f.all_formulas(16 * GIB, 64, 110, openshift_version=1)['openshift']['system_reserved_millicores'] == 500
    assert f.all_formulas(16 * GIB, 64, 110)['openshift']['system_reserved_millicores'] == 820


# AKS Node Hardening (learn.microsoft.com/en-us/azure/aks/node-hardening, read 2026-11-26), MiB as the page writes:
# (GiB, max pods) -> (kube-reserved MiB, system-reserved MiB), worked by hand from the page's table:
#  4 GiB, 30 pods: min(1050 + max(250, 81.92), 1024) = 1024; system 200 (no full 32 GiB).
#  8 GiB, 30 pods: min(1050 + 250, 2048) = 1300; system 200.
#  16 GiB, 110 pods: min(3850 + 327.68, 4096) = 4096 (the quarter caps it); system 200.
#  32 GiB, 110 pods: min(3850 + 655.36, 8192) = 4505.36; system 300 (one full 32 GiB).
#  64 GiB, 250 pods: min(8750 + 1310.72, 16384) = 10060.72; system 400.
#  100 GiB, 110 pods: min(3850 + 2048, 25600) = 5898; system 500 (three full 32 GiB).
AKS_HARDENED_ROWS = [(4, 30, 1024, 200), (8, 30, 1300, 200), (16, 110, 4096, 200), (32, 110, 4505.36, 300),
                     (64, 250, 10060.72, 400), (100, 110, 5898, 500)]


@pytest.mark.parametrize('gib,max_pods,kube_mib,system_mib', AKS_HARDENED_ROWS)
def test_aks_hardened_rows(gib, max_pods, kube_mib, system_mib):
    result = f.aks_hardened(gib * GIB, 8, max_pods=max_pods)
    assert result['kube_reserved_memory_bytes'] == int(kube_mib * MIB)
    assert result['system_reserved_memory_bytes'] == system_mib * MIB
    assert result['system_reserved_millicores'] == 100
    # CPU kube-reserved is "unchanged": the AKS table (8 cores: 180m).
    assert result['kube_reserved_millicores'] == 180
    assert result['reserved_memory_bytes'] == int(kube_mib * MIB) + system_mib * MIB


def test_aks_hardened_azure_cni_adds_100_mib_and_full_32_gib_steps_only():
    assert f.aks_hardened(32 * GIB - 1, 2)['system_reserved_memory_bytes'] == 200 * MIB
    assert f.aks_hardened(32 * GIB, 2, azure_cni=True)['system_reserved_memory_bytes'] == 400 * MIB


def test_aks_hardened_is_listed_and_reserves_more_than_standard_aks():
    assert 'aks-hardened' in f.FORMULAS
    results = f.all_formulas(16 * GIB, 8, 110)
    assert results['aks-hardened']['reserved_memory_bytes'] > results['aks']['reserved_memory_bytes']


def test_the_tiers_sum_exactly_in_integers_as_fractions_would():
    from fractions import Fraction
    # Every tier's fraction is a whole number of 1/TIER_DENOMINATOR units, so the integer sum is exact.
    tiers = f.MEMORY_TIERS + f.CPU_TIERS
    assert all(f.TIER_DENOMINATOR % fraction.denominator == 0 for _size, fraction in tiers)
    for amount in (0, 1, 4 * GIB - 1, 4 * GIB + 3, 17 * GIB + 12345, 129 * GIB + 7, 3 << 40):
        exact, remaining = Fraction(0), amount
        for size, fraction in f.MEMORY_TIERS:
            portion = remaining if size is None else min(remaining, size)
            exact, remaining = exact + portion * fraction, remaining - portion
        assert f.tiered_memory_bytes(amount) == int(exact), amount
