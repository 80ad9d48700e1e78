"""The stand-in kubelet refuses at start what the kubelet's CPU and memory managers refuse, from its own reading of
the kubelet's source (tests/standin/kubelet_logic/resource_managers.py), and the collection refuses the same configs
(_kubelet/_resource_managers): a disagreement is a bug in one of them. The capacity is this machine's MemTotal, as the
stand-in reads it; the eviction threshold is a quantity so that it does not matter."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
import kubelet as standin  # noqa: E402
from kubelet_logic import machine  # noqa: E402

BASE = {'kubeReserved': {'memory': '1Gi', 'cpu': '100m'}, 'systemReserved': {'memory': '512Mi', 'cpu': '100m'},
        'evictionHard': {'memory.available': '100Mi'}, 'failCgroupV1': False}
SUMMED = [{'numaNode': 0, 'limits': {'memory': '1636Mi'}}]  # 1Gi + 512Mi + 100Mi
ROWS = [
    ('static memory manager, reservedMemory sums', {'memoryManagerPolicy': 'Static', 'reservedMemory': SUMMED}, False),
    ('static memory manager, reservedMemory 1Mi short',
     {'memoryManagerPolicy': 'Static', 'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1635Mi'}}]}, True),
    ('static memory manager, no reservedMemory', {'memoryManagerPolicy': 'Static'}, True),
    ('static memory manager, a hugepages entry',
     {'memoryManagerPolicy': 'Static',
      'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1636Mi', 'hugepages-2Mi': '10Mi'}}]}, True),
    ('no memory manager, unsummed reservedMemory ignored',
     {'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1Mi'}}]}, False),
    ('any policy: a zero reservedMemory limit', {'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '0'}}]}, True),
    ('static CPU manager with reserved CPU', {'cpuManagerPolicy': 'static'}, False),
    ('static CPU manager without reserved CPU',
     {'cpuManagerPolicy': 'static', 'kubeReserved': {'memory': '1Gi'}, 'systemReserved': {'memory': '512Mi'}}, True),
    ('static CPU manager, reservedSystemCPUs replaces the empty cpu',
     {'cpuManagerPolicy': 'static', 'reservedSystemCPUs': '0', 'kubeReserved': {'memory': '1Gi'},
      'systemReserved': {'memory': '512Mi'}}, False),
]


def standin_refuses(config):
    try:
        standin.start_up(dict(BASE, **config), None, False, {0}, [0, 1])
    except standin.StartupError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize('name,change,refused', ROWS)
def test_the_standin_refuses_at_start(name, change, refused):
    assert (standin_refuses(change) is not None) == refused, name


@pytest.mark.parametrize('name,change,refused', ROWS)
def test_the_collection_refuses_the_same(name, change, refused):
    found = _resource_managers.all_problems(dict(BASE, **change), machine.meminfo_total_bytes(), [0], [0, 1])
    assert bool(found) == refused, (name, found)


def test_the_standin_names_the_sum_it_wanted():
    message = standin_refuses({'memoryManagerPolicy': 'Static',
                               'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1635Mi'}}]})
    assert 'is not equal to the value' in message and str(1636 * 1024 * 1024) in message
