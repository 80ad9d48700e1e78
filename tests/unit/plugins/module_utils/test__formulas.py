"""Each formula against the examples its vendor publishes (sources in docs/formulas.md)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _formulas as f

MIB, GIB = f.MIB, f.GIB


def test_aks_legacy_seven_gb_example():
    # AKS docs ("Resource reservations"): a 7 GB node reports 34% not allocatable:
    # 0.75 GB eviction + 25% of the first 4 GB (1 GB) + 20% of the next 3 GB (0.6 GB) = 2.35 GB.
    result = f.aks_legacy(7 * GIB, 2)
    assert result['kube_reserved_memory_bytes'] == int(1 * GIB + 0.6 * GIB)
    assert result['eviction_hard_memory_bytes'] == 750 * MIB
    # The docs add 0.75 "GB" for the 750Mi threshold: 0.75 + 1.6 = 2.35, / 7 = 33.57%.
    assert round(0.75 + result['kube_reserved_memory_bytes'] / GIB, 2) == 2.35


def test_aks_per_max_pods_eight_gb_thirty_pods_example():
    # AKS docs (1.29+): 8 GB, 30 max pods: 20 MB x 30 + 50 MB = 650 MB kube-reserved, 100 Mi eviction,
    # "7.25 GB or 90.625% allocatable".
    result = f.aks(8 * GIB, 2, max_pods=30)
    assert result['kube_reserved_memory_bytes'] == 650 * MIB
    allocatable = 8 * GIB - result['kube_reserved_memory_bytes'] - result['eviction_hard_memory_bytes']
    assert allocatable == 8 * GIB - 750 * MIB  # the docs' 7.25 "GB" with MiB units


def test_aks_caps_at_a_quarter_of_memory():
    assert f.aks(2 * GIB, 2, max_pods=250)['kube_reserved_memory_bytes'] == GIB // 2


@pytest.mark.parametrize('cpus,millicores', [(1, 60), (2, 100), (3, 100), (4, 140), (8, 180), (16, 260),
                                             (32, 420), (64, 740), (96, 740)])
def test_aks_cpu_table(cpus, millicores):
    assert f.aks_cpu_millicores(cpus) == millicores


def test_eks_m5_large():
    # EKS bootstrap on m5.large (2 vCPU, 8 GiB, 29 max pods): 11 x 29 + 255 = 574 Mi, 60m + 10m = 70m.
    result = f.eks(8 * GIB, 2, max_pods=29)
    assert result['kube_reserved_memory_bytes'] == 574 * MIB
    assert result['kube_reserved_millicores'] == 70


@pytest.mark.parametrize('cpus,millicores', [(1, 60), (2, 70), (4, 80), (8, 90), (64, 230)])
def test_tiered_cpu(cpus, millicores):
    # 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above: 8 cores = 60+10+10+10.
    assert f.tiered_cpu_millicores(cpus) == millicores


@pytest.mark.parametrize('gib,reserved_mib', [
    (4, 1024), (8, 1024 + 819.2), (16, 1024 + 819.2 + 819.2), (128, 1024 + 819.2 + 819.2 + 0.06 * 112 * 1024),
    (256, 1024 + 819.2 + 819.2 + 0.06 * 112 * 1024 + 0.02 * 128 * 1024),
])
def test_gke_memory_tiers(gib, reserved_mib):
    assert f.gke(gib * GIB, 4)['kube_reserved_memory_bytes'] == int(reserved_mib * MIB)


def test_small_machines_reserve_255_mib():
    assert f.gke(GIB - 1, 1)['kube_reserved_memory_bytes'] == 255 * MIB
    assert f.openshift(GIB, 1)['system_reserved_memory_bytes'] == 255 * MIB


def test_openshift_puts_everything_in_system_reserved():
    result = f.openshift(16 * GIB, 4)
    assert result['kube_reserved_memory_bytes'] == 0 and result['kube_reserved_millicores'] == 0
    assert result['system_reserved_memory_bytes'] == f.gke(16 * GIB, 4)['kube_reserved_memory_bytes']
    assert result['system_reserved_millicores'] == 80
