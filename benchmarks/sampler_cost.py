"""What one sampler run costs as the history grows: peak RSS and CPU per run, against baselines.

Usage: python benchmarks/sampler_cost.py [--json] [--lines 1000,10000,20000] [--runs 5] [--python /usr/bin/python3]

For each history size, writes that many valid samples (one a minute, ending now), lets the sampler
build its state once, then starts it ``--runs`` times as its systemd service does: the unit's
ExecStart rendered at the role's defaults (interpreter, flags, window, percentile), the script
installed beside its module_utils as the role installs them, a fresh process each. Reports the
median peak RSS (ru_maxrss) and CPU (user + system) of a run. Baselines measured in the same run,
the same way, with the unit's interpreter and flags: ``python3 -c pass`` (the interpreter's
start-up alone, part of every run's CPU) and a process that reads the history file once. Linux
counts the spawning process's RSS in a child's ru_maxrss, so the runs are spawned by a bare
interpreter of their own: the ``python3 -c pass`` row is that floor, the interpreter's own RSS.
Targets: 20 MiB and 50 ms per run, flat. Measures, asserts nothing (the figures depend on the
machine and its load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _installer
from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
SAMPLER = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')
# As under systemd: bytecode is written on the first run and reused (a test runner's PYTHONDONTWRITEBYTECODE is not).
ENV = {k: v for k, v in os.environ.items() if k != 'PYTHONDONTWRITEBYTECODE'}


def unit_argv(python, sampler_dir, scratch, lines):
    """The unit's ExecStart at the role's defaults, with its files in ``scratch`` and ``python`` for its interpreter.

    ``--sample-seconds 0``: these runs follow each other within a second (a timer's are a minute apart),
    so a run may find the previous CPU snapshot too recent and sample instead; the unit's 10 s would sleep.
    """
    argv = sampler_unit.exec_start_argv(reservations_sampler_dir=sampler_dir)
    files = {'--history': 'history-%d.jsonl' % lines, '--state': 'state-%d.json' % lines, '--decision': 'none.json',
             '--textfile': 'nodealloc.prom'}
    for index, flag in enumerate(argv[:-1]):
        if flag in files:
            argv[index + 1] = os.path.join(scratch, files[flag])
        elif flag == '--sample-seconds':
            argv[index + 1] = '0'
    return [python] + argv[1:]


# Spawns the runs and reports each one's "peak RSS KiB, CPU seconds" from wait4. A process of its own: Linux
# carries the spawning process's RSS across exec into the child's ru_maxrss, and this benchmark's (with yaml
# and jinja2 loaded) is above the sampler's; this one's, the interpreter's alone, is below it.
SPAWNER = """
import os, sys
runs, argv = int(sys.argv[1]), sys.argv[2:]
quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
for _run in range(runs):
    _pid, status, usage = os.wait4(os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet), 0)
    if os.waitstatus_to_exitcode(status):
        sys.exit('exit status %d: %s' % (os.waitstatus_to_exitcode(status), ' '.join(argv)))
    print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
"""


def median_cost(argv, runs):
    """Median (peak RSS MiB, CPU ms) of ``runs`` runs of ``argv``."""
    output = subprocess.run([argv[0], '-I', '-S', '-c', SPAWNER, str(runs)] + argv, env=ENV, check=True,
                            capture_output=True, text=True).stdout
    costs = [(int(rss), float(cpu)) for rss, cpu in (line.split() for line in output.splitlines())]
    return (round(statistics.median(c[0] for c in costs) / 1024.0, 1),
            round(statistics.median(c[1] for c in costs) * 1000, 1))


def write_history(path, lines):
    now = time.time()
    with open(path, 'w') as handle:
        for index in range(lines):
            handle.write(json.dumps({'t': round(now - (lines - index) * 60, 3), 'non_pod_bytes': (600 + index % 200) << 20,
                                     'non_pod_millicores': 100 + index % 50, 'kube_components_bytes': 150 << 20,
                                     'kubepods_bytes': 2 << 30, 'source': 'sampler'}, sort_keys=True,
                                    separators=(',', ':')) + '\n')


def measure(sizes, runs, python):
    rows = []
    rss_ru_maxrss_note = 'ru_maxrss and ru_utime+ru_stime of each child, from wait4'
    with tempfile.TemporaryDirectory() as scratch:
        # Installed as the role installs it: the script beside the import closure of its module_utils.
        sampler_dir = os.path.join(scratch, 'lib')
        _installer.install(sampler_dir, _installer.sources())
        shutil.copy(SAMPLER, os.path.join(sampler_dir, 'nodealloc-sampler.py'))
        for lines in sizes:
            history = os.path.join(scratch, 'history-%d.jsonl' % lines)
            write_history(history, lines)
            argv = unit_argv(python, sampler_dir, scratch, lines)
            # The first run builds the state and, as on a node, leaves the module_utils bytecode behind.
            subprocess.run(argv, check=True, capture_output=True, env=ENV)
            interpreter = argv[:argv.index(os.path.join(sampler_dir, 'nodealloc-sampler.py'))]
            pass_rss, pass_cpu = median_cost(interpreter + ['-c', 'pass'], runs)
            read_rss, read_cpu = median_cost(interpreter + ['-c', 'open(%r, "rb").read()' % history], runs)
            rss, cpu = median_cost(argv, runs)
            rows.append({'lines': lines, 'argv': argv, 'sampler_peak_rss_mib': rss, 'sampler_cpu_ms': cpu,
                         'python_pass_rss_mib': pass_rss, 'python_pass_cpu_ms': pass_cpu,
                         'read_file_rss_mib': read_rss, 'read_file_cpu_ms': read_cpu,
                         'cpu_ratio_to_python_pass': round(cpu / pass_cpu, 2) if pass_cpu else None,
                         'rss_ratio_to_python_pass': round(rss / pass_rss, 2) if pass_rss else None})
    return {'name': 'sampler_cost', 'runs': runs, 'python': python, 'rss_target_mib': 20, 'cpu_target_ms': 50,
            'note': rss_ru_maxrss_note, 'rows': rows,
            'flat_cpu_ratio_largest_to_smallest': round(rows[-1]['sampler_cpu_ms'] / rows[0]['sampler_cpu_ms'], 2)
            if rows and rows[0]['sampler_cpu_ms'] else None}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--lines', default='1000,10000,20000')
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--python', default='/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable,
                        help="the interpreter (default: the systemd unit's /usr/bin/python3 where it exists)")
    args = parser.parse_args(argv)
    result = measure([int(n) for n in args.lines.split(',')], args.runs, args.python)
    if args.json:
        print(json.dumps(result))
    else:
        print('each run: %s' % ' '.join(result['rows'][0]['argv']) if result['rows'] else '')
        print('lines  sampler MiB  sampler ms  python-pass MiB  ms  read-file MiB  ms')
        for row in result['rows']:
            print('%5d  %11.1f  %10.1f  %15.1f  %4.1f  %13.1f  %4.1f' % (
                row['lines'], row['sampler_peak_rss_mib'], row['sampler_cpu_ms'], row['python_pass_rss_mib'],
                row['python_pass_cpu_ms'], row['read_file_rss_mib'], row['read_file_cpu_ms']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
