"""Which pod groups the overcommit audit finds under kubepods, on a file tree (the real cgroup v1 tree:
tests/integration/test_overcommit_real_cgroups_v1.py)."""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _overcommit


def _tree(tmp_path, directories, loops=()):
    memory = tmp_path / 'memory'
    for relative in directories:
        (memory / relative).mkdir(parents=True)
    for relative in loops:  # a symlink to itself: examining it fails with ELOOP
        os.symlink(os.path.basename(relative), str(memory / relative))
    (memory / 'kubepods' / 'pod0file').write_text('not a group')
    return _cgroup.CgroupLayout('v1', 'legacy', str(memory), str(tmp_path / 'cpuacct'), {})


def test_pods_are_found_by_qos_class_each_class_in_name_order(tmp_path):
    layout = _tree(tmp_path, ['kubepods/podb', 'kubepods/poda', 'kubepods/burstable/pod2', 'kubepods/burstable/pod1',
                              'kubepods/besteffort/pod9', 'kubepods/besteffort/notapod', 'kubepods/other/pod5'])
    assert _overcommit._pods(layout, 'kubepods') == [
        ('guaranteed', 'kubepods/poda'), ('guaranteed', 'kubepods/podb'), ('burstable', 'kubepods/burstable/pod1'),
        ('burstable', 'kubepods/burstable/pod2'), ('besteffort', 'kubepods/besteffort/pod9')]


def test_an_entry_that_cannot_be_examined_hides_no_other_pod(tmp_path):
    layout = _tree(tmp_path, ['kubepods/poda', 'kubepods/besteffort/pod9'],
                   loops=['kubepods/burstable', 'kubepods/podloop', 'kubepods/besteffort/podloop2'])
    assert _overcommit._pods(layout, 'kubepods') == [('guaranteed', 'kubepods/poda'),
                                                     ('besteffort', 'kubepods/besteffort/pod9')]


def test_no_kubepods_listing_no_pods(tmp_path):
    layout = _tree(tmp_path, ['kubepods'])
    assert _overcommit._pods(layout, 'kubepods.slice') == []
