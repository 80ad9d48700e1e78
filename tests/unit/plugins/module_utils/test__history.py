"""The history file: appends, rotation, corruption, clock jumps, concurrency, percentiles."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _history

MIB = 1 << 20


def sample(t, memory_mib, cpu=100):
    return {'t': t, 'non_pod_bytes': memory_mib * MIB, 'non_pod_millicores': cpu}


def test_append_and_read_within_window(tmp_path):
    path = str(tmp_path / 'nodealloc' / 'history.jsonl')
    for t in range(10):
        _history.append(path, sample(1000 + t * 60, 500 + t))
    samples, problems = _history.read(path, now=1000 + 9 * 60, window_seconds=5 * 60)
    assert problems == []
    assert [s['non_pod_bytes'] // MIB for s in samples] == [504, 505, 506, 507, 508, 509]


def test_rotation_keeps_the_newest_within_bounds(tmp_path):
    path = str(tmp_path / 'history.jsonl')
    for t in range(30):
        _history.append(path, sample(t, t), max_samples=10)
    with open(path) as handle:
        lines = handle.read().splitlines()
    assert len(lines) <= 11
    assert json.loads(lines[-1])['t'] == 29


def test_corrupt_lines_are_skipped_and_reported(tmp_path):
    path = tmp_path / 'history.jsonl'
    path.write_text(json.dumps(sample(1, 100)) + '\n{"t": 2, "non_pod_bytes": "lots"}\nnot json at all\n'
                    + json.dumps(sample(3, 300)) + '\n{"t": 4, "non_pod')
    samples, problems = _history.read(str(path), now=10)
    assert [s['t'] for s in samples] == [1, 3]
    assert len(problems) == 3 and all('skipped' in p for p in problems)


def test_clock_jumps(tmp_path):
    path = tmp_path / 'history.jsonl'
    # Written in this order: a clock that stepped back (300 after 500), and one from the future.
    path.write_text(''.join(json.dumps(s) + '\n' for s in (sample(500, 5), sample(300, 3), sample(10**9, 9))))
    samples, problems = _history.read(str(path), now=600)
    assert [s['t'] for s in samples] == [300, 500]  # sorted
    assert any('future' in p for p in problems)


def _writer(path, offset):
    for index in range(200):
        _history.append(path, sample(offset + index, 100))


def test_concurrent_appends_never_interleave(tmp_path):
    path = str(tmp_path / 'history.jsonl')
    workers = [multiprocessing.Process(target=_writer, args=(path, k * 1000)) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    samples, problems = _history.read(path, now=10**6)
    assert problems == [] and len(samples) == 800


@pytest.mark.parametrize('percent,expected', [(100, 10), (90, 9), (50, 5), (1, 1)])
def test_nearest_rank_percentile(percent, expected):
    assert _history.percentile(list(range(1, 11)), percent) == expected


@pytest.mark.parametrize('text,seconds', [('7d', 604800), ('24h', 86400), ('90m', 5400), ('1.5d', 129600)])
def test_windows(text, seconds):
    assert _history.parse_window(text) == seconds


def test_unreadable_history_is_a_problem_not_a_failure(tmp_path):
    samples, problems = _history.read(str(tmp_path), now=1)
    assert samples == [] and problems
