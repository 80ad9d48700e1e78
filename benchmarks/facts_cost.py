"""What measuring a node costs: node_reservation_facts' work against reading the same kernel files.

Usage: python benchmarks/facts_cost.py [--json] [--pods 10,110,1000] [--repeat N]

For each pod count, creates that many real pod cgroups (v1, systemd layout) under kubepods.slice,
then times, in the same run and alternating, (a) the collection's gathering with no CPU sampling
wait (``_gather.gather``, sample_seconds 0, no history) and (b) a baseline that opens and reads, in the same order,
exactly the files and directories one gathering opened and listed on this node (recorded with an audit hook,
``sys.addaudithook``: Python's ``open``, ``os.listdir`` and ``os.scandir`` events), parsing nothing, with Python's
``open`` (the ratio a/b, the figure the target is set on); and (c) the same reading with the reader gathering uses,
``_procfs.read_bytes`` (``same_reader_ratio``, a/c: what the module's own work costs beyond its reading, now that
it reads with four system calls a file where ``open`` makes nine). For continuity with earlier figures it also reports the ratio
against the earlier hand-kept list (``listed_baseline``: mountinfo, meminfo, stat twice, the kubepods and system.slice
files, each pod's memory limit and CPU shares, every /proc/<pid>/cmdline once), which no longer names every file
gathering reads (zoneinfo, the PSI files, swaps, the tool processes' status and smaps_rollup, ...). Reports the
median ratios and the peak RSS of a fresh process that imports the collection and gathers once. The sampler's cost
is benchmarks/sampler_cost.py's. Needs root and cgroup v1 (as the integration tests).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, '.build'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs  # noqa: E402
from helpers import cgroups_v1  # noqa: E402


class Recorder:
    """What one gathering opened for reading and listed, in order, from Python's audit events (an audit hook cannot
    be removed: it records only while ``recording``)."""

    def __init__(self):
        self.recording = False
        self.reads = []
        sys.addaudithook(self._event)

    def _event(self, event, args):
        if not self.recording:
            return
        if event == 'open':
            path, mode, flags = args
            if not isinstance(path, (str, bytes)):
                return  # an fd: opened by path before
            reading = ('r' in mode and '+' not in mode) if mode else (flags & os.O_ACCMODE) == os.O_RDONLY
            if reading:
                self.reads.append(('read', path))
        elif event in ('os.listdir', 'os.scandir'):
            self.reads.append(('list', args[0] if args[0] is not None else '.'))

    def record(self, function):
        self.reads = []
        self.recording = True
        try:
            function()
        finally:
            self.recording = False
        return list(self.reads)


def replay(reads):
    """The recorded gathering's reading alone: every file read whole in binary (Python's open), every directory
    listed."""
    for kind, path in reads:
        try:
            if kind == 'read':
                with open(path, 'rb') as handle:
                    handle.read()
            else:
                os.listdir(path)
        except OSError:
            pass  # a process gone since the recording


def replay_same_reader(reads):
    """The same reading with the reader gathering uses (_procfs.read_bytes: os.open and os.read, four system calls a
    file where open() makes nine): what gathering costs beyond it is its own work alone."""
    for kind, path in reads:
        try:
            if kind == 'read':
                _procfs.read_bytes(path)
            else:
                os.listdir(path)
        except OSError:
            pass


def listed_baseline():
    """Read, once each, the kernel files of the earlier hand-kept list: nothing parsed beyond what reading needs."""
    paths = ['/proc/self/mountinfo', '/proc/meminfo', '/proc/stat', '/proc/stat']
    for controller, names in (('memory', ('memory.usage_in_bytes', 'memory.stat')), ('cpuacct', ('cpuacct.usage',))):
        for group in ('kubepods.slice', 'system.slice'):
            for name in names:
                path = os.path.join('/sys/fs/cgroup', controller, group, name)
                if os.path.exists(path):
                    paths.append(path)
    # The overcommit audit (issue 15) reads each pod's memory limit and CPU shares: one read each.
    kubepods = '/sys/fs/cgroup/memory/kubepods.slice'
    for qos_dir in [kubepods] + [os.path.join(kubepods, n) for n in os.listdir(kubepods) if n.endswith('.slice')]:
        for pod in os.listdir(qos_dir):
            if '-pod' in pod and pod.endswith('.slice'):
                paths.append(os.path.join(qos_dir, pod, 'memory.limit_in_bytes'))
                paths.append(os.path.join(qos_dir.replace('/memory/', '/cpu/'), pod, 'cpu.shares'))
    for path in paths:
        try:
            with open(path, 'rb') as handle:
                handle.read()
        except FileNotFoundError:
            pass
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                    handle.read()
            except OSError:
                pass


def gather():
    _gather.gather({'sample_seconds': 0, 'history': False}, sleep=lambda _s: None)


def timed(function, repeat):
    samples = []
    for _index in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def peak_rss_kib(code):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, '-c', code], check=True, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, '.build')))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_maxrss, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def measure(pod_counts, repeat):
    results = []
    recorder = Recorder()
    for pods in pod_counts:
        tree = cgroups_v1.CgroupTree()
        try:
            tree.make('system.slice')
            for index in range(pods):
                tree.make('kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%05d.slice' % index)
            gather()  # warm caches and imports for every side
            reads = recorder.record(gather)

            def baseline():
                replay(reads)

            def same_reader():
                replay_same_reader(reads)

            baseline()
            same_reader()
            listed_baseline()
            gather_seconds, baseline_seconds, same_reader_seconds, listed_seconds = [], [], [], []
            for _round in range(5):
                gather_seconds.append(timed(gather, repeat))
                baseline_seconds.append(timed(baseline, repeat))
                same_reader_seconds.append(timed(same_reader, repeat))
                listed_seconds.append(timed(listed_baseline, repeat))
            rss_kib, cpu_seconds = peak_rss_kib(
                'from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather; '
                '_gather.gather({"sample_seconds": 0, "history": False})')
        finally:
            tree.cleanup()
        results.append({'pods': pods, 'gather_ms': round(statistics.median(gather_seconds) * 1000, 3),
                        'baseline_ms': round(statistics.median(baseline_seconds) * 1000, 3),
                        'ratio': round(statistics.median(gather_seconds) / statistics.median(baseline_seconds), 2),
                        'files_read': sum(1 for kind, _path in reads if kind == 'read'),
                        'directories_listed': sum(1 for kind, _path in reads if kind == 'list'),
                        'same_reader_baseline_ms': round(statistics.median(same_reader_seconds) * 1000, 3),
                        'same_reader_ratio': round(statistics.median(gather_seconds)
                                                   / statistics.median(same_reader_seconds), 2),
                        'listed_baseline_ms': round(statistics.median(listed_seconds) * 1000, 3),
                        'listed_ratio': round(statistics.median(gather_seconds) / statistics.median(listed_seconds), 2),
                        'peak_rss_mib': round(rss_kib / 1024.0, 1), 'process_cpu_seconds': round(cpu_seconds, 3)})
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--pods', default='10,110,1000')
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args(argv)
    if not cgroups_v1.v1_available():
        print(json.dumps({'name': 'facts_cost', 'skipped': 'needs root and cgroup v1'}))
        return 0
    rows = measure([int(p) for p in args.pods.split(',')], args.repeat)
    result = {'name': 'facts_cost', 'ratio': max(r['ratio'] for r in rows), 'target': 2.0, 'rows': rows,
              'same_reader_ratio': max(r['same_reader_ratio'] for r in rows),
              'peak_rss_mib': max(r['peak_rss_mib'] for r in rows), 'rss_target_mib': 50}
    if args.json:
        print(json.dumps(result))
    else:
        print('pods  files  dirs  gather ms  baseline ms  ratio  same reader ms  ratio  listed ms  listed ratio  '
              'peak RSS MiB')
        for row in rows:
            print('%4d  %5d  %4d  %9.3f  %11.3f  %5.2f  %13.3f  %5.2f  %9.3f  %12.2f  %12.1f'
                  % (row['pods'], row['files_read'], row['directories_listed'], row['gather_ms'], row['baseline_ms'],
                     row['ratio'], row['same_reader_baseline_ms'], row['same_reader_ratio'],
                     row['listed_baseline_ms'], row['listed_ratio'], row['peak_rss_mib']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
