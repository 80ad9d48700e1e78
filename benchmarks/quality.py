"""Replay node traces through every reservation policy: exposure to a global OOM, waste, restarts.

Usage: python benchmarks/quality.py [--json] [--markdown] [--live-seconds N] [--days D]

Traces:
  (a) live: recorded on this machine by running real workloads in real cgroup v1 groups (a
      system.slice service whose memory grows with the pod count, pods that allocate, spikes)
      and measuring with the collection's own facts gathering, one reading a second; each
      reading is replayed as a 5-minute sample (needs root and cgroup v1; skipped otherwise);
  (b) generated: node sizes 4-256 GiB and 10-250 pods (leaving out pairings whose non-pod
      peak alone would pass 40 % of the node's memory, like 4 GiB with 110 pods), 5-minute
      samples over --days days.
      Non-pod memory = base + pods x per-pod growth + daily cycle + spikes. The per-pod growth
      is drawn between the two figures vendors publish for kubelet/runtime memory per pod:
      11 MiB (EKS bootstrap, `11 * max_pods + 255`) and 20 MiB (AKS 1.29+, `20 MB * max_pods
      + 50 MB`); the base between 255 MiB (the floor every vendor uses) and 2% of memory;
      spikes (image pulls, log rotation, node-problem-detector) add 100-400 MiB for 5-20 min.

Policies: measured (this collection's settings: peak over 7 days + 10 % headroom, 24 h
stabilization for decreases, 10 %/64 MiB change threshold), poc-instantaneous (the PoC:
reserve the current reading, restart on every difference), and every vendor formula.

Per policy: exposure_samples (non-pod usage above kubeReserved + systemReserved: pods filling
their cgroup limit would push the node into a global OOM), exposure_beyond_eviction_samples
(above reserved + hard eviction), waste_gib_hours (reserved but unused), changes (kubelet restarts).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, '.build'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import (  # noqa: E402
    _decision, _formulas, _quantity, _recommend)

MIB, GIB = 1 << 20, 1 << 30
STEP_SECONDS = 300
WINDOW_SECONDS = 7 * 86400
STABILIZATION_SECONDS = 86400
EVICTION_BYTES = 100 * MIB


def generated_traces(days, seed=20261122):
    rng = random.Random(seed)
    traces = []
    for size_gib in (4, 16, 64, 256):
        for pods in (10, 50, 110, 250):
            per_pod = rng.uniform(11, 20) * MIB
            base = max(255 * MIB, rng.uniform(0.5, 1.0) * 0.02 * size_gib * GIB + 255 * MIB)
            if base + pods * 20 * MIB + 400 * MIB > 0.4 * size_gib * GIB:
                continue  # a node this small cannot hold this many pods: their daemons alone would fill it
            samples, spike_left, spike = [], 0, 0
            for step in range(days * 86400 // STEP_SECONDS):
                hour = (step * STEP_SECONDS / 3600.0) % 24
                churn = pods * per_pod * (0.85 + 0.15 * (1 if 8 <= hour <= 20 else 0))
                if spike_left == 0 and rng.random() < 0.01:
                    spike_left, spike = rng.randint(1, 4), rng.uniform(100, 400) * MIB
                extra = spike if spike_left > 0 else 0
                spike_left = max(0, spike_left - 1)
                usage = base + churn + extra + rng.gauss(0, 10 * MIB)
                samples.append({'non_pod_bytes': int(max(0, usage)),
                                'non_pod_millicores': int(max(0, 50 + pods * 2 + rng.gauss(0, 20)))})
            traces.append({'name': 'generated %dGiB %dpods' % (size_gib, pods), 'capacity_bytes': size_gib * GIB,
                           'cpus': max(2, size_gib // 4), 'pods': pods, 'samples': samples})
    return traces


def live_trace(seconds):
    """Real workloads in real cgroups, measured with the collection's gatherer once a second."""
    from helpers import cgroups_v1
    from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts
    if not cgroups_v1.v1_available():
        return None
    tree = cgroups_v1.CgroupTree()
    samples = []
    try:
        tree.make('kubepods.slice')
        for second in range(seconds):
            if second % 5 == 0:  # a new pod, and the runtime grows with it
                tree.spawn('kubepods.slice/kubepods-besteffort.slice/pod%d.slice' % second, alloc_mib=20)
                tree.spawn('system.slice/containerd.service', alloc_mib=12, program='containerd')
            if second % 17 == 8:  # a spike outside the pods, gone a few seconds later
                spike = tree.spawn('system.slice/spike.service', alloc_mib=150)
            elif second % 17 == 12 and 'spike' in locals():
                spike.kill()
            facts = _facts.gather({'sample_seconds': 0.5, 'history': False})
            samples.append({'non_pod_bytes': max(0, facts['memory']['non_pod_bytes']),
                            'non_pod_millicores': facts['cpu']['non_pod_millicores']})
    finally:
        tree.cleanup()
    meminfo_total = _facts._procfs.read_meminfo()['MemTotal']
    return {'name': 'live on this machine (%d readings)' % len(samples), 'capacity_bytes': meminfo_total,
            'cpus': os.cpu_count() or 1, 'pods': seconds // 5, 'samples': samples}


def _total(reserved):
    return (_quantity.quantity_value(_quantity.parse_quantity(reserved['kube_reserved']['memory']))
            + _quantity.quantity_value(_quantity.parse_quantity(reserved['system_reserved']['memory'])))


def replay_measured(trace):
    """The measured policy as the role runs it at every sample, with the history it would have."""
    window = collections.deque()   # (t, bytes) kept in decreasing order of bytes: sliding max
    recent = collections.deque()
    cpu_window = collections.deque()
    current = None
    reserved_series, changes = [], 0
    first_t = 0
    for index, sample in enumerate(trace['samples']):
        t = index * STEP_SECONDS
        for queue, value, horizon in ((window, sample['non_pod_bytes'], WINDOW_SECONDS),
                                      (recent, sample['non_pod_bytes'], STABILIZATION_SECONDS),
                                      (cpu_window, sample['non_pod_millicores'], WINDOW_SECONDS)):
            while queue and queue[-1][1] <= value:
                queue.pop()
            queue.append((t, value))
            while queue[0][0] < t - horizon:
                queue.popleft()
        reserved_series.append(_total(current) if current else 0)
        basis = {'samples': index + 1, 'span_seconds': t - first_t, 'percentile': 100.0,
                 'non_pod_bytes': max(window[0][1], recent[0][1]), 'non_pod_millicores': cpu_window[0][1],
                 'stabilization_seconds': STABILIZATION_SECONDS}
        measured = {'mem_total_bytes': trace['capacity_bytes'], 'mem_available_bytes': trace['capacity_bytes'] - sample['non_pod_bytes'],
                    'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0,
                    'capacity_millicores': trace['cpus'] * 1000, 'non_pod_millicores': sample['non_pod_millicores'],
                    'kube_components_millicores': 0}
        recommendation = _recommend.recommend(measured, None, None, basis, {})
        state = None if current is None else dict(current)
        if current is None or _decision.decide(state, recommendation, None, basis)['action'] != 'keep':
            if current is not None:
                changes += 1
            current = {'kube_reserved': recommendation['kube_reserved'],
                       'system_reserved': recommendation['system_reserved']}
        if index == 0:
            reserved_series[0] = _total(current)
    return reserved_series, changes


def replay_instantaneous(trace):
    """The PoC: reserve what is used now (rounded to MiB), restart on every difference."""
    reserved, series, changes = None, [], 0
    for sample in trace['samples']:
        series.append(reserved if reserved is not None else sample['non_pod_bytes'])
        now = -(-sample['non_pod_bytes'] // MIB) * MIB
        if reserved is not None and now != reserved:
            changes += 1
        reserved = now
    return series, changes


def replay_formula(trace, name):
    result = _formulas.FORMULAS[name](trace['capacity_bytes'], trace['cpus'], trace['pods'])
    return [result['reserved_memory_bytes']] * len(trace['samples']), 0, result['eviction_hard_memory_bytes']


def score(trace, reserved_series, eviction_bytes=EVICTION_BYTES):
    exposure = beyond = 0
    waste = 0.0
    for sample, reserved in zip(trace['samples'], reserved_series):
        usage = sample['non_pod_bytes']
        exposure += usage > reserved
        beyond += usage > reserved + eviction_bytes
        waste += max(0, reserved - usage) / GIB * STEP_SECONDS / 3600.0
    return exposure, beyond, waste


def run(traces):
    policies = collections.OrderedDict()
    names = ['measured', 'poc-instantaneous'] + list(_formulas.FORMULAS)
    for name in names:
        policies[name] = {'exposure_samples': 0, 'exposure_beyond_eviction_samples': 0, 'waste_gib_hours': 0.0,
                          'changes': 0, 'max_changes_per_day': 0.0}
    days_total = 0.0
    for trace in traces:
        days = len(trace['samples']) * STEP_SECONDS / 86400.0
        days_total += days
        for name in names:
            eviction = EVICTION_BYTES
            if name == 'measured':
                series, changes = replay_measured(trace)
            elif name == 'poc-instantaneous':
                series, changes = replay_instantaneous(trace)
            else:
                series, changes, eviction = replay_formula(trace, name)
            exposure, beyond, waste = score(trace, series, eviction)
            entry = policies[name]
            entry['exposure_samples'] += exposure
            entry['exposure_beyond_eviction_samples'] += beyond
            entry['waste_gib_hours'] += waste
            entry['changes'] += changes
            entry['max_changes_per_day'] = max(entry['max_changes_per_day'], changes / days)
    for entry in policies.values():
        entry['waste_gib_hours'] = round(entry['waste_gib_hours'], 1)
        entry['max_changes_per_day'] = round(entry['max_changes_per_day'], 2)
    return {'policies': policies, 'traces': len(traces), 'samples': sum(len(t['samples']) for t in traces),
            'trace_names': [t['name'] for t in traces]}


def markdown(result):
    lines = ['| policy | exposure samples | beyond eviction | waste (GiB·h) | changes | max changes/day |',
             '|---|---:|---:|---:|---:|---:|']
    for name, entry in result['policies'].items():
        lines.append('| %s | %d | %d | %.1f | %d | %.2f |'
                     % (name, entry['exposure_samples'], entry['exposure_beyond_eviction_samples'],
                        entry['waste_gib_hours'], entry['changes'], entry['max_changes_per_day']))
    return '\n'.join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--days', type=int, default=7)
    parser.add_argument('--live-seconds', type=int, default=60)
    args = parser.parse_args(argv)
    started = time.monotonic()
    traces = generated_traces(args.days)
    live = live_trace(args.live_seconds) if args.live_seconds > 0 else None
    if live:
        traces.insert(0, live)
    result = run(traces)
    result['seconds'] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.markdown:
        print(markdown(result))
    else:
        print('%d traces, %d samples, %.1f s' % (result['traces'], result['samples'], result['seconds']))
        print(markdown(result))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
