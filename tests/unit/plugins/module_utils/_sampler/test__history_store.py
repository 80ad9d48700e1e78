"""The history file: appends, rotation, corruption, clock jumps, concurrency, percentiles."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import (
    NOBODY_UID, needs_root, plant_link, untouched, users_file, victim)

MIB = 1 << 20


def sample(t, memory_mib, cpu=100):
    return {'t': t, 'non_pod_bytes': memory_mib * MIB, 'non_pod_millicores': cpu}


def test_append_and_read_within_window(tmp_path):
    path = str(tmp_path / 'nodealloc' / 'history.jsonl')
    for t in range(10):
        _history_store.append(path, sample(1000 + t * 60, 500 + t))
    samples, problems = _history_store.read(path, now=1000 + 9 * 60, window_seconds=5 * 60)
    assert problems == []
    assert [s['non_pod_bytes'] // MIB for s in samples] == [504, 505, 506, 507, 508, 509]


def test_rotation_keeps_the_newest_within_bounds(tmp_path):
    path = str(tmp_path / 'history.jsonl')
    for t in range(30):
        _history_store.append(path, sample(t, t), max_samples=10)
    with open(path) as handle:
        lines = handle.read().splitlines()
    assert len(lines) <= 13  # counted once the size says more than 10 lines of about this length (+20 %)
    assert json.loads(lines[-1])['t'] == 29


def test_corrupt_lines_are_skipped_and_reported(tmp_path):
    path = tmp_path / 'history.jsonl'
    path.write_text(json.dumps(sample(1, 100)) + '\n{"t": 2, "non_pod_bytes": "lots"}\nnot json at all\n'
                    + json.dumps(sample(3, 300)) + '\n{"t": 4, "non_pod')
    samples, problems = _history_store.read(str(path), now=10)
    assert [s['t'] for s in samples] == [1, 3]
    assert len(problems) == 3 and all('skipped' in p for p in problems)


def test_clock_jumps(tmp_path):
    path = tmp_path / 'history.jsonl'
    # Written in this order: a clock that stepped back (300 after 500), and one from the future.
    path.write_text(''.join(json.dumps(s) + '\n' for s in (sample(500, 5), sample(300, 3), sample(10**9, 9))))
    samples, problems = _history_store.read(str(path), now=600)
    assert [s['t'] for s in samples] == [300, 500]  # sorted
    assert any('future' in p for p in problems)


def _writer(path, offset):
    for index in range(200):
        _history_store.append(path, sample(offset + index, 100))


def test_concurrent_appends_never_interleave(tmp_path):
    path = str(tmp_path / 'history.jsonl')
    workers = [multiprocessing.Process(target=_writer, args=(path, k * 1000)) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    samples, problems = _history_store.read(path, now=10**6)
    assert problems == [] and len(samples) == 800


@pytest.mark.parametrize('percent,expected', [(100, 10), (90, 9), (50, 5), (1, 1)])
def test_nearest_rank_percentile(percent, expected):
    assert _history_stats.percentile(list(range(1, 11)), percent) == expected


@pytest.mark.parametrize('text,seconds', [('7d', 604800), ('24h', 86400), ('90m', 5400), ('1.5d', 129600)])
def test_windows(text, seconds):
    assert _duration.parse_window(text) == seconds


def test_unreadable_history_is_a_problem_not_a_failure(tmp_path):
    samples, problems = _history_store.read(str(tmp_path), now=1)
    assert samples == [] and problems


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path):
    path = tmp_path / 'history.jsonl'
    path.write_text(json.dumps(sample(1, 100)) + '\n' + json.dumps(sample(2, 200))[:17])
    cut = _history_store.append(str(path), sample(3, 300))
    samples, problems = _history_store.read(str(path), now=10)
    assert cut == 17
    assert problems == [] and [s['t'] for s in samples] == [1, 3]


def _append_half_then_die(path):
    import os
    import signal
    line = json.dumps(sample(2, 200)) + '\n'
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, line[:len(line) // 2].encode())
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_writer_killed_mid_append_loses_only_its_own_line(tmp_path):
    path = str(tmp_path / 'history.jsonl')
    _history_store.append(path, sample(1, 100))
    writer = multiprocessing.Process(target=_append_half_then_die, args=(path,))
    writer.start()
    writer.join()
    assert writer.exitcode == -9
    with open(path) as handle:
        assert not handle.read().endswith('\n')  # the kill really left a torn line
    _history_store.append(path, sample(3, 300))
    samples, problems = _history_store.read(path, now=10)
    assert problems == [] and [s['t'] for s in samples] == [1, 3]


@pytest.mark.parametrize('line,reason', [
    ('{"t": 5, "non_pod_bytes": 1e300, "non_pod_millicores": 10}', 'more than the node has'),
    ('{"t": 5, "non_pod_bytes": NaN, "non_pod_millicores": 10}', 'nan'),
    ('{"t": 5, "non_pod_bytes": Infinity, "non_pod_millicores": 10}', 'inf'),
    ('{"t": 5, "non_pod_bytes": -1, "non_pod_millicores": 10}', 'negative'),
    ('{"t": 5, "non_pod_bytes": 1, "non_pod_millicores": 2001}', 'more than the node has'),
    ('{"t": 5, "non_pod_bytes": 1, "non_pod_millicores": 10, "kubepods_bytes": 3e9}', 'more than the node has'),
    ('{"t": 99999, "non_pod_bytes": 1, "non_pod_millicores": 10}', 'future'),
    ('{"t": true, "non_pod_bytes": 1, "non_pod_millicores": 10}', 'not a number'),
    ('[1, 2, 3]', 'not a json object'),
])
def test_impossible_samples_are_rejected_and_named(tmp_path, line, reason):
    path = tmp_path / 'history.jsonl'
    path.write_text(json.dumps(sample(1, 100)) + '\n' + line + '\n')
    samples, problems = _history_store.read(str(path), now=10, mem_total_bytes=2 << 30, capacity_millicores=2000)
    assert [s['t'] for s in samples] == [1]
    assert len(problems) == 1 and reason in problems[0].lower()


def test_a_full_file_is_rotated_once_then_appended_to_without_counting(tmp_path, monkeypatch):
    path = str(tmp_path / 'history.jsonl')
    counted = []
    real_count = _history_store._count_lines
    monkeypatch.setattr(_history_store, '_count_lines', lambda fd: counted.append(1) or real_count(fd))
    for t in range(100, 200):
        _history_store.append(path, sample(t, t), max_samples=50)
    with open(path) as handle:
        lines = handle.read().splitlines()
    assert 45 <= len(lines) <= 60 and json.loads(lines[-1])['t'] == 199
    assert len(counted) < 40  # a full file is not counted on every append


# Issue 35: lines that raised OverflowError (float() of a 309-digit integer) or RecursionError (deep brackets) and
# stopped every reader of the history; each is skipped and named.
@pytest.mark.parametrize('line, reason', [
    ('{"t": 1, "non_pod_bytes": %s, "non_pod_millicores": 1}' % ('9' * 309), 'non_pod_bytes is out of range'),
    ('{"t": 1, "non_pod_bytes": 1, "non_pod_millicores": 1, "kubepods_bytes": -%s}' % ('9' * 400),
     'kubepods_bytes is out of range'),
    ('[' * 100000 + ']' * 100000, 'nested too deep'),
    ('{"t": 1, "non_pod_bytes": %s, "non_pod_millicores": 1}' % ('9' * 5000), 'not a sample'),
])
def test_a_hostile_line_is_skipped_and_named(tmp_path, line, reason):
    path = tmp_path / 'history.jsonl'
    good = '{"t": 100, "non_pod_bytes": 5, "non_pod_millicores": 2}'
    path.write_text('%s\n%s\n' % (line, good))
    samples, problems = _history_store.read(str(path), now=200, mem_total_bytes=1 << 40, capacity_millicores=4000)
    assert [s['t'] for s in samples] == [100]
    assert len(problems) == 1 and problems[0].startswith('%s line 1 skipped: ' % path) and reason in problems[0]


# Issue 44: a link a user planted at history.jsonl made root cut the last line of a root-owned 0640 file and append
# JSON to it; a user's 0666 history of invented samples was used without a word.
def test_a_link_at_the_history_is_refused_and_its_target_untouched(tmp_path):
    target = victim(str(tmp_path / 'root-only'))
    path = tmp_path / 'state' / 'history.jsonl'
    plant_link(str(path), target)
    with pytest.raises(_safe_open.UnsafePathError, match='history.jsonl is a symbolic link'):
        _history_store.append(str(path), sample(100, 5))
    samples, problems = _history_store.read(str(path), now=200)
    assert samples == [] and len(problems) == 1
    assert problems[0].startswith('%s is a symbolic link (to %s): not followed' % (path, target))
    assert problems[0].endswith('; the history is not used')
    assert untouched(target)


@needs_root
def test_a_users_history_of_invented_samples_is_not_used_and_says_why(tmp_path):
    path = tmp_path / 'history.jsonl'
    users_file(str(path), ''.join('{"t": %d, "non_pod_bytes": 1, "non_pod_millicores": 1}\n' % t for t in range(100, 110)))
    before = path.read_bytes()
    samples, problems = _history_store.read(str(path), now=200)
    assert samples == [] and problems == ['%s is owned by uid 65534, not by uid 0 who writes it (owner uid 65534, mode '
                                          '0666): not used, nothing read or written there; the history is not used' % path]
    with pytest.raises(_safe_open.UnsafePathError, match='owned by uid 65534'):
        _history_store.append(str(path), sample(150, 5))
    assert path.read_bytes() == before and os.stat(path).st_mode & 0o7777 == 0o666 and os.stat(path).st_uid == NOBODY_UID


@pytest.mark.parametrize('mode', [0o770, 0o1777])
def test_a_history_in_a_directory_others_can_write_is_neither_read_nor_appended_to(tmp_path, mode):
    state = tmp_path / 'state'
    state.mkdir()
    path = state / 'history.jsonl'
    path.write_text('{"t": 100, "non_pod_bytes": 5, "non_pod_millicores": 2}\n')
    os.chmod(state, mode)
    samples, problems = _history_store.read(str(path), now=200)
    assert samples == [] and len(problems) == 1 and 'the directory is writable by' in problems[0]
    with pytest.raises(_safe_open.UnsafePathError, match='the directory is writable by'):
        _history_store.append(str(path), sample(150, 5))
    assert len(path.read_text().splitlines()) == 1 and os.stat(state).st_mode & 0o7777 == mode


# Issue 45: a line carries the pods of its reading; the lines written before have none and read as they did.
MEMORY = {'non_pod_bytes': 700 * MIB, 'kube_components_working_set_bytes': 150 * MIB,
          'kubepods_working_set_bytes': 2048 * MIB, 'measurement_tool': {'left_out_bytes': 30 * MIB}}


@pytest.mark.parametrize('pods', [0, 23, None])
def test_a_reading_round_trips_with_its_pods_and_without(tmp_path, pods):
    path = str(tmp_path / 'history.jsonl')
    older = sample(100, 650)  # as written before pods were recorded: no key at all
    _history_store.append(path, older)
    line = _history_store.reading(MEMORY, 120, 'sampler', 160.0, pods=pods)
    _history_store.append(path, line)
    samples, problems = _history_store.read(path, now=200, mem_total_bytes=8 << 30, capacity_millicores=2000)
    assert problems == [] and samples == [older, line]
    assert ('pods' in samples[1]) == (pods is not None) and samples[1].get('pods') == pods
    assert 'pods' not in samples[0]


@pytest.mark.parametrize('pods, reason', [
    ('-1', 'pods -1 is out of range (0 to 65536)'),
    ('65537', 'pods 65537 is out of range (0 to 65536)'),
    ('9' * 40, 'pods is out of range (133 bits)'),
    ('2.0', 'pods is not a whole number (float)'),
    ('"12"', 'pods is not a whole number (str)'),
    ('true', 'pods is not a whole number (bool)'),
    ('null', 'pods is not a whole number (null)'),
    ('[3]', 'pods is not a whole number (list)'),
])
def test_a_line_whose_pods_are_no_count_is_skipped_and_named(tmp_path, pods, reason):
    path = tmp_path / 'history.jsonl'
    path.write_text('{"t": 5, "non_pod_bytes": 1, "non_pod_millicores": 10, "pods": %s}\n' % pods
                    + '{"t": 6, "non_pod_bytes": 1, "non_pod_millicores": 10, "pods": 65536}\n')
    samples, problems = _history_store.read(str(path), now=10)
    assert [s['t'] for s in samples] == [6]
    assert len(problems) == 1 and problems[0].endswith('line 1 skipped: ' + reason)
