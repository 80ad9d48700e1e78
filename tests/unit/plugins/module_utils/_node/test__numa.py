"""_numa.read: NUMA nodes and online CPUs from a sysfs tree laid out as the kernel lays it out (a two-node machine's
/sys/devices/system/node/node<N>/meminfo first line, 'Node 0 MemTotal:       16314480 kB')."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError, ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _numa


def sysfs(tmp_path, nodes, online='0-7\n'):
    for node, text in nodes.items():
        directory = tmp_path / 'devices' / 'system' / 'node' / ('node%d' % node)
        directory.mkdir(parents=True)
        (directory / 'meminfo').write_text(text)
        (directory / 'cpulist').write_text('0-3\n')
    (tmp_path / 'devices' / 'system' / 'node' / 'possible').parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / 'devices' / 'system' / 'node' / 'possible').write_text('0-1\n')
    if online is not None:
        (tmp_path / 'devices' / 'system' / 'cpu').mkdir(parents=True)
        (tmp_path / 'devices' / 'system' / 'cpu' / 'online').write_text(online)
    return str(tmp_path)


def meminfo(node, kib):
    return 'Node %d MemTotal:       %d kB\nNode %d MemFree:        1000 kB\n' % (node, kib, node)


def test_two_nodes_and_their_memory(tmp_path):
    root = sysfs(tmp_path, {0: meminfo(0, 16314480), 1: meminfo(1, 16510260)})
    assert _numa.read(root) == {'nodes': [{'node': 0, 'mem_total_bytes': 16314480 * 1024},
                                          {'node': 1, 'mem_total_bytes': 16510260 * 1024}],
                                'online_cpus': list(range(8))}


def test_no_node_directories_is_an_unknown_layout(tmp_path):
    assert _numa.read(sysfs(tmp_path, {}, online=None)) == {'nodes': [], 'online_cpus': None}


@pytest.mark.parametrize('text', ['', 'Node 0 MemTotal: lots kB\n', 'Node 1 MemTotal:       100 kB\n', '\xff'])
def test_a_meminfo_not_in_the_kernels_form_fails(tmp_path, text):
    with pytest.raises(MeasurementError):
        _numa.read(sysfs(tmp_path, {0: text}))


def test_an_online_list_not_in_the_kernels_form_fails(tmp_path):
    with pytest.raises(ParseError):
        _numa.read(sysfs(tmp_path, {0: meminfo(0, 100)}, online='0-3 7\n'))


def test_the_facts_carry_the_layout_and_a_malformed_file_leaves_it_unknown_not_the_measurement_failed(tmp_path):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _facts_measure
    good = sysfs(tmp_path / 'good', {0: meminfo(0, 16314480)})
    not_found = []
    assert _facts_measure._numa_layout(not_found, good)['nodes'] == [{'node': 0, 'mem_total_bytes': 16314480 * 1024}]
    assert not_found == []
    bad = sysfs(tmp_path / 'bad', {0: 'Node 0 MemTotal: lots\n'})
    assert _facts_measure._numa_layout(not_found, bad) is None
    assert len(not_found) == 1 and not_found[0].startswith('NUMA layout not read')


def test_this_machine_s_layout_reaches_the_plan_through_the_module_result():
    # The plan reads facts['numa'] (_node_plan._numa): the module's result is the measurement less three keys (_gather).
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _node_plan
    layout = _numa.read()
    memory, online = _node_plan._numa({'numa': layout})
    assert online == layout['online_cpus'] and (memory is None) == (not layout['nodes'])
