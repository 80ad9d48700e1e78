"""The sampler's run on a cgroup v2 node tree: records, keeps its state, writes metrics promtool accepts."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
import types

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _measure
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store, _metrics, _sample_once
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.flock_holder import exclusive_flock
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import (
    needs_root, plant_link, untouched, users_file, victim)

MIB = 1 << 20
# The node-wide files the sampler reads, copied from a real machine (Linux 6.1, 24 GiB), so that what another
# process does on the machine running the tests (a 2 GiB allocation, a VM guest) cannot move the readings.
PROC = {
    'meminfo': ('MemTotal:       24683656 kB\nMemFree:        23535104 kB\nMemAvailable:   24012640 kB\n'
                'Active(file):     170120 kB\nInactive(file):    97228 kB\nKReclaimable:     208672 kB\n'
                'SReclaimable:     208672 kB\n'),
    'zoneinfo': 'Node 0, zone   Normal\n  pages free     5883776\n        min      8131\n        low      10163\n',
    'stat': 'cpu  57833 27 18264 477192 1152 0 486 356 0 0\n',
}


def run(options, **kwargs):
    """_sample_once.run on the node tree's own /proc (beside its cgroup root)."""
    return _sample_once.run(options, proc_root=os.path.join(os.path.dirname(options['cgroup_root']), 'proc'), **kwargs)


@pytest.fixture
def node(tmp_path):
    return make_node(tmp_path)


def make_node(tmp_path):
    """A v2 node: kubepods with a Guaranteed, a Burstable and a BestEffort pod, and system.slice with PSI."""
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    for name, text in PROC.items():
        cgroup_v2.write(str(tmp_path / 'proc' / name), text)
    cgroup_v2.make_group(root, 'kubepods.slice', 600 * MIB, 50 * MIB, 300 * MIB, memory_max=str(20000 * MIB))
    cgroup_v2.write(root + '/kubepods.slice/cpu.weight', '70\n')
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-pod1234.slice', 100 * MIB, 0, 0, memory_max=str(512 * MIB))
    cgroup_v2.write(root + '/kubepods.slice/kubepods-pod1234.slice/cpu.weight', '4\n')
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice', 300 * MIB, 0, 0)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod99.slice', 300 * MIB, 0, 0,
                         memory_max=str(1 << 30))
    cgroup_v2.write(root + '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod99.slice/cpu.weight', '1\n')
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-besteffort.slice', 10 * MIB, 0, 0)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod7.slice', 10 * MIB, 0, 0)
    cgroup_v2.make_group(root, 'system.slice', 200 * MIB, 10 * MIB, 90 * MIB)
    cgroup_v2.write(root + '/system.slice/memory.pressure', 'some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\n'
                    'full avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n')
    return root


def options(node, tmp_path):
    return {'cgroup_root': node, 'history_path': str(tmp_path / 'history.jsonl'), 'state_path': str(tmp_path / 'state.json'),
            'textfile_path': str(tmp_path / 'nodealloc.prom'), 'decision_path': str(tmp_path / 'decision.json'),
            'sample_seconds': 0, 'step_dir': str(tmp_path / 'step')}


def test_runs_record_and_write_metrics_promtool_accepts(node, tmp_path, monkeypatch):
    opts = options(node, tmp_path)
    (tmp_path / 'decision.json').write_text(json.dumps({'action': 'increase', 'time': 1700000000,
                                                        'eviction_hard_memory_bytes': 200 * MIB,
                                                        'recommended_kubepods_memory_limit_bytes': 19000 * MIB}))
    figures, problems = run(opts, sleep=lambda _s: None)
    assert problems == [] and figures['recorded']
    # Later runs never read the whole history again.
    monkeypatch.setattr(_history_store, 'read', lambda *a, **k: pytest.fail('the sampler re-read the history'))
    figures, problems = run(opts, sleep=lambda _s: None)
    assert problems == [] and figures['window_samples'] == 2
    assert len((tmp_path / 'history.jsonl').read_text().splitlines()) == 2
    text = (tmp_path / 'nodealloc.prom').read_text()
    assert oct((tmp_path / 'nodealloc.prom').stat().st_mode & 0o777) == '0o644'
    if shutil.which('promtool'):
        check = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
    metrics = dict(line.rsplit(' ', 1) for line in text.splitlines() if not line.startswith('#'))
    assert int(metrics['nodealloc_memory_kubepods_limit_bytes']) == 20000 * MIB
    assert int(metrics['nodealloc_memory_allocatable_bytes']) == 19800 * MIB
    assert metrics['nodealloc_decision{action="increase"}'] == '1'
    assert int(metrics['nodealloc_pod_memory_limits_bytes']) == 512 * MIB + (1 << 30)
    assert metrics['nodealloc_pods_without_memory_limit'] == '1'
    assert metrics['nodealloc_pods{qos="guaranteed"}'] == metrics['nodealloc_pods{qos="besteffort"}'] == '1'
    assert float(metrics['nodealloc_pod_memory_limits_kubepods_ratio']) == pytest.approx((512 + 1024) / 20000.0)
    assert metrics['nodealloc_pressure_stall_seconds_total{cgroup="/system.slice",kind="some",resource="memory"}'] == '2.5'


def metrics_of(tmp_path):
    text = (tmp_path / 'nodealloc.prom').read_text()
    return dict(line.rsplit(' ', 1) for line in text.splitlines() if not line.startswith('#'))


def test_the_near_reservation_flag_rises_when_non_pod_memory_uses_up_the_planned_headroom(node, tmp_path):
    opts = options(node, tmp_path)
    figures, _problems = run(opts, sleep=lambda _s: None)
    assert figures['near_reservation'] is None  # nothing applied yet: no flag at all
    assert 'nodealloc_memory_near_reservation' not in metrics_of(tmp_path)
    non_pod = figures['memory']['non_pod_bytes']
    assert non_pod > 0
    reservation = tmp_path / 'reservation.json'
    # Reserved 50 MiB above today's use: more than half of 120 MiB of planned headroom is used up; of 100 MiB, half
    # exactly (not above); of 10 MiB, nothing.
    for headroom, flagged in ((120 * MIB, '1'), (100 * MIB, '0'), (10 * MIB, '0')):
        reservation.write_text(json.dumps({'reserved_memory_bytes': non_pod + 50 * MIB, 'memory_headroom_bytes': headroom}))
        run(opts, sleep=lambda _s: None)
        metrics = metrics_of(tmp_path)
        assert metrics['nodealloc_memory_near_reservation'] == flagged
        assert int(metrics['nodealloc_memory_planned_headroom_bytes']) == headroom
    reservation.write_text('{"reserved_memory_bytes": "1Gi"}')  # not what the role writes: ignored, not fatal
    _figures, problems = run(opts, sleep=lambda _s: None)
    assert problems == [] and 'nodealloc_memory_near_reservation' not in metrics_of(tmp_path)


def test_lines_other_writers_append_are_counted_once_and_validated(node, tmp_path):
    opts = options(node, tmp_path)
    figures, _problems = run(opts, sleep=lambda _s: None)
    now = figures['time']
    # The other writer's line is the largest value the history can accept.
    largest = (figures['memory']['mem_total_bytes'] // MIB - 1) * MIB
    with open(opts['history_path'], 'a') as handle:
        handle.write(json.dumps({'t': now + 1, 'non_pod_bytes': largest, 'non_pod_millicores': 10}) + '\n')
        handle.write('{"t": %f, "non_pod_bytes": NaN, "non_pod_millicores": 10}\n' % (now + 2))
    figures, _problems = run(dict(opts, percentile=100), sleep=lambda _s: None, now=now + 60)
    assert figures['window_samples'] == 3 and figures['rejected_samples'] == 1
    assert figures['window_non_pod_bytes'] == largest


def test_sketch_percentile_matches_the_history_percentile_to_the_mib(tmp_path):
    state = {'hours': {}, 'totals': {'m': {}, 'c': {}}}
    samples = [{'t': 3600 * 10 + i * 60, 'non_pod_bytes': (300 + (i * 53) % 700) * MIB + 12345,
                'non_pod_millicores': (i * 7) % 400} for i in range(300)]
    for sample in samples:
        _sample_once._add(state, sample)
    for percent in (50, 90, 99, 100):
        exact = _history_stats.percentile([s['non_pod_bytes'] for s in samples], percent)
        assert 0 <= _sample_once.sketch_percentile(state['totals']['m'], percent) * MIB - exact < MIB
        assert _sample_once.sketch_percentile(state['totals']['c'], percent) == _history_stats.percentile(
            [s['non_pod_millicores'] for s in samples], percent)


def test_hours_leaving_the_window_leave_the_totals():
    state = {'hours': {}, 'totals': {'m': {}, 'c': {}}}
    _sample_once._add(state, {'t': 0, 'non_pod_bytes': 900 * MIB, 'non_pod_millicores': 900})
    _sample_once._add(state, {'t': 7200, 'non_pod_bytes': 100 * MIB, 'non_pod_millicores': 100})
    _sample_once._prune(state, now=7300, window_seconds=3600)
    assert _sample_once.sketch_percentile(state['totals']['m'], 100) == 100
    assert _sample_once.sketch_percentile(state['totals']['c'], 100) == 100 and list(state['hours']) == ['2']


def test_two_days_of_history_are_counted_through_packed_hours_and_pruned_exactly(node, tmp_path):
    # Hours are saved packed and unpacked only when a run adds to them or prunes them: the percentile
    # after the pruning of packed hours must still be the one of the samples left in the window.
    opts = dict(options(node, tmp_path), history_window='24h')
    now = 1700000000.0
    largest = 900 * MIB
    with open(opts['history_path'], 'w') as handle:
        for index in range(48 * 60):
            handle.write(json.dumps({'t': now - (48 * 60 - index) * 60, 'non_pod_bytes': (largest if index < 60 else (200 + index % 97) * MIB),
                                     'non_pod_millicores': 10 + index % 13}) + '\n')
    figures, _problems = run(dict(opts, percentile=100), sleep=lambda _s: None, now=now)
    # The sketch's window starts at the hour the window's start falls in.
    samples, _problems = _history_store.read(opts['history_path'], now, now - (now - 86400) // 3600 * 3600)
    assert figures['window_samples'] == len(samples)
    assert figures['window_non_pod_bytes'] == -(-max(s['non_pod_bytes'] for s in samples) // MIB) * MIB < largest
    saved = json.loads((tmp_path / 'state.json').read_text())
    assert saved['hours'] and all(isinstance(hour, str) for hour in saved['hours'].values())
    # Two days on, the window holds no line of the file: what is left is the runs' own readings.
    figures, _problems = run(dict(opts, percentile=100), sleep=lambda _s: None, now=now + 2 * 86400)
    samples, _problems = _history_store.read(opts['history_path'], now + 2 * 86400, 86400 + 3600)
    assert figures['window_samples'] == len(samples) == 1 and saved['hours'] != json.loads((tmp_path / 'state.json').read_text())['hours']
    assert figures['window_non_pod_bytes'] == -(-samples[0]['non_pod_bytes'] // MIB) * MIB


def test_hours_round_trip_through_their_packed_form():
    hour = {'m': {'600': 3, '1024': 1}, 'c': {'100': 2}}
    assert _sample_once._unpack_hour(_sample_once._pack_hour(hour)) == hour
    assert _sample_once._unpack_hour(_sample_once._pack_hour({'m': {}, 'c': {}})) == {'m': {}, 'c': {}}


@pytest.mark.parametrize('damage, rebuilt', [
    (lambda state: state['hours'].update({max(state['hours'], key=int): 'not;a:packed,hour'}), True),  # the hour a run adds to
    (lambda state: state.update(totals={'m': {'lots': 1}, 'c': {}}), True),
    (lambda state: state.update(hours=[]), True),
    (lambda state: state.update(cpu='yesterday'), False),  # the CPU is sampled instead
    # Issue 35: shapes that stopped the sampler on every later run (OverflowError from seek, TypeError, IndexError).
    (lambda state: state.update(offset=10 ** 30), True),
    (lambda state: state.update(offset=1.5), True),
    (lambda state: state.update(totals={'m': [], 'c': {}}), True),
    (lambda state: state['cpu'].update(time=[]), False),
])
def test_an_unusable_state_is_rebuilt_from_the_history_not_fatal(node, tmp_path, damage, rebuilt):
    opts = options(node, tmp_path)
    now = 1700000000.0
    with open(opts['history_path'], 'w') as handle:
        for index in range(120):
            handle.write(json.dumps({'t': now - (120 - index) * 60, 'non_pod_bytes': (300 + index) * MIB,
                                     'non_pod_millicores': 50 + index}) + '\n')
    run(opts, sleep=lambda _s: None, now=now)
    clean_dir = tmp_path / 'clean'
    clean_dir.mkdir()
    clean = dict(opts, history_path=str(clean_dir / 'history.jsonl'), state_path=str(clean_dir / 'state.json'),
                 textfile_path='')
    (clean_dir / 'history.jsonl').write_bytes((tmp_path / 'history.jsonl').read_bytes())
    state = json.loads((tmp_path / 'state.json').read_text())
    damage(state)
    (tmp_path / 'state.json').write_text(json.dumps(state))

    figures, problems = run(opts, sleep=lambda _s: None, now=now + 60)
    expected, _problems = run(clean, sleep=lambda _s: None, now=now + 60)
    assert figures['recorded'] and figures['window_samples'] == expected['window_samples'] == 122
    assert figures['window_non_pod_bytes'] == expected['window_non_pod_bytes']
    assert [p for p in problems if 'state could not be used' in p] == (problems if rebuilt else []) and len(problems) == rebuilt, problems
    # And the next run is back to normal, from the state this one saved.
    _figures, problems = run(opts, sleep=lambda _s: None, now=now + 120)
    assert problems == []


@pytest.mark.parametrize('text', [
    '{"version": 2, "hours": ' + '[' * 100000 + ']' * 100000 + '}',  # RecursionError in json.load
    '[2]', '{"version": 2, "hours_valid": true, "hours": {"1": "1:1;"}, "totals": {"m": {"1": 1}}}',
])
def test_a_state_file_of_another_shape_is_moved_aside_and_rebuilt(node, tmp_path, text):
    opts = options(node, tmp_path)
    (tmp_path / 'state.json').write_text(text)
    figures, problems = run(opts, sleep=lambda _s: None, now=1700000000.0)
    assert figures['recorded'] and len(problems) == 1 and 'moved to %s.unusable' % opts['state_path'] in problems[0]
    assert (tmp_path / 'state.json.unusable').read_text() == text
    assert run(opts, sleep=lambda _s: None, now=1700000060.0)[1] == []


def cpu_clock(*seconds):
    """A process CPU clock reading ``seconds`` in turn."""
    readings = iter(int(s * 1e9) for s in seconds)
    return lambda: next(readings)


def run_a_minute_apart(node, tmp_path, monkeypatch, first, second, busy_fraction=0.2):
    """Two runs, the second a minute after the first with the node ``busy_fraction`` busy in between; each run's
    own CPU time at its snapshot and at its end is given as (snapshot, end) in seconds."""
    opts = dict(options(node, tmp_path), textfile_path=str(tmp_path / 'nodealloc.prom'))
    # The snapshots' monotonic clock is this one: the runs are exactly the timer period apart however long the test
    # took between them (with the real clock, 0.6 s of a busy machine made 3 s in 60.6 s round to 49 millicores).
    clock = [1000.0]

    def sleep(seconds):
        clock[0] += seconds

    monkeypatch.setattr(_measure, 'time', types.SimpleNamespace(monotonic=lambda: clock[0]))
    # The first run samples (no saved snapshot yet): it reads its clock at both ends of the sample.
    run(opts, sleep=sleep, process_cpu_ns=cpu_clock(first[0], first[0], first[1]))
    sleep(60)  # the timer period, without waiting for it
    stat = tmp_path / 'proc' / 'stat'
    user, nice, system, idle = (int(v) for v in stat.read_text().split()[1:5])
    total = 60 * os.sysconf('SC_CLK_TCK') * (os.cpu_count() or 1)
    busy = int(total * busy_fraction)
    stat.write_text('cpu  %d %d %d %d 1152 0 486 356 0 0\n' % (user + busy, nice, system, idle + total - busy))
    figures, problems = run(opts, sleep=lambda _s: None, process_cpu_ns=cpu_clock(*second))
    assert problems == []
    return figures


def test_the_samplers_own_cpu_between_two_runs_is_left_out_of_non_pod_cpu(node, tmp_path, monkeypatch):
    # The first run went on for 1 s of CPU after its snapshot; the second took 2 s to reach its own: 3 s in 60 s.
    figures = run_a_minute_apart(node, tmp_path, monkeypatch, (0.5, 1.5), (2.0, 2.5))
    capacity = (os.cpu_count() or 1) * 1000
    cpu = figures['cpu']
    assert cpu['node_busy_millicores'] == capacity // 5
    assert cpu['sampler_millicores'] == 50
    assert cpu['non_pod_millicores'] == capacity // 5 - 50
    recorded = json.loads((tmp_path / 'history.jsonl').read_text().splitlines()[-1])
    assert recorded['non_pod_millicores'] == capacity // 5 - 50
    assert metrics_of(tmp_path)['nodealloc_sampler_cpu_cores'] == '0.05'


def test_the_samplers_own_cpu_never_takes_non_pod_cpu_below_zero(node, tmp_path, monkeypatch):
    figures = run_a_minute_apart(node, tmp_path, monkeypatch, (0.0, 60.0), (60.0, 61.0), busy_fraction=0.01)
    cpu = figures['cpu']
    assert cpu['non_pod_millicores'] == 0 and cpu['sampler_millicores'] == cpu['node_busy_millicores'] > 0


def test_a_sampler_run_inside_an_ssh_session_is_left_out_with_the_session_not_twice(node, tmp_path, monkeypatch):
    # Started by hand from a login: its CPU is in user.slice, which is left out as a session already.
    os.makedirs(os.path.join(node, 'user.slice', 'user-0.slice', 'session-1.scope'))
    cgroup_v2.write(os.path.join(node, 'user.slice', 'cpu.stat'), 'usage_usec 1000\n')
    cgroup_v2.write(str(tmp_path / 'proc' / str(os.getpid()) / 'cgroup'), '0::/user.slice/user-0.slice/session-1.scope\n')
    figures = run_a_minute_apart(node, tmp_path, monkeypatch, (0.5, 1.5), (2.0, 2.5))
    cpu = figures['cpu']
    assert cpu['sampler_millicores'] == 0 and cpu['non_pod_millicores'] == cpu['node_busy_millicores'] > 0


def test_no_reading_is_recorded_while_a_step_changes_the_node(node, tmp_path):
    opts = options(node, tmp_path)
    figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['recorded'] and not figures['mid_change'] and problems == []
    os.makedirs(opts['step_dir'], exist_ok=True)
    with exclusive_flock(opts['step_dir']):
        figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['mid_change'] and not figures['recorded'] and problems == []
    assert len((tmp_path / 'history.jsonl').read_text().splitlines()) == 1
    assert figures['window_samples'] == 1
    assert metrics_of(tmp_path)['nodealloc_sample_recorded'] == '0'
    # Nor is a CPU snapshot taken mid-step kept for the next period.
    assert 'cpu' not in json.loads((tmp_path / 'state.json').read_text())
    # Once the step has let go, the next run records again.
    figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['recorded'] and not figures['mid_change']
    assert len((tmp_path / 'history.jsonl').read_text().splitlines()) == 2


def test_a_run_mid_step_leaves_a_line_another_writer_is_appending_to_be_read_whole(node, tmp_path):
    opts = options(node, tmp_path)
    run(opts, sleep=lambda _s: None)
    history = tmp_path / 'history.jsonl'
    line = history.read_text().splitlines()[0]
    with open(str(history), 'a') as handle:
        handle.write(line[:20])  # another writer (the facts module's record) half way through its line
    os.makedirs(opts['step_dir'], exist_ok=True)
    with exclusive_flock(opts['step_dir']):
        figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['mid_change'] and problems == []
    with open(str(history), 'a') as handle:
        handle.write(line[20:] + '\n')
    figures, problems = run(opts, sleep=lambda _s: None)
    # The finished line and this run's own: three valid samples, none rejected.
    assert figures['window_samples'] == 3 and figures['rejected_samples'] == 0, problems


def test_a_shared_reader_or_no_lock_directory_is_no_step(node, tmp_path):
    opts = dict(options(node, tmp_path), step_dir=str(tmp_path / 'absent'))
    figures, _problems = run(opts, sleep=lambda _s: None)
    assert figures['recorded'] and not figures['mid_change']
    # The probe's own shared try does not count as a holder for the next probe.
    os.makedirs(str(tmp_path / 'step'))
    fd = os.open(str(tmp_path / 'step'), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        figures, _problems = run(options(node, tmp_path), sleep=lambda _s: None)
    finally:
        os.close(fd)
    assert figures['recorded'] and not figures['mid_change']


@pytest.mark.parametrize('driver, working_set_bytes', [('systemd', 650 * MIB), ('cgroupfs', 40 * MIB), (None, 650 * MIB)])
def test_the_kubelets_cgroup_driver_picks_kubepods_as_the_facts_module_does(node, tmp_path, driver, working_set_bytes):
    # A node whose kubelet moved from the cgroupfs to the systemd driver (or back) keeps the old driver's group: the
    # sampler must measure the group the kubelet uses, the one the facts module picked with the same hint. kubepods.slice
    # holds 650 MiB of working set (anon + active file), the stale kubepods 40 MiB.
    cgroup_v2.make_group(node, 'kubepods', 40 * MIB, 0, 0)
    figures, _problems = run(dict(options(node, tmp_path), cgroup_driver=driver), sleep=lambda _s: None)
    assert figures['memory']['kubepods_working_set_bytes'] == working_set_bytes


SWAP_FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'swap')


def swap_node(tmp_path, name):
    """A node tree from a swap fixture (test__swap.py says where each was copied from): the kernel's /proc/meminfo,
    /proc/swaps and memory files, plus what the sampler needs beside them (cgroup.controllers, cpu.stat, /proc/stat,
    /proc/zoneinfo; the test's own, none of them about swap)."""
    shutil.copytree(os.path.join(SWAP_FIXTURES, name), str(tmp_path), dirs_exist_ok=True)
    for key in ('stat', 'zoneinfo'):
        cgroup_v2.write(str(tmp_path / 'proc' / key), PROC[key])
    if name.startswith('v1'):
        # A v1 tree of controller directories: the fixture's groups under memory/, cpuacct beside it.
        root = str(tmp_path / 'cgroup')
        os.rename(root, str(tmp_path / 'memory'))
        os.makedirs(root)
        os.rename(str(tmp_path / 'memory'), os.path.join(root, 'memory'))
        cgroup_v2.write(os.path.join(root, 'memory', 'memory.usage_in_bytes'), '0\n')
        for relative in ('', 'kubepods.slice', 'system.slice'):
            cgroup_v2.write(os.path.join(root, 'cpuacct', relative, 'cpuacct.usage'), '0\n')
        return root
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    for relative in ('kubepods.slice', 'system.slice', 'system.slice/swap-test-daemon.service'):
        cgroup_v2.set_cpu_usage(root, relative, 0)
    return root


def may_swap_metrics(node, tmp_path):
    """``nodealloc_swap_system_slice_may_swap`` as the sampler and as the facts module write it, on one node."""
    run(options(node, tmp_path), sleep=lambda _s: None)
    sampler = metrics_of(tmp_path).get('nodealloc_swap_system_slice_may_swap')
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}')
    facts = _gather.gather({'cgroup_root': node, 'sample_seconds': 0, 'history': False, 'kubelet_config_path': str(config)},
                           proc_root=str(tmp_path / 'proc'), sleep=lambda _s: None)
    module = dict(line.rsplit(' ', 1) for line in _metrics.render(facts, 1700000000).splitlines()
                  if not line.startswith('#')).get('nodealloc_swap_system_slice_may_swap')
    return sampler, module


@pytest.mark.parametrize('name, swap_max, may_swap', [
    ('v2-daemon-swapped', 'max', '1'),  # swap on (/var/swapfile in /proc/swaps), system.slice's memory.swap.max "max"
    ('v2-drop-in', '0', '0'),  # the same guest with MemorySwapMax=0 on system.slice: the kernel's file reads 0
])
def test_the_sampler_says_whether_system_slice_may_swap_as_the_facts_do(tmp_path, name, swap_max, may_swap):
    node = swap_node(tmp_path, name)
    assert (tmp_path / 'cgroup' / 'system.slice' / 'memory.swap.max').read_text().strip() == swap_max
    assert (tmp_path / 'proc' / 'swaps').read_text().count('\n') == 2  # the header and /var/swapfile
    sampler, module = may_swap_metrics(node, tmp_path)
    assert sampler == module == may_swap
    # The swapped-out non-pod memory beside it, the same figure as the facts' (_swap.measure through _measure.memory).
    facts = _gather.gather({'cgroup_root': node, 'sample_seconds': 0, 'history': False,
                           'kubelet_config_path': str(tmp_path / 'config.json')},
                           proc_root=str(tmp_path / 'proc'), sleep=lambda _s: None)
    assert int(metrics_of(tmp_path)['nodealloc_memory_non_pod_swap_bytes']) == facts['memory']['non_pod_swap_bytes'] > 0


def test_the_sampler_reads_system_slices_swap_limit_on_every_run(node, tmp_path):
    """The test's own v2 tree with a swap device: "max" then 0 (MemorySwapMax=0 applied between two runs) then "max"."""
    cgroup_v2.write(str(tmp_path / 'proc' / 'swaps'), 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n'
                    '/swapfile                               file\t\t1048572\t\t0\t\t-2\n')
    opts = options(node, tmp_path)
    limit = tmp_path / 'cgroup' / 'system.slice' / 'memory.swap.max'
    for swap_max, may_swap in (('max', '1'), ('0', '0'), ('max', '1')):
        limit.write_text(swap_max + '\n')
        run(opts, sleep=lambda _s: None)
        assert metrics_of(tmp_path)['nodealloc_swap_system_slice_may_swap'] == may_swap, swap_max


@pytest.mark.parametrize('name', ['v1-pod-and-daemon-swapped', 'no-swap-device', 'v2-no-swap-files'])
def test_v1_and_nodes_without_swap_get_the_facts_answer(tmp_path, name):
    """Where the answer is not a v2 limit: cgroup v1 with swap on (no per-group limit systemd sets), a node without a
    swap device, a v2 kernel without swap accounting (no memory.swap.* files): the sampler writes what the facts do."""
    if name == 'v1-pod-and-daemon-swapped':
        node = swap_node(tmp_path, name)
    elif name == 'no-swap-device':
        node = swap_node(tmp_path, 'v2-daemon-swapped')
        cgroup_v2.write(str(tmp_path / 'proc' / 'swaps'), 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n')
    else:
        node = make_node(tmp_path)  # no /proc/swaps, no memory.swap.* files
    sampler, module = may_swap_metrics(node, tmp_path)
    assert sampler is not None and sampler == module


def test_a_textfile_or_state_that_cannot_be_written_is_a_problem_and_the_reading_still_recorded(node, tmp_path):
    (tmp_path / 'a-file').write_text('')
    opts = dict(options(node, tmp_path), textfile_path=str(tmp_path / 'a-file' / 'nodealloc.prom'),
                state_path=str(tmp_path / 'a-file' / 'state.json'))
    figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['recorded'] and len((tmp_path / 'history.jsonl').read_text().splitlines()) == 1
    assert [p.split(': ')[:2] for p in problems] == [[opts['textfile_path'], 'metrics not written'],
                                                     [opts['state_path'], 'state not saved (the next run reads the '
                                                                          'history in full)']], problems


# Issue 44: a link a user planted at the .prom path made root replace its target and chmod it 0644.
def test_links_at_the_textfile_and_the_state_are_refused_their_targets_untouched_and_the_reading_recorded(node, tmp_path):
    target = victim(str(tmp_path / 'root-only'))
    opts = options(node, tmp_path)
    for key in ('textfile_path', 'state_path'):
        plant_link(opts[key], target)
    figures, problems = run(opts, sleep=lambda _s: None)
    assert untouched(target)
    assert figures['recorded'] and len((tmp_path / 'history.jsonl').read_text().splitlines()) == 1
    assert problems == [
        '%s is a symbolic link (to %s): not followed, nothing read or written there; nodealloc opens only files it can '
        'reach at their own name; the sampler state is not used, rebuilt from the history' % (opts['state_path'], target),
        '%s: metrics not written: %s is a symbolic link (to %s): not followed, nothing read or written there; nodealloc '
        'opens only files it can reach at their own name' % (opts['textfile_path'], opts['textfile_path'], target),
        '%s: state not saved (the next run reads the history in full): %s is a symbolic link (to %s): not followed, '
        'nothing read or written there; nodealloc opens only files it can reach at their own name'
        % (opts['state_path'], opts['state_path'], target)]


def test_a_history_in_a_directory_others_can_write_is_not_read_nor_recorded_and_the_run_says_why(node, tmp_path):
    state = tmp_path / 'state'
    state.mkdir()
    (state / 'history.jsonl').write_text('{"t": %d, "non_pod_bytes": 5, "non_pod_millicores": 2}\n' % (time.time() - 60))
    os.chmod(state, 0o777)
    opts = dict(options(node, tmp_path), history_path=str(state / 'history.jsonl'))
    figures, problems = run(opts, sleep=lambda _s: None)
    assert not figures['recorded'] and figures['window_samples'] == 0
    assert (state / 'history.jsonl').read_text().count('\n') == 1
    assert len(problems) == 1 and problems[0].startswith('%s: the directory is writable by its group and others' % state)
    assert problems[0].endswith('; the history is not used, this reading was not recorded')
    # Once the directory is root's alone again, the next run reads the whole history and records.
    os.chmod(state, 0o755)
    figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['recorded'] and figures['window_samples'] == 1 + 1 and problems == []


@needs_root
def test_a_users_state_file_is_not_used(node, tmp_path):
    opts = options(node, tmp_path)
    users_file(opts['state_path'], '{"version": 2, "hours_valid": true, "hours": {}, "totals": {"m": {"999999": 9}, '
                                   '"c": {}}}')
    figures, problems = run(opts, sleep=lambda _s: None)
    assert figures['window_samples'] == 1  # this run's reading only: the user's 9 invented samples are not counted
    assert problems[0].startswith('%s is owned by uid 65534' % opts['state_path'])
    assert problems[0].endswith('; the sampler state is not used, rebuilt from the history')


# Issue 45: every reading records the pods on the node, the pod groups under kubepods as the kubelet names them
# (pkg/kubelet/cm/pod_container_manager_linux.go GetPodContainerName: "pod" + the pod's UID, which the systemd driver
# writes as a slice, '-' escaped to '_'; qos_container_manager_linux.go: Guaranteed pods directly under kubepods).
UIDS = ('8f2b9c1e-1a2b-4c3d-9e8f-0123456789ab', '0d4c6a8e-5f71-4b2a-8c3d-fedcba987654',
        '2d8f6e4c1b3a59780f1e2d3c4b5a6978',  # a static pod's: the md5 of its manifest (pkg/kubelet/config/common.go)
        'c1a2b3d4-e5f6-4789-8abc-def012345678', '77e1f0aa-3b2c-4d5e-9f80-1a2b3c4d5e6f')


def pod_groups(driver, kubepods):
    """Where the kubelet puts two Guaranteed, two Burstable and one BestEffort pod, and names that are no pod's."""
    if driver == 'systemd':
        def name(tier, uid):
            return 'kubepods-%spod%s.slice' % (tier + '-' if tier else '', uid.replace('-', '_'))
        tiers = {'': kubepods, 'burstable': kubepods + '/kubepods-burstable.slice',
                 'besteffort': kubepods + '/kubepods-besteffort.slice'}
    else:
        def name(_tier, uid):
            return 'pod' + uid
        tiers = {'': kubepods, 'burstable': kubepods + '/burstable', 'besteffort': kubepods + '/besteffort'}
    pods = [tiers[''] + '/' + name('', UIDS[0]), tiers[''] + '/' + name('', UIDS[2]),
            tiers['burstable'] + '/' + name('burstable', UIDS[1]), tiers['burstable'] + '/' + name('burstable', UIDS[3]),
            tiers['besteffort'] + '/' + name('besteffort', UIDS[4])]
    decoys = [kubepods + '/notapod', kubepods + '/podzz-not-a-uid', kubepods + '/pod', tiers['burstable'] + '/pod.slice',
              kubepods + '/system.slice/pod' + UIDS[0]]  # a pod's name under a group that is no QoS tier
    return pods, decoys


def plant_pods(node, version, driver, kubepods):
    """The pod groups of ``pod_groups`` in a node tree (v2: one hierarchy; v1: the memory controller's), and decoys:
    groups whose names are no pod's, a regular file and a directory whose name is not UTF-8 (cgroupfs names are
    bytes: a group anyone made). Returns how many pods the kubelet would count: 5."""
    pods, decoys = pod_groups(driver, kubepods)
    memory = node if version == 'v2' else os.path.join(node, 'memory')
    for relative in pods + decoys:
        if version == 'v2':
            cgroup_v2.make_group(node, relative, 10 * MIB, 0, 0, memory_max=str(256 * MIB))
        else:
            cgroup_v2.write(os.path.join(memory, relative, 'memory.limit_in_bytes'), '%d\n' % (256 * MIB))
            cgroup_v2.write(os.path.join(memory, relative, 'memory.usage_in_bytes'), '%d\n' % (10 * MIB))
    cgroup_v2.write(os.path.join(memory, kubepods, 'pod' + UIDS[1].replace('-', '')), 'a file, not a group')
    os.mkdir(os.path.join(memory, kubepods).encode() + b'/pod\xff' + UIDS[3].encode())
    return len(pods)


def tree(tmp_path, version, driver):
    """A node of cgroup ``version`` whose kubelet uses ``driver``: (cgroup root, kubepods, pods beside the planted)."""
    if version == 'v2':
        node = make_node(tmp_path)  # kubepods.slice holds three pods already (systemd names)
        if driver == 'systemd':
            return node, 'kubepods.slice', 3
        cgroup_v2.make_group(node, 'kubepods', 40 * MIB, 0, 0)  # beside the systemd one, as after a driver change
        return node, 'kubepods', 0
    # The swap fixtures' v1 nodes (copied from real ones): kubepods (cgroupfs) and kubepods.slice (systemd).
    node = swap_node(tmp_path, 'v1-host-no-swap' if driver == 'cgroupfs' else 'v1-pod-and-daemon-swapped')
    kubepods = 'kubepods' if driver == 'cgroupfs' else 'kubepods.slice'
    cgroup_v2.write(os.path.join(node, 'cpuacct', kubepods, 'cpuacct.usage'), '0\n')
    return node, kubepods, 0


@pytest.mark.parametrize('version, driver', [('v2', 'systemd'), ('v2', 'cgroupfs'), ('v1', 'systemd'),
                                             ('v1', 'cgroupfs')])
def test_every_reading_records_the_pods_of_every_qos_tier_on_v1_and_v2_with_either_driver(tmp_path, version, driver):
    node, kubepods, before = tree(tmp_path, version, driver)
    pods = before + plant_pods(node, version, driver, kubepods)
    opts = dict(options(node, tmp_path), cgroup_driver=driver)
    figures, problems = run(opts, sleep=lambda _s: None)
    assert problems == [] and figures['recorded']
    line = json.loads((tmp_path / 'history.jsonl').read_text().splitlines()[-1])
    assert line['pods'] == figures['overcommit']['pods'] == pods
    samples, problems = _history_store.read(opts['history_path'], figures['time'] + 1)
    assert problems == [] and samples[-1]['pods'] == pods
    # The facts module counts the same pods, returns them and records them in the same line.
    config = tmp_path / 'config.json'
    config.write_text(json.dumps({'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
                                  'cgroupDriver': driver}))
    facts = _gather.gather({'cgroup_root': node, 'sample_seconds': 0, 'record': True, 'kubelet_config_path': str(config),
                            'history_path': opts['history_path']},
                           proc_root=str(tmp_path / 'proc'), sleep=lambda _s: None)
    assert facts['pods'] == pods and facts['history']['recorded']
    line = json.loads((tmp_path / 'history.jsonl').read_text().splitlines()[-1])
    assert line['source'] == 'module' and line['pods'] == pods


def test_a_node_without_kubepods_records_no_pods_and_its_lines_read_as_the_older_ones(tmp_path):
    node = make_node(tmp_path)
    shutil.rmtree(os.path.join(node, 'kubepods.slice'))
    figures, problems = run(options(node, tmp_path), sleep=lambda _s: None)
    assert problems == [] and figures['recorded'] and figures['overcommit'] is None
    assert 'pods' not in json.loads((tmp_path / 'history.jsonl').read_text())
