"""_system_partition against KEP-5894 (keps/sig-node/5894-node-system-partition/README.md, kubernetes/enhancements
24d3ab08): the field's three keys read, the memoryLimit accounted beside the reservations and, in alpha, not
subtracted from allocatable ("Node Allocatable is not automatically adjusted for the system partition")."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _system_partition as sp

GI = 1 << 30


def test_the_kep_example_is_read():
    # The KEP's Configuration example, verbatim.
    config = {'systemPartition': {'memoryLimit': '4Gi', 'cpuset': '0-3', 'namespaces': ['kube-system']}}
    assert sp.read(config) == {'memory_limit_bytes': 4 * GI, 'cpus': [0, 1, 2, 3], 'namespaces': ['kube-system'],
                               'problems': []}


@pytest.mark.parametrize('config', [{}, {'systemPartition': None}, {'systemPartition': {}}, None])
def test_absent_or_empty_is_none(config):
    # "If systemPartition is not specified or empty, kubelet behaves identically to today".
    assert sp.read(config) is None


@pytest.mark.parametrize('section,problem', [
    ({'memoryLimit': 'lots'}, 'memoryLimit'),
    ({'memoryLimit': 4294967296}, 'memoryLimit'),        # a number, not a quantity string
    ({'memoryLimit': '-1Gi'}, 'negative'),
    ({'cpuset': '3-0'}, 'cpuset'),
    ({'namespaces': 'kube-system'}, 'namespaces'),
    ('4Gi', 'not a mapping'),
])
def test_a_malformed_partition_is_a_problem_not_a_failure(section, problem):
    # No released kubelet reads the field (it is dropped), so a bad value must not stop the measurement.
    partition = sp.read({'systemPartition': section})
    assert any(problem in text for text in partition['problems'])
    assert 'malformed' in sp.describe(partition)


def test_the_limit_is_accounted_beside_allocatable_not_subtracted_from_it():
    partition = sp.read({'systemPartition': {'memoryLimit': '4Gi'}})
    # A 32 GiB node with 29 GiB allocatable: the scheduler still places 29 GiB; user pods have 25 GiB of room.
    assert sp.account(partition, 29 * GI) == {'memory_limit_bytes': 4 * GI, 'subtracted_from_allocatable': False,
                                              'user_pods_memory_bytes': 25 * GI, 'limit_exceeds_allocatable': False}
    over = sp.account(partition, 3 * GI)
    assert (over['user_pods_memory_bytes'], over['limit_exceeds_allocatable']) == (0, True)
    assert sp.account(partition)['user_pods_memory_bytes'] is None
    assert sp.account(None, 29 * GI)['memory_limit_bytes'] is None
