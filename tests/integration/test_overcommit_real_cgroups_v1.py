"""The overcommit audit on real cgroup v1 groups: pods of each QoS class with limits and shares the test sets."""

from __future__ import annotations

import os
import uuid

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _overcommit
from helpers import cgroups_v1

pytestmark = pytest.mark.skipif(not cgroups_v1.v1_available(), reason='needs root and cgroup v1 controllers')
MIB = 1 << 20


def set_file(controller, relative, name, value):
    path = os.path.join(cgroups_v1.ROOT, controller, relative, name)
    with open(path, 'w') as handle:
        handle.write(str(value))
    with open(path) as handle:
        return int(handle.read())  # what the kernel holds (it rounds limits to whole pages)


def test_audit_reads_back_each_pods_limit_and_request():
    tree = cgroups_v1.CgroupTree()
    try:
        guaranteed = tree.make('kubepods/pod%s' % uuid.uuid4())
        burstable = tree.make('kubepods/burstable/pod%s' % uuid.uuid4())
        besteffort = tree.make('kubepods/besteffort/pod%s' % uuid.uuid4())
        kubepods_limit = set_file('memory', 'kubepods', 'memory.limit_in_bytes', 2 << 30)
        guaranteed_limit = set_file('memory', guaranteed, 'memory.limit_in_bytes', 300 * MIB)
        burstable_limit = set_file('memory', burstable, 'memory.limit_in_bytes', 1000000001)  # not a page multiple
        set_file('cpu', guaranteed, 'cpu.shares', 512)  # MilliCPUToShares(500m)
        set_file('cpu', burstable, 'cpu.shares', 102)  # MilliCPUToShares(100m)
        set_file('cpu', besteffort, 'cpu.shares', 2)  # MinShares: no request
        tree.spawn(guaranteed, alloc_mib=20)

        audit = _overcommit.audit(_cgroup.discover_layout(), 'kubepods')

        assert burstable_limit != 1000000001 and burstable_limit % 4096 == 0  # the kernel rounded it
        by_cgroup = {p['cgroup']: p for p in audit['pod_details']}
        assert by_cgroup['/' + guaranteed]['memory_limit_bytes'] == guaranteed_limit == 300 * MIB
        assert by_cgroup['/' + burstable]['memory_limit_bytes'] == burstable_limit
        assert by_cgroup['/' + besteffort]['memory_limit_bytes'] is None
        assert audit['pods_by_qos'] == {'guaranteed': 1, 'burstable': 1, 'besteffort': 1}
        assert audit['pods_without_memory_limit'] == 1
        assert audit['memory_limits_sum_bytes'] == guaranteed_limit + burstable_limit
        assert audit['kubepods_memory_limit_bytes'] == kubepods_limit
        assert audit['limits_to_kubepods_percent'] == round(100.0 * (guaranteed_limit + burstable_limit) / kubepods_limit, 1)
        assert [by_cgroup['/' + g]['cpu_request_millicores'] for g in (guaranteed, burstable, besteffort)] == [500, 100, 0]
        assert audit['cpu_requests_sum_millicores'] == 600
    finally:
        tree.cleanup()
