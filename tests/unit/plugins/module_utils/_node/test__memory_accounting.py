"""Non-pod memory must not fall when a pod warms its page cache (the PoC's figure does).

The two node states are real: this build machine (Linux 6.18, cgroup v1) before and
after a process in kubepods.slice/.../pod<uid>.slice read a cold 512 MiB file on ext4
three times (tests/vm/test_page_cache_vm.py does the same live on VM guests).
Copied: the /proc/meminfo lines si_mem_available uses, the ``low`` lines of
/proc/zoneinfo (pages), and kubepods.slice's memory.usage_in_bytes and the memory.stat
lines the working set and the correction use.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _memory_accounting, _procfs

MIB = 1024 * 1024

ZONEINFO_LOW = ('Node 0, zone      DMA\n  pages free     3840\n        min      40\n        low      50\n'
                '        high     60\n        promo    70\nNode 0, zone    DMA32\n        low      10227\n'
                'Node 0, zone   Normal\n        low      10841\nNode 0, zone  Movable\n        low      32\n'
                'Node 0, zone   Device\n        low      0\n')

BEFORE = {
    'meminfo': ('MemTotal:       24683656 kB\nMemFree:        24049764 kB\nMemAvailable:   24116092 kB\n'
                'Active(file):      45832 kB\nInactive(file):    97228 kB\nKReclaimable:     208680 kB\n'
                'SReclaimable:     208680 kB\n'),
    'usage': '524288\n',
    'stat': 'total_cache 0\ntotal_rss 0\ntotal_inactive_file 0\ntotal_active_file 0\n',
}
AFTER = {
    'meminfo': ('MemTotal:       24683656 kB\nMemFree:        23535104 kB\nMemAvailable:   24112640 kB\n'
                'Active(file):     570120 kB\nInactive(file):    97228 kB\nKReclaimable:     208672 kB\n'
                'SReclaimable:     208672 kB\n'),
    'usage': '542101504\n',
    'stat': 'total_cache 536870912\ntotal_rss 4124672\ntotal_inactive_file 0\ntotal_active_file 536870912\n',
}


def v1_node(root, state):
    """A v1 cgroup tree and a /proc with the state's files, for gather()."""
    files = {
        'cgroup/memory/memory.usage_in_bytes': '0\n',
        'cgroup/memory/kubepods.slice/memory.usage_in_bytes': state['usage'],
        'cgroup/memory/kubepods.slice/memory.stat': state['stat'],
        'cgroup/cpuacct/cpuacct.usage': '0\n',
        'cgroup/cpuacct/kubepods.slice/cpuacct.usage': '0\n',
        'proc/meminfo': state['meminfo'],
        'proc/zoneinfo': ZONEINFO_LOW,
        'proc/stat': 'cpu  57833 27 18264 477192 1152 0 486 356 0 0\n',
    }
    for relative, text in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(text)
    return os.path.join(root, 'cgroup'), os.path.join(root, 'proc')


def gather(tmp_path, name, state):
    cgroup_root, proc_root = v1_node(str(tmp_path / name), state)
    return _gather.gather({'cgroup_root': cgroup_root, 'sample_seconds': 0, 'history': False,
                          'kubelet_config_path': str(tmp_path / 'none.yaml')},
                          proc_root=proc_root, sleep=lambda seconds: None)


def test_a_pods_hot_page_cache_does_not_lower_non_pod_memory(tmp_path):
    before = gather(tmp_path, 'before', BEFORE)
    after = gather(tmp_path, 'after', AFTER)
    # The PoC's figure falls by about the 512 MiB the pod keeps hot ...
    assert before['memory']['non_pod_poc_bytes'] - after['memory']['non_pod_poc_bytes'] > 500 * MIB
    # ... the collection's moves by less than the pod's own interpreter (total_rss 4 MiB) in either direction.
    assert abs(after['memory']['non_pod_bytes'] - before['memory']['non_pod_bytes']) < 8 * MIB
    # And what is recorded and recommended from is the corrected figure.
    assert after['recommendation']['basis']['non_pod_bytes'] == after['memory']['non_pod_bytes']


def test_explanation_keeps_the_pocs_figure_beside_the_corrected_one(tmp_path):
    after = gather(tmp_path, 'after', AFTER)
    lines = after['recommendation']['explanation']
    assert any(line.startswith('uncorrected non-pod memory = ') and str(after['memory']['non_pod_poc_bytes']) in line
               for line in lines)
    assert any(line.startswith('non-pod memory = uncorrected figure + ') and line.find(str(after['memory']['non_pod_bytes'])) > 0
               for line in lines)


def test_low_watermarks_of_every_zone_are_summed():
    assert _memory_accounting.parse_zoneinfo_low_pages(ZONEINFO_LOW) == 50 + 10227 + 10841 + 32 + 0
    assert _memory_accounting.parse_zoneinfo_low_pages('Node 0, zone DMA\n  pages free 1\n') is None


@pytest.mark.parametrize('watermark', [None, 0])
def test_an_unknown_watermark_can_only_raise_the_figure(watermark):
    meminfo = _procfs.parse_meminfo(AFTER['meminfo'])
    kubepods = {'working_set_bytes': 542101504, 'active_file_bytes': 536870912}
    known = _memory_accounting.non_pod_memory(meminfo, kubepods, (50 + 10227 + 10841 + 32) * 4096)
    unknown = _memory_accounting.non_pod_memory(meminfo, kubepods, watermark)
    assert unknown['bytes'] >= known['bytes'] >= known['poc_bytes']


def test_the_pods_cache_is_counted_only_up_to_what_memavailable_counts():
    # A small cache: MemAvailable holds back half of it (pagecache / 2 < wmark_low), so only half is counted.
    meminfo = {'MemTotal': 1024 * MIB, 'MemAvailable': 500 * MIB, 'Active(file)': 40 * MIB, 'Inactive(file)': 0}
    result = _memory_accounting.non_pod_memory(meminfo, {'working_set_bytes': 300 * MIB,
                                                         'active_file_bytes': 40 * MIB}, 64 * MIB)
    assert result['pods_counted_available_bytes'] == 20 * MIB
    assert result['bytes'] == 1024 * MIB - 500 * MIB - 300 * MIB + 20 * MIB
