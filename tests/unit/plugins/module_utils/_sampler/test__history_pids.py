"""Issue 47: each history line records the node's tasks outside the pods (``non_pod_pids``), written by the sampler
and node_reservation_facts alike; lines written before have none and read as they did; a value that is no count of
tasks makes the line skipped and named."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._sampler.test__sample_once import (
    make_node, options, run)

MIB = 1 << 20
MEMORY = {'non_pod_bytes': 700 * MIB, 'kube_components_working_set_bytes': 150 * MIB,
          'kubepods_working_set_bytes': 2048 * MIB, 'measurement_tool': {'left_out_bytes': 30 * MIB}}


@pytest.mark.parametrize('non_pod_pids', [0, 1734, None])
def test_a_reading_round_trips_with_its_tasks_and_without(tmp_path, non_pod_pids):
    path = str(tmp_path / 'history.jsonl')
    older = {'t': 100, 'non_pod_bytes': 650 * MIB, 'non_pod_millicores': 120}  # as written before: no key
    _history_store.append(path, older)
    line = _history_store.reading(MEMORY, 120, 'sampler', 160.0, pods=3, non_pod_pids=non_pod_pids)
    _history_store.append(path, line)
    samples, problems = _history_store.read(path, now=200, mem_total_bytes=8 << 30, capacity_millicores=2000)
    assert problems == [] and samples == [older, line]
    assert samples[1].get('non_pod_pids') == non_pod_pids and ('non_pod_pids' in samples[1]) == (non_pod_pids is not None)


@pytest.mark.parametrize('value, reason', [
    ('-1', 'non_pod_pids -1 is out of range (0 to 1073741823)'),
    ('1073741824', 'non_pod_pids 1073741824 is out of range (0 to 1073741823)'),
    ('9' * 40, 'non_pod_pids is out of range (133 bits)'),
    ('2.0', 'non_pod_pids is not a whole number (float)'),
    ('"12"', 'non_pod_pids is not a whole number (str)'),
    ('true', 'non_pod_pids is not a whole number (bool)'),
    ('null', 'non_pod_pids is not a whole number (null)'),
])
def test_a_line_whose_tasks_are_no_count_is_skipped_and_named(tmp_path, value, reason):
    path = tmp_path / 'history.jsonl'
    path.write_text('{"t": 5, "non_pod_bytes": 1, "non_pod_millicores": 10, "non_pod_pids": %s}\n' % value
                    + '{"t": 6, "non_pod_bytes": 1, "non_pod_millicores": 10, "non_pod_pids": 1073741823}\n')
    samples, problems = _history_store.read(str(path), now=10)
    assert [s['t'] for s in samples] == [6]
    assert len(problems) == 1 and problems[0].endswith('line 1 skipped: ' + reason)


def test_the_sampler_records_the_tasks_outside_the_pods(tmp_path):
    node = make_node(tmp_path)
    proc = os.path.join(os.path.dirname(node), 'proc')
    cgroup_v2.write(os.path.join(proc, 'loadavg'), '0.68 1.53 4.24 3/1135 21666\n')
    cgroup_v2.write(os.path.join(proc, 'sys', 'kernel', 'pid_max'), '32768\n')
    cgroup_v2.write(os.path.join(proc, 'sys', 'kernel', 'threads-max'), '192735\n')
    cgroup_v2.write(os.path.join(node, 'kubepods.slice', 'pids.current'), '400\n')
    figures, problems = run(options(node, tmp_path), sleep=lambda _s: None)
    assert problems == [] and figures['recorded']
    line = json.loads((tmp_path / 'history.jsonl').read_text().splitlines()[-1])
    # 1135 tasks - 400 in kubepods; the sampler's own process is not in this tree's /proc: nothing more left out.
    assert line['non_pod_pids'] == 735
