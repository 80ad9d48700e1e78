"""What one sampler run costs as the history grows: peak RSS and CPU per run, against baselines.

Usage: python benchmarks/sampler_cost.py [--json] [--lines 1000,10000,20000] [--runs 5]

For each history size, writes that many valid samples (one a minute, ending now), lets the sampler
build its state once, then starts it ``--runs`` times as its systemd service does (a fresh
python3 process each) and reports the median peak RSS (ru_maxrss) and CPU (user + system) of a
run. Baselines measured in the same run, the same way: ``python3 -c pass`` (the interpreter alone)
and a process that reads the history file once. Targets: 20 MiB and 50 ms per run, flat.
Measures, asserts nothing (the figures depend on the machine and its load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
SAMPLER = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')
BUILD = os.path.join(ROOT, '.build')
# As under systemd: bytecode is written on the first run and reused (a test runner's PYTHONDONTWRITEBYTECODE is not).
ENV = dict({k: v for k, v in os.environ.items() if k != 'PYTHONDONTWRITEBYTECODE'}, PYTHONPATH=BUILD)


def child_cost(argv):
    """(peak RSS KiB, CPU seconds) of one child process, from its own rusage (wait4)."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=ENV)
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, argv)
    return usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def median_cost(argv, runs):
    costs = [child_cost(argv) for _run in range(runs)]
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


def measure(sizes, runs):
    rows = []
    rss_ru_maxrss_note = 'ru_maxrss and ru_utime+ru_stime of each child, from wait4'
    with tempfile.TemporaryDirectory() as scratch:
        for lines in sizes:
            history = os.path.join(scratch, 'history-%d.jsonl' % lines)
            state = os.path.join(scratch, 'state-%d.json' % lines)
            write_history(history, lines)
            argv = [sys.executable, SAMPLER, '--history', history, '--state', state, '--decision', os.path.join(scratch, 'none'),
                    '--textfile', os.path.join(scratch, 'nodealloc.prom'), '--sample-seconds', '0']
            # The first run builds the state and, as on a node, leaves the module_utils bytecode behind.
            subprocess.run(argv, check=True, capture_output=True, env=ENV)
            pass_rss, pass_cpu = median_cost([sys.executable, '-c', 'pass'], runs)
            read_rss, read_cpu = median_cost([sys.executable, '-c', 'open(%r, "rb").read()' % history], runs)
            rss, cpu = median_cost(argv, runs)
            rows.append({'lines': lines, 'sampler_peak_rss_mib': rss, 'sampler_cpu_ms': cpu,
                         'python_pass_rss_mib': pass_rss, 'python_pass_cpu_ms': pass_cpu,
                         'read_file_rss_mib': read_rss, 'read_file_cpu_ms': read_cpu,
                         'cpu_ratio_to_python_pass': round(cpu / pass_cpu, 2) if pass_cpu else None,
                         'rss_ratio_to_python_pass': round(rss / pass_rss, 2) if pass_rss else None})
    return {'name': 'sampler_cost', 'runs': runs, 'rss_target_mib': 20, 'cpu_target_ms': 50,
            'note': rss_ru_maxrss_note, 'rows': rows,
            'flat_cpu_ratio_largest_to_smallest': round(rows[-1]['sampler_cpu_ms'] / rows[0]['sampler_cpu_ms'], 2)
            if rows and rows[0]['sampler_cpu_ms'] else None}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--lines', default='1000,10000,20000')
    parser.add_argument('--runs', type=int, default=5)
    args = parser.parse_args(argv)
    result = measure([int(n) for n in args.lines.split(',')], args.runs)
    if args.json:
        print(json.dumps(result))
    else:
        print('lines  sampler MiB  sampler ms  python-pass MiB  ms  read-file MiB  ms')
        for row in result['rows']:
            print('%5d  %11.1f  %10.1f  %15.1f  %4.1f  %13.1f  %4.1f' % (
                row['lines'], row['sampler_peak_rss_mib'], row['sampler_cpu_ms'], row['python_pass_rss_mib'],
                row['python_pass_cpu_ms'], row['read_file_rss_mib'], row['read_file_cpu_ms']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
