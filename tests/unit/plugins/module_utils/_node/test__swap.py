"""Non-pod swap and whether system.slice may swap, from files a real kernel wrote (tests/unit/fixtures/swap/).

* ``v2-daemon-swapped``: the cgroup v2 facts guest of tests/vm (Debian 12, Linux 6.1) during
  tests/vm/test_swap_vm.py's state: a 768 MiB swap file, a daemon in system.slice (swap-test-daemon.service)
  holding 192 MiB pushed partly out to swap by a Burstable pod with memory.max and memory.swap.max set (the pod
  still running). Copied: /proc/meminfo, /proc/swaps, and memory.swap.current, memory.swap.max, memory.stat of
  kubepods.slice, system.slice and the daemon's unit.
* ``v2-drop-in``: the same guest after the proposed drop-in was written and systemd reloaded (system.slice's
  memory.swap.max then reads 0).
* ``v1-pod-and-daemon-swapped``: the cgroup v1 facts guest (Linux 6.1, ``systemd.unified_cgroup_hierarchy=0``) in the
  same state (the pod capped by memory.limit_in_bytes only: v1 has no per-group swap limit systemd sets); that
  kernel's v1 memory.stat has ``total_swap`` but no ``total_swapcached``.
* ``v1-host-no-swap``: this build machine (Linux 6.18, cgroup v1 with swap accounting, no swap device): a v1
  group's memory.memsw.usage_in_bytes, memory.usage_in_bytes (read a moment apart: memsw is below usage there)
  and memory.stat, as kubepods.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _memory_accounting, _procfs, _swap
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store, _metrics
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._report.test__fleet_report import RAW_BYTES, result

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'swap')
MIB = 1024 * 1024


def _case(name, tmp_path=None):
    root = os.path.join(FIXTURES, name)
    if tmp_path is not None:
        shutil.copytree(root, str(tmp_path / name))
        root = str(tmp_path / name)
    version = 'v1' if name.startswith('v1') else 'v2'
    layout = _cgroup.CgroupLayout(version, 'legacy' if version == 'v1' else 'unified', os.path.join(root, 'cgroup'),
                                  os.path.join(root, 'cgroup'), {})
    with open(os.path.join(root, 'proc', 'meminfo'), encoding='utf-8') as handle:
        meminfo = _procfs.parse_meminfo(handle.read())
    return root, layout, meminfo


def _kubepods(version):
    return 'kubepods.slice' if version == 'v2' else 'kubepods'


def _int(root, relative):
    with open(os.path.join(root, 'cgroup', relative), encoding='utf-8') as handle:
        return int(handle.read())


def _stat(root, relative, key):
    with open(os.path.join(root, 'cgroup', relative, 'memory.stat'), encoding='utf-8') as handle:
        return dict(line.split() for line in handle)[key]


def test_the_daemons_swapped_out_memory_is_in_non_pod_swap():
    root, layout, meminfo = _case('v2-daemon-swapped')
    swap = _swap.measure(layout, _kubepods('v2'), meminfo, ['system.slice/swap-test-daemon.service'])
    daemon = 'system.slice/swap-test-daemon.service'
    daemon_out = _int(root, daemon + '/memory.swap.current') - int(_stat(root, daemon, 'swapcached'))
    assert daemon_out > 0
    assert swap['bytes'] >= daemon_out
    # The node's swapped-out memory less the pods' own (their swap less their swap cache), from the kernel's files.
    pods_out = _int(root, 'kubepods.slice/memory.swap.current') - int(_stat(root, 'kubepods.slice', 'swapcached'))
    node_out = meminfo['SwapTotal'] - meminfo['SwapFree'] - meminfo['SwapCached']
    assert swap['bytes'] == node_out - pods_out
    assert {g['cgroup'] for g in swap['groups']} == {'/system.slice', '/' + daemon}


def test_the_non_pod_figure_adds_the_swapped_out_memory_to_the_resident():
    _root, layout, meminfo = _case('v2-daemon-swapped')
    swap = _swap.measure(layout, _kubepods('v2'), meminfo, [])
    kubepods = _cgroup.memory_working_set(layout, _kubepods('v2'))  # the pod, still running then
    without = _memory_accounting.non_pod_memory(meminfo, kubepods, None)
    with_swap = _memory_accounting.non_pod_memory(meminfo, kubepods, None, swap['bytes'])
    assert without['bytes'] + swap['bytes'] <= meminfo['MemTotal']  # below the cap of the next test
    assert with_swap['bytes'] == without['bytes'] + swap['bytes'] and with_swap['resident_bytes'] == without['bytes']
    assert any('swapped-out' in line for line in with_swap['explanation'])


def test_unknown_pod_swap_cache_is_taken_at_its_largest(tmp_path):
    """A kernel before 5.12 writes no swapcached line: the pods' swap cache is bounded by SwapCached."""
    root, layout, meminfo = _case('v2-daemon-swapped', tmp_path)
    stat = os.path.join(root, 'cgroup', 'kubepods.slice', 'memory.stat')
    with open(stat, encoding='utf-8') as handle:
        lines = [line for line in handle if not line.startswith('swapcached ')]
    with open(stat, 'w', encoding='utf-8') as handle:
        handle.writelines(lines)
    _original, original_layout, _meminfo = _case('v2-daemon-swapped')
    known = _swap.measure(original_layout, _kubepods('v2'), meminfo, [])
    unknown = _swap.measure(layout, _kubepods('v2'), meminfo, [])
    assert unknown['bytes'] >= known['bytes']
    pods_swap = _int(root, 'kubepods.slice/memory.swap.current')
    assert unknown['kubepods_swapped_out_bytes'] == pods_swap - min(pods_swap, meminfo['SwapCached'])


def test_pod_swap_the_kernel_does_not_account_is_all_non_pod(tmp_path):
    """v1 without memory.memsw.* (swapaccount=0): every swapped-out byte is counted as non-pod."""
    root, layout, meminfo = _case('v1-host-no-swap', tmp_path)
    os.unlink(os.path.join(root, 'cgroup', 'kubepods', 'memory.memsw.usage_in_bytes'))
    meminfo = dict(meminfo, SwapTotal=512 * MIB, SwapFree=256 * MIB, SwapCached=MIB)  # a node that swapped
    swap = _swap.measure(layout, _kubepods('v1'), meminfo, [])
    assert swap['bytes'] == 255 * MIB and swap['kubepods_swap_bytes'] is None


def test_v1_swap_is_memsw_less_usage_never_below_zero():
    root, layout, meminfo = _case('v1-host-no-swap')
    group = _swap.cgroup_swap(layout.memory_root, 'v1', 'kubepods')
    memsw = _int(root, 'kubepods/memory.memsw.usage_in_bytes')
    usage = _int(root, 'kubepods/memory.usage_in_bytes')
    assert group['swap_bytes'] == max(0, memsw - usage)
    assert group['accounted_by'] == 'memory.memsw.usage_in_bytes - memory.usage_in_bytes'
    assert _swap.measure(layout, 'kubepods', meminfo, [])['bytes'] == 0  # no swap on this host


def test_no_swap_device_no_swap_figure_no_drop_in():
    root, layout, _meminfo = _case('v1-host-no-swap')
    with open(os.path.join(root, 'proc', 'swaps'), encoding='utf-8') as handle:
        devices = _swap.parse_swaps(handle.read())
    assert devices == []
    control = _swap.control(layout, [], devices, {})
    assert control['swap_on'] is False and control['system_slice_may_swap'] is False
    assert control['proposed_drop_in'] is None


def test_system_slice_may_swap_until_the_proposed_drop_in_is_written():
    root, layout, meminfo = _case('v2-daemon-swapped')
    with open(os.path.join(root, 'proc', 'swaps'), encoding='utf-8') as handle:
        devices = _swap.parse_swaps(handle.read())
    assert [d['filename'] for d in devices] == ['/var/swapfile'] and devices[0]['size_bytes'] > 0
    swap = _swap.measure(layout, _kubepods('v2'), meminfo, ['system.slice/swap-test-daemon.service'])
    control = _swap.control(layout, swap['groups'], devices, {})
    assert control['system_slice_swap_max'] == 'max' and control['system_slice_may_swap'] is True
    assert control['may_swap_by_cgroup']['/system.slice/swap-test-daemon.service'] is True
    drop_in = control['proposed_drop_in']
    assert drop_in['path'].startswith('/etc/systemd/system/system.slice.d/') and drop_in['path'].endswith('.conf')
    assert '[Slice]\nMemorySwapMax=0\n' in drop_in['content']
    # The same guest once the drop-in was written: system.slice's memory.swap.max is 0, the daemon under it too.
    root, layout, meminfo = _case('v2-drop-in')
    swap = _swap.measure(layout, _kubepods('v2'), meminfo, ['system.slice/swap-test-daemon.service'])
    control = _swap.control(layout, swap['groups'], devices, {})
    assert control['system_slice_swap_max'] == 0 and control['system_slice_may_swap'] is False
    assert control['may_swap_by_cgroup']['/system.slice/swap-test-daemon.service'] is False
    assert control['proposed_drop_in'] is None


@pytest.mark.parametrize('config, fail_swap_on, behavior', [
    ({}, True, 'NoSwap'),  # KubeletConfiguration defaults (kubernetes.io "Linux Node Swap Behaviors": NoSwap)
    ({'failSwapOn': False, 'memorySwap': {'swapBehavior': 'LimitedSwap'}}, False, 'LimitedSwap'),
    ({'failSwapOn': False, 'memorySwap': {}}, False, 'NoSwap'),
])
def test_the_kubelets_swap_settings(config, fail_swap_on, behavior):
    _root, layout, _meminfo = _case('v1-host-no-swap')
    control = _swap.control(layout, [], [], config)
    assert (control['kubelet_fail_swap_on'], control['kubelet_swap_behavior']) == (fail_swap_on, behavior)


def test_v1_may_swap_has_no_drop_in_but_says_why():
    _root, layout, _meminfo = _case('v1-host-no-swap')
    devices = [{'filename': '/swapfile', 'type': 'file', 'size_bytes': MIB, 'used_bytes': 0, 'priority': -2}]
    control = _swap.control(layout, [_swap.cgroup_swap(layout.memory_root, 'v1', 'kubepods')], devices, {})
    assert control['system_slice_may_swap'] is True and control['proposed_drop_in'] is None
    assert 'cgroup v1' in control['note']


def test_v1_pods_swap_from_memsw_and_the_daemons_counted():
    root, layout, meminfo = _case('v1-pod-and-daemon-swapped')
    swap = _swap.measure(layout, 'kubepods.slice', meminfo, ['system.slice/swap-test-daemon.service'])
    pods_swap = _int(root, 'kubepods.slice/memory.memsw.usage_in_bytes') - _int(root, 'kubepods.slice/memory.usage_in_bytes')
    assert swap['kubepods_swap_bytes'] == pods_swap == int(_stat(root, 'kubepods.slice', 'total_swap'))
    # No total_swapcached in this kernel's v1 memory.stat: the pods' swap cache is bounded by SwapCached.
    node_out = meminfo['SwapTotal'] - meminfo['SwapFree'] - meminfo['SwapCached']
    assert swap['bytes'] == node_out - (pods_swap - min(pods_swap, meminfo['SwapCached']))
    daemon_swap = int(_stat(root, 'system.slice/swap-test-daemon.service', 'total_swap'))
    assert swap['bytes'] >= daemon_swap > 0


def _result_with_swap(name):
    """A facts result (test__report's) carrying the swap figures and control of a fixture, as gather returns them."""
    root, layout, meminfo = _case(name)
    swap = _swap.measure(layout, _kubepods('v2'), meminfo, ['system.slice/swap-test-daemon.service'])
    with open(os.path.join(root, 'proc', 'swaps'), encoding='utf-8') as handle:
        control = _swap.control(layout, swap['groups'], _swap.parse_swaps(handle.read()), {})
    facts = result(1024 * MIB + swap['bytes'], current_memory='1Gi', kubelet_pid=1)
    facts['memory']['non_pod_swap_bytes'] = swap['bytes']
    facts['swap_control'] = control
    return facts


@pytest.mark.parametrize('render', [_fleet_report.render_text, _fleet_report.render_markdown, _fleet_report.render_html])
def test_the_report_shows_swapped_out_memory_and_the_proposed_drop_in(render):
    facts = _result_with_swap('v2-daemon-swapped')
    page = render(_fleet_report.build_report({'node': facts}))
    assert 'of which swapped out' in page and _units.memory(facts['memory']['non_pod_swap_bytes']) in page
    assert 'system.slice may swap' in page and _swap.DROP_IN_PATH in page and 'MemorySwapMax=0' in page
    assert RAW_BYTES.findall(page if render is not _fleet_report.render_html else re.sub('<[^>]+>', ' ', page)) == []
    # Once the drop-in is in place: still the swapped-out row (pages already in swap stay counted), no proposal.
    facts = _result_with_swap('v2-drop-in')
    page = render(_fleet_report.build_report({'node': facts}))
    assert 'of which swapped out' in page and 'system.slice may swap' not in page


def test_the_metrics_carry_non_pod_swap_and_whether_system_slice_may_swap():
    for name, may_swap in (('v2-daemon-swapped', 1), ('v2-drop-in', 0)):
        facts = _result_with_swap(name)
        text = _metrics.render(facts, 1700000000)
        assert 'nodealloc_memory_non_pod_swap_bytes %d\n' % facts['memory']['non_pod_swap_bytes'] in text
        assert 'nodealloc_swap_system_slice_may_swap %d\n' % may_swap in text


def test_non_pod_memory_with_swap_stops_at_memtotal_so_the_history_keeps_the_reading():
    """A node whose daemons have more in swap than it has RAM: the figure stops at MemTotal (no reservation can be
    larger), and the history does not refuse the reading as more than the node has."""
    _root, layout, meminfo = _case('v2-daemon-swapped')
    huge = 4 * meminfo['MemTotal']
    accounting = _memory_accounting.non_pod_memory(meminfo, {'working_set_bytes': 0}, None, huge)
    assert accounting['bytes'] == meminfo['MemTotal'] and 'only what fits in MemTotal' in accounting['explanation'][-1]
    sample = {'t': 1700000000.0, 'non_pod_bytes': accounting['bytes'], 'non_pod_millicores': 100}
    assert _history_store.validate(sample, 1700000001.0, meminfo['MemTotal'], 2000) is None


@pytest.mark.parametrize('name', ['v2-daemon-swapped', 'v1-pod-and-daemon-swapped'])
def test_one_pass_reads_each_groups_memory_stat_once_and_measures_the_same_swap(name, monkeypatch):
    """The working set and the swap cache come from one reading of a group's memory.stat (_measure.memory's pass)."""
    _root, layout, meminfo = _case(name)
    kubepods, daemon = 'kubepods.slice', ['system.slice/swap-test-daemon.service']
    alone = _swap.measure(layout, kubepods, meminfo, daemon)
    reads = []
    real = _cgroup.read_text
    monkeypatch.setattr(_cgroup, 'read_text', lambda path: reads.append(path) or real(path))
    monkeypatch.setattr(_swap, '_read', lambda path, real=_swap._read: reads.append(path) or real(path))
    stats = {}
    for relative in [kubepods, 'system.slice'] + daemon:
        _cgroup.memory_working_set(layout, relative, stats)
    assert _swap.measure(layout, kubepods, meminfo, daemon, stats) == alone
    assert all(group['swapcached_bytes'] is not None for group in alone['groups']) or layout.version == 'v1'
    stat_reads = [path for path in reads if path.endswith('memory.stat')]
    assert sorted(stat_reads) == sorted(set(stat_reads)) and len(stat_reads) == 3
