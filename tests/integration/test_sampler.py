"""The sampler the role installs, run as its systemd service runs it: one reading into the history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.flock_holder import exclusive_flock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLER = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')


def install_sampler(tmp_path):
    """The installed layout: the script beside ansible_collections/nodealloc/kubelet/plugins/module_utils."""
    install = tmp_path / 'lib'
    utils = install / 'ansible_collections' / 'nodealloc' / 'kubelet' / 'plugins'
    utils.mkdir(parents=True)
    os.symlink(os.path.join(ROOT, 'plugins', 'module_utils'), utils / 'module_utils')
    script = install / 'nodealloc-sampler.py'
    script.write_text(open(SAMPLER).read())
    return script


def test_each_run_appends_one_sample(tmp_path):
    script = install_sampler(tmp_path)
    history = tmp_path / 'history.jsonl'
    for _run in range(3):
        subprocess.run([sys.executable, str(script), '--history', str(history), '--state', str(tmp_path / 'state.json'),
                        '--textfile', str(tmp_path / 'nodealloc.prom'), '--sample-seconds', '0.2'],
                       check=True, capture_output=True, env={'PATH': os.environ['PATH']})
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert len(lines) == 3
    assert all(line['source'] == 'sampler' and line['non_pod_bytes'] > 0 for line in lines)
    assert lines[0]['t'] < lines[1]['t'] < lines[2]['t']
    assert 'nodealloc_history_samples 3\n' in (tmp_path / 'nodealloc.prom').read_text()


def run_and_rusage(argv):
    """Run ``argv`` to its end; its exit status and the CPU time the kernel charged it, in ns."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={'PATH': os.environ['PATH']})
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, int((usage.ru_utime + usage.ru_stime) * 1e9)


def test_the_samplers_own_cpu_is_what_the_kernel_charged_its_runs(tmp_path):
    # As the timer's unit runs it (python3 -I -S), twice, a little over a second apart (a shorter period is sampled).
    script = install_sampler(tmp_path)
    state = tmp_path / 'state.json'
    argv = [sys.executable, '-I', '-S', str(script), '--history', str(tmp_path / 'history.jsonl'), '--state', str(state),
            '--textfile', str(tmp_path / 'nodealloc.prom'), '--sample-seconds', '0.2']
    rc, first_charged = run_and_rusage(argv)
    assert rc == 0
    first = json.loads(state.read_text())['cpu']
    # What the run read of its own CPU at its end lies under what the kernel charged it in all (the state's write
    # and the interpreter's exit come after), and is most of it.
    assert 0.5 * first_charged < first['own_end_ns'] <= first_charged
    time.sleep(1.2)
    rc, second_charged = run_and_rusage(argv)
    assert rc == 0
    second = json.loads(state.read_text())['cpu']
    assert second['own_ns'] < second_charged
    left_out_ns = first['own_end_ns'] - first['own_ns'] + second['own_ns']
    assert 0 < left_out_ns < first_charged + second_charged
    metrics = dict(line.rsplit(' ', 1) for line in (tmp_path / 'nodealloc.prom').read_text().splitlines()
                   if not line.startswith('#'))
    recorded = json.loads((tmp_path / 'history.jsonl').read_text().splitlines()[-1])
    expected_m = round(1000 * left_out_ns / ((second['time'] - first['time']) * 1e9))
    # All of it left out, unless the node's non-pod CPU was smaller still (then all of that, and 0 remains).
    sampler_m = round(float(metrics['nodealloc_sampler_cpu_cores']) * 1000)
    # (Within 1m: the module rounds the period to the millisecond.)
    assert abs(sampler_m - expected_m) <= 1 or (recorded['non_pod_millicores'] == 0 and sampler_m < expected_m), (
        sampler_m, expected_m)
    print('sampler runs: %.0f ms and %.0f ms of CPU, %dm of the period left out' % (
        first_charged / 1e6, second_charged / 1e6, sampler_m))


def test_a_run_while_a_step_holds_the_node_lock_records_nothing_and_succeeds(tmp_path):
    # The unit's ExecStart exits 0 (no failed unit, no alert) and says why nothing was recorded.
    script = install_sampler(tmp_path)
    step = tmp_path / 'step'
    step.mkdir()
    argv = [sys.executable, '-I', '-S', str(script), '--history', str(tmp_path / 'history.jsonl'),
            '--state', str(tmp_path / 'state.json'), '--textfile', str(tmp_path / 'nodealloc.prom'),
            '--sample-seconds', '0.2', '--step-dir', str(step)]
    with exclusive_flock(step):
        during = subprocess.run(argv, capture_output=True, text=True, check=False, env={'PATH': os.environ['PATH']})
    assert during.returncode == 0, during.stderr
    assert 'not recorded: a nodealloc step holds the node lock' in during.stderr
    assert not (tmp_path / 'history.jsonl').exists() or (tmp_path / 'history.jsonl').read_text() == ''
    after = subprocess.run(argv, capture_output=True, text=True, check=False, env={'PATH': os.environ['PATH']})
    assert after.returncode == 0, after.stderr
    assert len((tmp_path / 'history.jsonl').read_text().splitlines()) == 1
