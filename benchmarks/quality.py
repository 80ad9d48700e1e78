"""Replay node traces through every reservation policy: exposure to a global OOM, waste, kubelet restarts.

Usage: python benchmarks/quality.py [--json|--markdown] [--days D] [--seed S[,S...]] [--family F | --traces DIR]
                                    [--sampler-every SECONDS] [--apply-every DURATION] [--apply-on-near DURATION]
                                    [--[no-]pool-class] [--option NAME=VALUE ...] [--write-traces DIR]
                                    [--write-decisions DIR] [--[no-]simple]

Traces (docs/benchmarks.md, "Quality"):
  generated (default): one node per size in CONFIGS, a point every 5 s over --days days, seeded by --seed.
      Non-pod memory = base + pods' runtime memory (pods start and stop; each pod's runtime memory is
      released some minutes after the pod goes) + a slow runtime leak reset when the runtime restarts
      + log bursts of Pareto-distributed size + page cache and slab that grow and are reclaimed + noise.
  --family shapes|incidents|weekly: benchmarks/trace_families.py, 8 nodes of 4-256 GiB, a point every 10 s over
      --days (10) days, written apart from this generator (issue 29's first family and its held-out second, issue
      38's fourth: fixed-size bursts, quiet weekends, steps on flat nodes, a flat and a climbing node of one class).
  --traces DIR: every *.jsonl in DIR, a node's own history: a first line
      {"node": {"mem_total_bytes": N, "cpus": N, "max_pods": N[, "eviction_hard_bytes": N]}}, then one sample a
      line in the history file's format: {"t": unix seconds, "non_pod_bytes": N, "non_pod_millicores": N[,
      "kubepods_bytes": N]}.

Policies:
  measured: the collection's own code (_headroom.basis, _recommend.recommend, _decision.decide, with
      the module's default options, or those --option sets, as -e reservations_NAME=VALUE would on a role run);
      the sampler records a reading every --sampler-every seconds (60), and
      what the role decides takes effect only at each run, every --apply-every (24h), starting at t = 0
      with one reading and no history;
  measured with --apply-on-near D: the same, and a run as soon as the sampler has flagged the node's memory
      near its reservation (_headroom.near_reservation) at every reading for D, as a job the
      NodeallocNearReservation alert (for: 15m) starts would;
  measured (default --pool-class): the same, replayed as a fleet: traces of one node class (memory size, CPU count)
      pass each other their records at each run, and a young node borrows its peers' jumps (_headroom.pool_jumps),
      as the role does by default;
  poc: the PoC as published: every 5 s reserve the reading + 100Mi, restarting the kubelet when that
      differs from what is reserved by more than 100Mi;
  every vendor formula (docs/formulas.md), fixed for the trace;
  clairvoyant-daily: each day exactly that day's realised peak (the least waste of any once-a-day policy with
      no exposure), best-constant: the trace's peak all along (the best constant per node in hindsight);
  simple f=F W=Wd (unless --no-simple): each run reserve P_W + max(100Mi, F x P_W), P_W the largest sampler
      reading of the last W days, at the measured policy's run times, GKE's formula the floor of the first run
      (the measured policy's cold-start prior); F in SIMPLE_FRACTIONS, W in SIMPLE_WINDOW_DAYS;
  fixed m=M W=Wd (unless --no-simple): the same, but P_W + M, M a fixed size in MiB (FIXED_MARGINS_MIB, 128 MiB to
      1 GiB) whatever the node's size, W in FIXED_WINDOW_DAYS (3, 7).

Scored on every point of the trace (5 s for generated traces): a point is exposed when non-pod memory
is above kubeReserved + systemReserved memory (pods filling their cgroup limit would then push the node
into a global OOM), dangerous when it is above that by more than the node's hard memory.available
threshold (100Mi unless the node line gives eviction_hard_bytes). Per policy: exposed and dangerous, each
with warmup (the trace's first 24 h) and after_warmup: points, events, mib_minutes, worst_mib; and
exposure_samples, exposure_after_warmup, exposure_events, worst_shortfall_bytes, shortfall_mib_minutes (the
exposed tier over the whole trace), waste_gib_hours and waste_after_warmup_gib_hours (reserved but unused),
changes (kubelet restarts, the first application included), max_changes_per_day; with --apply-on-near also
alert_runs (runs the alert started, whether they restarted the kubelet or not); excess_mib_hours and
excess_after_warmup_mib_hours (reserved beyond that day's realised peak, the clairvoyant daily bound's own
reservation, MiB·h: the waste an operator could have had back). ``versus`` in the JSON: the measured policy
against the simple-rule curve, the best fixed-size rule, the clairvoyant bound and GKE (quality.versus);
``operator``: per policy the mean excess over the clairvoyant daily bound in MiB per node (excess MiB·h over
node-hours, after warm-up and over the whole trace), dangerous points after and during warm-up, changes per node-day
(quality.operator).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import glob
import json
import math
import os
import random
import re
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, '.build'))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _defaults, _duration, _node_allocatable, _quantity, _vendor_formulas)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _class_model, _decision, _headroom, _model_template, _recommend)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_families  # noqa: E402  (benchmarks/trace_families.py: the two families written apart from this generator)

MIB, GIB = 1 << 20, 1 << 30
DAY = 86400
WARMUP_SECONDS = DAY
POC_PERIOD_SECONDS = 5
POC_MARGIN_BYTES = 100 * MIB
POC_RESTART_THRESHOLD_BYTES = 100 * MIB
GENERATED_STEP_SECONDS = 5
# The kubelet's hard memory.available threshold when the node sets none (pkg/kubelet/eviction/defaults_linux.go):
# non-pod memory past the reservation by more than this is past what eviction can still give back.
DEFAULT_EVICTION_HARD_BYTES = _defaults.EVICTION_HARD_MEMORY_AVAILABLE_BYTES
# The simple-rule baseline (issue 29): each run reserve P_W + max(m, f x P_W), P_W the largest sampler reading
# of the last W days; swept over f and W, m fixed at the kubelet's default eviction margin.
SIMPLE_FRACTIONS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
SIMPLE_WINDOW_DAYS = (1, 3, 7)
SIMPLE_MIN_BYTES = 100 * MIB
# The fixed-size baseline (issue 38 item 4): each run reserve P_W + m, m a fixed number of bytes whatever the node's
# size, beside the percentage sweep above; m in MiB.
FIXED_MARGINS_MIB = (128, 256, 384, 512, 768, 1024)
FIXED_WINDOW_DAYS = (3, 7)
# The candidate policy (issue 29 item 4), shipped as the measured policy's defaults: the simple rule on the class's
# largest P_W, GKE's formula the first run's floor. f fraction, W window days (0: all history), m minimum headroom
# MiB, pool and prior 1 or 0. A few lines of its own, so tests/integration/test_quality_shipped_policy.py can check
# that the shipped code (replay_measured) reserves what this rule does.
CANDIDATE = {'f': 0.5, 'W': 3, 'm': 100, 'pool': 1, 'prior': 1}
# (memory GiB, CPUs, pods running on average)
CONFIGS = ((4, 2, 10), (8, 2, 20), (16, 4, 40), (32, 8, 60), (64, 16, 110), (128, 32, 110))


def _pareto(rng, scale, alpha, cap):
    return min(cap, scale / (1.0 - rng.random()) ** (1.0 / alpha))


def generated_trace(size_gib, cpus, pods_mean, days, rng):
    """One node's non-pod memory and CPU, a point every 5 s (and the log bursts' share of the memory)."""
    step = GENERATED_STEP_SECONDS
    points = days * DAY // step
    capacity = size_gib * GIB
    base = 200 * MIB + rng.uniform(0.005, 0.01) * capacity
    per_pod = rng.uniform(11, 20) * MIB
    leak_per_second = rng.uniform(0.5, 4) * MIB / 3600.0
    cache_cap = min(512 * MIB, rng.uniform(0.003, 0.01) * capacity)
    cache_growth = cache_cap / rng.uniform(0.5, 2.0) / DAY
    burst_cap = min(1 * GIB, 0.05 * capacity)
    pods = max(1, int(pods_mean * rng.uniform(0.6, 0.9)))
    releasing = []          # (time the runtime memory of a gone pod is released, bytes)
    leak = cache = 0.0
    next_runtime_restart = rng.uniform(1, 4) * DAY
    burst_left = burst = 0.0
    memory, cpu, bursts = [], [], []
    for index in range(points):
        now = index * step
        # Pod churn: about one start or stop a minute, drifting towards a daily-varying target.
        target = pods_mean * (0.8 + 0.4 * (1 if 8 <= (now / 3600.0) % 24 <= 20 else 0))
        if rng.random() < step / 60.0:
            if rng.random() < 0.5 + 0.1 * (1 if pods < target else -1):
                pods += 1
            elif pods > 1:
                pods -= 1
                releasing.append((now + rng.uniform(5, 30) * 60, per_pod))
        held = sum(amount for until, amount in releasing if until > now)
        releasing = [(until, amount) for until, amount in releasing if until > now]
        leak += leak_per_second * step
        if now >= next_runtime_restart:
            leak, next_runtime_restart = 0.0, now + rng.uniform(1, 4) * DAY
        cache = min(cache_cap, cache + cache_growth * step)
        if rng.random() < step / (3 * DAY):
            cache *= rng.uniform(0.2, 0.5)  # the kernel reclaims
        if burst_left <= 0 and rng.random() < step / (3 * 3600.0):
            burst, burst_left = _pareto(rng, 16 * MIB, 1.6, burst_cap), rng.expovariate(1 / 45.0) + step
        extra = burst if burst_left > 0 else 0.0
        burst_left -= step
        value = base + pods * per_pod + held + leak + cache + extra + rng.gauss(0, 4 * MIB)
        memory.append(int(max(0, value)))
        bursts.append(int(extra))
        cpu.append(int(max(0, 40 + pods * 3 + (250 if extra else 0) + rng.gauss(0, 15))))
    return {'name': 'generated %dGiB %dcpu %dpods' % (size_gib, cpus, pods_mean),
            'mem_total_bytes': capacity, 'cpus': cpus, 'max_pods': max(_defaults.MAX_PODS, pods_mean),
            't': [index * step for index in range(points)], 'non_pod_bytes': memory, 'non_pod_millicores': cpu,
            # What no node knows, for benchmarks/quality_bounds.py: the log-burst part of each point, and its cap.
            'log_burst_bytes': bursts, 'log_burst_cap_bytes': int(burst_cap)}


def generated_traces(days, seeds):
    traces = []
    for seed in seeds:
        rng = random.Random(seed)
        for size, cpus, pods in CONFIGS:
            trace = generated_trace(size, cpus, pods, days, rng)
            trace['name'] += ' seed %d' % seed
            traces.append(trace)
    return traces


# A class name in a trace's node line: what a Kubernetes label value may be (it names a node class there).
CLASS_NAME = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$')


class TraceError(ValueError):
    """A trace file that cannot be replayed (its first line is not the node's description)."""


def _node_line(path, line):
    try:
        node = json.loads(line)['node']
        described = {'mem_total_bytes': int(node['mem_total_bytes']), 'cpus': int(node['cpus']),
                     'max_pods': int(node.get('max_pods') or _defaults.MAX_PODS)}
        margin = node.get('eviction_hard_bytes')
        class_name = node.get('class')
    except (ValueError, TypeError, KeyError) as exc:
        raise TraceError('%s: the first line must be {"node": {"mem_total_bytes": N, "cpus": N, "max_pods": N}} (%s)'
                         % (path, exc)) from exc
    if min(described.values()) <= 0:
        raise TraceError('%s: mem_total_bytes, cpus and max_pods must be positive: %s' % (path, described))
    if margin is not None:
        if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
            raise TraceError('%s: eviction_hard_bytes must be a whole number of bytes, 0 or more: %r' % (path, margin))
        described['eviction_hard_bytes'] = margin
    if class_name is not None:
        if not isinstance(class_name, str) or not CLASS_NAME.match(class_name):
            raise TraceError('%s: class must be a name of 1-63 letters, digits, ".", "_" or "-": %r' % (path, class_name))
        described['node_class'] = class_name
    return described


def read_traces(directory):
    """Every *.jsonl in ``directory``: a node line, then history lines read as the module reads its history.

    Each sample line goes through _history_store.validate (the history file's own rules: the fields, finite,
    not negative, not more than the node has); a line it rejects, and a torn last line, are skipped and
    counted in the trace's ``skipped`` (with the first reasons), never replayed. A line without
    ``non_pod_millicores`` (or with null) counts as 0 millicores (only memory is scored).
    """
    traces = []
    for path in sorted(glob.glob(os.path.join(directory, '*.jsonl'))):
        with open(path, encoding='utf-8', errors='replace') as handle:
            node = _node_line(path, handle.readline())
            lines = handle.readlines()
        samples, reasons = [], []
        for number, line in enumerate(lines, 2):
            if not line.strip():
                continue
            if not line.endswith('\n'):
                reasons.append('line %d: torn (no newline)' % number)
                continue
            try:
                sample = json.loads(line)
            except ValueError as exc:
                sample, reason = None, 'not a sample (%s)' % exc
            else:
                if isinstance(sample, dict) and sample.get('non_pod_millicores') is None:
                    sample['non_pod_millicores'] = 0  # memory is what is scored; CPU may be left out or null
                reason = _history_store.validate(sample, float('inf'), node['mem_total_bytes'], node['cpus'] * 1000)
            if reason:
                reasons.append('line %d: %s' % (number, reason))
                continue
            samples.append(sample)
        if not samples:
            raise TraceError('%s: no valid sample line (%d skipped%s)'
                             % (path, len(reasons), ': ' + reasons[0] if reasons else ''))
        samples.sort(key=lambda s: s['t'])
        traces.append(dict(node, name=os.path.basename(path),
                           t=[s['t'] for s in samples], non_pod_bytes=[int(s['non_pod_bytes']) for s in samples],
                           non_pod_millicores=[int(s['non_pod_millicores']) for s in samples],
                           kubepods_bytes=[int(s.get('kubepods_bytes') or 0) for s in samples],
                           pods=[s.get('pods') for s in samples],
                           skipped={'lines': len(reasons), 'first': reasons[:5]}))
    return traces


def write_traces(traces, directory):
    os.makedirs(directory, exist_ok=True)
    for trace in traces:
        path = os.path.join(directory, trace['name'].replace(' ', '-') + '.jsonl')
        with open(path, 'w', encoding='utf-8') as handle:
            node = {key: trace[key] for key in ('mem_total_bytes', 'cpus', 'max_pods', 'eviction_hard_bytes')
                    if key in trace}
            if trace.get('node_class'):
                node['class'] = trace['node_class']
            handle.write(json.dumps({'node': node}) + '\n')
            pods = trace.get('pods') or [None] * len(trace['t'])
            for t, memory, cpu, count in zip(trace['t'], trace['non_pod_bytes'], trace['non_pod_millicores'], pods):
                line = {'t': t, 'non_pod_bytes': memory, 'non_pod_millicores': cpu}
                if count is not None:
                    line['pods'] = count
                handle.write(json.dumps(line) + '\n')


def module_defaults():
    """The module's own defaults, as the role passes them."""
    return {name: option['default'] for name, option in _option_specs.OPTIONS.items()
            if _option_specs.FACTS in option['modules']}


# The node's own business, not the policy's: where its files are, how long its CPU sample lasts, whether it records.
NODE_OPTIONS = ('sample_seconds', 'kubelet_config_path', 'history_path', 'record')


def replayed_options():
    """What --option may set: the options roles/reservations/tasks/measure.yml passes the facts module, but the node's."""
    with open(os.path.join(ROOT, 'roles', 'reservations', 'tasks', 'measure.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    passed = next(task['nodealloc.kubelet.node_reservation_facts'] for task in tasks
                  if 'nodealloc.kubelet.node_reservation_facts' in task)
    return tuple(name for name in passed if name not in NODE_OPTIONS)


REPLAYED_OPTIONS = replayed_options()


def _option_value(name, raw):
    """The value of option ``name`` from its text as -e would read it (YAML), of the option's type, or ValueError."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ValueError('%s: %r is not a value (%s)' % (name, raw, getattr(exc, 'problem', None) or exc)) from exc
    if value is None or value == '':
        raise ValueError('%s: a value is needed' % name)
    kind = _option_specs.OPTIONS[name]['type']
    if kind == 'bool':
        if not isinstance(value, bool):
            raise ValueError('%s: %r must be true or false' % (name, raw))
        return value
    if kind in ('int', 'float'):
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None or not math.isfinite(number):
            raise ValueError('%s: %r must be a number (%s)' % (name, raw, kind))
        if kind == 'int' and not number.is_integer():
            raise ValueError('%s: %r must be a whole number' % (name, raw))
        return int(number) if kind == 'int' else number
    if isinstance(value, (dict, list)):
        raise ValueError('%s: %r must be a single value' % (name, raw))
    return str(value)


def parse_option(text):
    """(name, value) of a replayed facts module option from NAME=VALUE (``REPLAYED_OPTIONS``), or ValueError."""
    name, equals, raw = text.partition('=')
    if not equals or name not in REPLAYED_OPTIONS:
        raise ValueError('%r: expected NAME=VALUE, NAME one of the options the replay uses: %s'
                         % (text, ', '.join(sorted(REPLAYED_OPTIONS))))
    value = _option_value(name, raw)
    reason = _option_specs.problem(name, value)
    if reason:
        raise ValueError('%s: %r %s' % (name, value, reason))
    return name, value


def _memory_total(reserved):
    return sum(_quantity.quantity_value(_quantity.parse_quantity(str(part.get('memory'))))
               for part in (reserved['kube_reserved'], reserved['system_reserved']) if part.get('memory') is not None)


def trace_class(trace):
    """The class a trace pools in: its node line's ``class``, else its size class (_headroom.node_class)."""
    if trace.get('node_class'):
        return ('name', trace['node_class'])
    return ('size',) + _headroom.node_class(trace['mem_total_bytes'], trace['cpus'])


def class_label(key):
    return key[1] if key[0] == 'name' else '%dgib-%dcpu' % key[1:]


class Fleet:
    """The traces replayed together (issue 45 item 6): one fleet whose daily runs fall at the same times for every
    node (every ``apply_every`` from the fleet's first reading), and what a node's class knows at any time: its live
    peers' jumps (pooled as the role pools them) and the class model over the live nodes of the class that read pods
    in the window (the records of the role's run). A node that joins later has its first run at its first reading,
    from what its class knows then (a node that boots from its class's template: ``classes.json``), and the fleet's
    runs after it."""

    def __init__(self, traces, sampler_every, apply_every, settings):
        self.traces = traces
        self.start = min(trace['t'][0] for trace in traces)
        self.apply_every = apply_every
        self.settings = settings
        self.window = _duration.parse_window(settings['history_window'])
        self.reaction = _duration.parse_window(settings['reaction_time'])
        self.stabilization = _duration.parse_window(settings['stabilization_window'])
        self.classes = [trace_class(trace) for trace in traces]
        self.readings = [[_reading(trace, index) for index in sampler_readings(trace, sampler_every)] for trace in traces]
        self.times = [[reading['t'] for reading in readings] for readings in self.readings]
        self._memo = {}

    def next_run(self, now):
        """The fleet's first daily run after ``now``."""
        return self.start + (math.floor((now - self.start) / self.apply_every) + 1) * self.apply_every

    def run_times(self):
        end = max(trace['t'][-1] for trace in self.traces)
        return [self.start + k * self.apply_every for k in range(int((end - self.start) // self.apply_every) + 1)]

    def members(self, key):
        return [index for index, other in enumerate(self.classes) if other == key]

    def window_readings(self, index, now):
        times = self.times[index]
        return self.readings[index][bisect.bisect_left(times, now - self.window):bisect.bisect_right(times, now)]

    def _basis(self, index, now):
        key = ('basis', index, now)
        if key not in self._memo:
            samples = self.window_readings(index, now)
            self._memo[key] = _headroom.basis(samples, now, float(self.settings['percentile']), self.stabilization,
                                              self.reaction) if samples else None
        return self._memo[key]

    def live(self, other, now):
        """Whether trace ``other`` is a node of the fleet at ``now`` (its first reading at or before, its last after):
        only those are in the role's run, and tell their class a record (class_peers)."""
        return self.traces[other]['t'][0] <= now <= self.traces[other]['t'][-1]

    def peer_jumps(self, index, now):
        """The jumps the class's other live nodes measured at ``now`` (each one's own, as its class record holds)."""
        return [self._basis(other, now)['jumps'] for other in self.members(self.classes[index])
                if other != index and self.live(other, now) and self._basis(other, now)]

    def model(self, key, now, own=None, index=None):
        """The class model at ``now`` over the pods profiles of the class's live nodes (``own`` for node ``index``),
        as the module fits it over the records of the nodes in its run (_gather.pool_with_class): a node gone from
        the fleet tells its class nothing more."""
        profiles = [] if own is None else [own]
        for other in self.members(key):
            if other != index and self.live(other, now) and self._basis(other, now):
                profiles.append(self._basis(other, now)['pods_profile'])
        max_pods = max(self.traces[other]['max_pods'] for other in self.members(key)) if index is None \
            else self.traces[index]['max_pods']
        return _class_model.fit(profiles, max_pods)

    def classes_json(self):
        """{class: [{t, model, template}]} at every daily run of the fleet (``--write-decisions`` OUT/classes.json)."""
        result = collections.OrderedDict()
        for key in sorted(set(self.classes), key=str):
            max_pods = max(self.traces[other]['max_pods'] for other in self.members(key))
            runs = []
            for now in self.run_times():
                model = self.model(key, now)
                template = _model_template.reservation(model, max_pods, self.settings) if model else None
                kept = template and {k: template[k] for k in ('memory_bytes', 'millicores', 'max_pods')}
                runs.append({'t': now, 'model': _model_template.summary(model) if model else None, 'template': kept})
            result[class_label(key)] = runs
        return result


def _reading(trace, index):
    reading = {'t': trace['t'][index], 'non_pod_bytes': trace['non_pod_bytes'][index],
               'non_pod_millicores': trace['non_pod_millicores'][index]}
    pods = (trace.get('pods') or {}) and trace['pods'][index]
    if pods is not None and pods != {}:
        reading['pods'] = pods
    return reading


def replay_measured(trace, sampler_every, apply_every, settings, near_after=None, extra_runs=None, decisions=None,
                    fleet=None, trace_index=None):
    """Reserved memory at every point, and the times of kubelet restarts, as the role and sampler run it.

    ``near_after`` (seconds, ``--apply-on-near``): an extra run when every sampler reading for that long set the
    sampler's near-reservation flag (the ``NodeallocNearReservation`` alert's ``for``), as a job the alert
    starts would: on that node alone (``nodealloc_hosts=<node>``, docs/monitoring.md), so without its class's
    climbs, and with ``allow_decrease`` false, as that job runs; the daily runs keep their times. ``extra_runs``: a
    list the times of those runs are added to. ``decisions``: a list every run that changes what is in force adds
    {t, reserved_memory_bytes, reserved_millicores} to (kube + system reserved, as ``--write-decisions`` writes).
    ``fleet`` (a Fleet, this trace its ``trace_index``-th; ``--pool-class``): the daily runs fall at the fleet's
    times, and each pools with the class as the fleet knows it then (its live peers' jumps, the class model).
    Without a fleet, or on a run the alert starts, the node is alone: its runs every ``apply_every`` from its first
    reading, its class model its own.
    """
    times, memory, cpu = trace['t'], trace['non_pod_bytes'], trace['non_pod_millicores']
    pods = trace.get('kubepods_bytes') or [0] * len(times)
    start = times[0]
    window = _duration.parse_window(settings['history_window'])
    stabilization = _duration.parse_window(settings['stabilization_window'])
    reaction = _duration.parse_window(settings['reaction_time'])
    formulas = _vendor_formulas.all_formulas(trace['mem_total_bytes'], trace['cpus'], trace['max_pods'],
                                             settings['openshift_sizing_version'])
    history = collections.deque()
    current = {'kube_reserved': {}, 'system_reserved': {}}
    reserved, series, restarts = 0, [], []
    next_sample, next_apply = start, start
    planned_headroom, near_since = 0, None  # reservation.json: the headroom of the last applied change
    for index, now in enumerate(times):
        reading = _reading(trace, index)
        scheduled = now >= next_apply
        applying = scheduled
        if near_after is not None and now >= next_sample:
            if _headroom.near_reservation(memory[index], reserved, planned_headroom):
                near_since = now if near_since is None else near_since
                applying = applying or now - near_since >= near_after
            else:
                near_since = None
        if now >= next_sample or applying:
            history.append(reading)  # the sampler's reading, or the one the role's own run records
            next_sample = now + sampler_every if now >= next_sample else next_sample
            while history[0]['t'] < now - window:
                history.popleft()
        if applying:
            near_since = None
            samples = list(history)
            basis = _headroom.basis(samples, now, float(settings['percentile']), stabilization, reaction,
                                    window)
            if scheduled:
                next_apply = fleet.next_run(now) if fleet is not None else next_apply + apply_every
            elif extra_runs is not None:
                extra_runs.append(now)
            if fleet is not None and scheduled:
                # A run the alert starts is on the node alone: no class to pool with.
                basis['jumps'] = _headroom.pool_jumps(basis['jumps'], fleet.peer_jumps(trace_index, now))
            if basis.get('pods_profile'):
                model = fleet.model(fleet.classes[trace_index], now, basis['pods_profile'], trace_index) \
                    if fleet is not None and scheduled else _class_model.fit([basis['pods_profile']], trace['max_pods'])
                basis['class_model'] = {'model': model, 'max_pods': trace['max_pods']}
            measured = {'mem_total_bytes': trace['mem_total_bytes'],
                        'mem_available_bytes': trace['mem_total_bytes'] - memory[index] - pods[index],
                        'kubepods_working_set_bytes': pods[index], 'kube_components_working_set_bytes': 0,
                        'capacity_millicores': trace['cpus'] * 1000, 'non_pod_millicores': cpu[index],
                        'kube_components_millicores': 0,
                        'cpu_weights': {'version': 'v1', 'system_slice_weight': 1024}}
            recommendation = _recommend.recommend(measured, settings, None, basis, formulas)
            # The alert's job runs with reservations_allow_decrease=false (docs/monitoring.md): it only raises.
            decision = _decision.decide(current, recommendation,
                                        settings if scheduled else dict(settings, allow_decrease=False), basis)
            if decision['action'] != 'keep':
                current = {'kube_reserved': decision['kube_reserved'], 'system_reserved': decision['system_reserved']}
                reserved = _memory_total(current)
                planned_headroom = recommendation.get('memory_headroom_bytes') or 0
                restarts.append(now)
                if decisions is not None:
                    decisions.append({'t': now, 'reserved_memory_bytes': reserved,
                                      'reserved_millicores': sum(_node_allocatable.reserved_amount(part, 'cpu', -3)
                                                                 for part in current.values())})
        series.append(reserved)
    return series, restarts


def replay_poc(trace):
    """The PoC: every 5 s, the reading + 100Mi; the kubelet restarts when that moved more than 100Mi."""
    times, memory = trace['t'], trace['non_pod_bytes']
    reserved, series, restarts, next_check = None, [], [], times[0]
    for index, now in enumerate(times):
        if now >= next_check:
            next_check = now + POC_PERIOD_SECONDS
            target = memory[index] + POC_MARGIN_BYTES
            if reserved is None or abs(target - reserved) > POC_RESTART_THRESHOLD_BYTES:
                reserved = target
                restarts.append(now)
        series.append(reserved)
    return series, restarts


def replay_formula(trace, name):
    result = _vendor_formulas.FORMULAS[name](trace['mem_total_bytes'], trace['cpus'], trace['max_pods'])
    return [result['reserved_memory_bytes']] * len(trace['t']), []


def _tier():
    return {'points': 0, 'events': 0, 'mib_minutes': 0.0, 'worst_mib': 0.0}


def score(trace, series, restarts):
    """What a reservation ``series`` (kube + system reserved memory at every point) did on ``trace``.

    Two tiers per point: exposed (non-pod memory above the reservation: pods filling their limit would push
    the node into a global OOM) and dangerous (more than the node's hard ``memory.available`` threshold above
    it, ``eviction_hard_bytes``, 100Mi by default: past what eviction can still give back). Each counted in
    its points, events (runs of such points; one still running when warm-up ends counts in both), shortfall MiB·min and worst shortfall,
    during warm-up (the trace's first 24 h) and after it, apart. Waste: reserved but unused, GiB·h.
    """
    times, memory = trace['t'], trace['non_pod_bytes']
    margin = trace.get('eviction_hard_bytes', DEFAULT_EVICTION_HARD_BYTES)
    steps = [b - a for a, b in zip(times, times[1:])]
    typical = sorted(steps)[len(steps) // 2] if steps else GENERATED_STEP_SECONDS
    result = {'exposure_samples': 0, 'exposure_after_warmup': 0, 'exposure_events': 0, 'worst_shortfall_bytes': 0,
              'shortfall_mib_minutes': 0.0, 'waste_gib_hours': 0.0, 'waste_after_warmup_gib_hours': 0.0,
              'excess_mib_hours': 0.0, 'excess_after_warmup_mib_hours': 0.0,
              'node_hours': 0.0, 'after_warmup_node_hours': 0.0}
    peaks = _daily_peaks(trace)
    tiers = {tier: {'warmup': _tier(), 'after_warmup': _tier()} for tier in ('exposed', 'dangerous')}
    before, last_phase = {'exposed': False, 'dangerous': False}, 'warmup'
    for index, now in enumerate(times):
        seconds = steps[index] if index < len(steps) else typical
        shortfall = memory[index] - series[index]
        phase = 'after_warmup' if now - times[0] >= WARMUP_SECONDS else 'warmup'
        exposed = shortfall > 0
        if exposed:
            result['exposure_samples'] += 1
            result['exposure_after_warmup'] += phase == 'after_warmup'
            result['exposure_events'] += not before['exposed']
            result['worst_shortfall_bytes'] = max(result['worst_shortfall_bytes'], shortfall)
            result['shortfall_mib_minutes'] += shortfall / MIB * seconds / 60.0
        else:
            result['waste_gib_hours'] += -shortfall / GIB * seconds / 3600.0
            if phase == 'after_warmup':
                result['waste_after_warmup_gib_hours'] += -shortfall / GIB * seconds / 3600.0
        result['node_hours'] += seconds / 3600.0
        result['after_warmup_node_hours'] += seconds / 3600.0 if phase == 'after_warmup' else 0.0
        # Reserved beyond the day's realised peak (what the clairvoyant daily bound reserves); 0 below it.
        excess = max(0, series[index] - peaks[int((now - times[0]) // DAY)]) / MIB * seconds / 3600.0
        result['excess_mib_hours'] += excess
        if phase == 'after_warmup':
            result['excess_after_warmup_mib_hours'] += excess
        for tier, over in (('exposed', exposed), ('dangerous', shortfall > margin)):
            if over:
                counts = tiers[tier][phase]
                counts['points'] += 1
                counts['events'] += not before[tier] or phase != last_phase  # a run across the boundary: in both
                counts['mib_minutes'] += shortfall / MIB * seconds / 60.0
                counts['worst_mib'] = max(counts['worst_mib'], shortfall / MIB)
            before[tier] = over
        last_phase = phase
    result.update(tiers)
    per_day = collections.Counter(int((t - times[0]) // DAY) for t in restarts)
    result['changes'] = len(restarts)
    result['max_changes_per_day'] = max(per_day.values()) if per_day else 0
    return result


def _accumulate(total, scored):
    """Add ``scored`` into ``total``: counts and sums add up, worst and max figures take the largest."""
    for key, value in scored.items():
        if isinstance(value, dict):
            _accumulate(total.setdefault(key, {}), value)
        elif key not in total:
            total[key] = value
        elif key.startswith(('worst', 'max_')):
            total[key] = max(total[key], value)
        else:
            total[key] += value


def _rounded(entry):
    for key, value in entry.items():
        if isinstance(value, dict):
            _rounded(value)
        elif isinstance(value, float):
            entry[key] = round(value, 1)


def _daily_peaks(trace):
    """{day index from the trace's first point: the day's largest non-pod memory}; kept in the trace once made."""
    if trace.get('_daily_peaks') is not None:
        return trace['_daily_peaks']
    start, peaks = trace['t'][0], {}
    for now, value in zip(trace['t'], trace['non_pod_bytes']):
        day = int((now - start) // DAY)
        peaks[day] = max(peaks.get(day, 0), value)
    trace['_daily_peaks'] = peaks
    return peaks


def replay_clairvoyant_daily(trace):
    """The clairvoyant daily bound: each day (day 0 too) exactly that day's realised peak, known in advance.

    The least waste any policy that changes once a day can have with no exposed point on this trace.
    """
    start, peaks = trace['t'][0], _daily_peaks(trace)
    series = [peaks[int((now - start) // DAY)] for now in trace['t']]
    restarts = [start + day * DAY for day in sorted(peaks) if peaks[day] != peaks.get(day - 1)]
    return series, restarts


def replay_best_constant(trace):
    """The best constant in hindsight: the trace's own peak all along (the least constant with no exposure)."""
    return [max(trace['non_pod_bytes'])] * len(trace['t']), [trace['t'][0]]


def sampler_readings(trace, sampler_every):
    """Indexes of the points the sampler reads: the first point, then one every ``sampler_every`` s."""
    chosen, next_sample = [], trace['t'][0]
    for index, now in enumerate(trace['t']):
        if now >= next_sample:
            chosen.append(index)
            next_sample = now + sampler_every
    return chosen


def replay_simple(trace, fraction, window_days, readings, apply_every, prior_bytes, minimum_bytes=SIMPLE_MIN_BYTES):
    """The simple rule: at each run, P_W + max(m, f x P_W), P_W the largest reading of the last W days.

    Runs at the measured policy's times (every ``apply_every`` from the first point), on the sampler's
    ``readings`` (indexes) and the run's own reading. Day 0 as the measured policy: the first run has one
    reading, and the cold-start prior (``prior_bytes``, GKE's formula as the module's default) is its floor.
    A run changes what is in force whenever its figure differs (whole MiB).
    """
    times = trace['t']
    peaks = iter(window_peaks(trace, window_days, readings, apply_every) + [(None, None)])
    run_time, peak = next(peaks)
    series, restarts, reserved = [], [], 0
    for now in times:
        if now == run_time:
            wanted = _recommend.ceil_to(peak + max(minimum_bytes, fraction * peak), MIB)
            if now == times[0]:
                wanted = max(wanted, _recommend.ceil_to(prior_bytes, MIB))
            if wanted != reserved:
                reserved = wanted
                restarts.append(now)
            run_time, peak = next(peaks)
        series.append(reserved)
    return series, restarts


def simple_name(fraction, window_days):
    return 'simple f=%g W=%dd' % (fraction, window_days)


def fixed_name(margin_mib, window_days):
    return 'fixed m=%dMi W=%dd' % (margin_mib, window_days)


def window_peaks(trace, window_days, readings, apply_every):
    """[(run time, P_W)] at each run (every ``apply_every`` from the first point): the largest sampler reading
    of the last ``window_days`` days (None: the whole history so far), the run's own reading included."""
    times, memory = trace['t'], trace['non_pod_bytes']
    window = window_days * DAY if window_days else None
    runs, seen = [], collections.deque()
    reading_at = iter(readings + [len(times)])
    next_reading = next(reading_at)
    next_apply = times[0]
    for index, now in enumerate(times):
        if index == next_reading:
            seen.append((now, memory[index]))
            next_reading = next(reading_at)
        if now >= next_apply:
            if not seen or seen[-1][0] != now:
                seen.append((now, memory[index]))
            # The window as _history_store.read cuts it: readings at now - window and later.
            while window is not None and seen[0][0] < now - window:
                seen.popleft()
            runs.append((now, max(value for _t, value in seen)))
            next_apply += apply_every
    return runs


def parse_candidate(text):
    """A pooled simple rule from 'f=0.3,W=3,m=100,pool=1,prior=1' (W in days, 0 = all history; m in MiB)."""
    spec = dict(CANDIDATE)
    for part in filter(None, text.split(',')):
        key, _sep, raw = part.partition('=')
        if key not in spec:
            raise ValueError('%r: candidate keys are %s' % (part, ', '.join(sorted(spec))))
        spec[key] = float(raw) if key == 'f' else int(raw)
    return spec


def candidate_name(spec):
    return 'candidate f=%g W=%s m=%dMi pool=%d prior=%d' % (
        spec['f'], ('%dd' % spec['W']) if spec['W'] else 'all', spec['m'], spec['pool'], spec['prior'])


def replay_candidates(traces, spec, sampler_every, apply_every, priors):
    """The simple rule with class pooling: at each run every node of a class reserves the class's largest P_W
    (pool=1; its own otherwise) + max(m, f x that), the first run's floor its prior (prior=1; GKE's formula as
    the module's default cold-start prior). Runs at the same times on every trace (every ``apply_every`` from
    each trace's first point; the generated traces all start at t = 0). Returns [(series, restarts)] per trace.
    """
    runs = [window_peaks(trace, spec['W'], sampler_readings(trace, sampler_every), apply_every) for trace in traces]
    classes = [_headroom.node_class(trace['mem_total_bytes'], trace['cpus']) for trace in traces]
    out = []
    for index, trace in enumerate(traces):
        members = [other for other in range(len(traces)) if classes[other] == classes[index]] if spec['pool'] else [index]
        levels = []
        for run_index, (now, _own) in enumerate(runs[index]):
            peak = max(runs[other][run_index][1] for other in members if run_index < len(runs[other]))
            wanted = _recommend.ceil_to(peak + max(spec['m'] * MIB, spec['f'] * peak), MIB)
            if run_index == 0 and spec['prior'] and priors[index]:
                wanted = max(wanted, _recommend.ceil_to(priors[index], MIB))
            levels.append((now, wanted))
        series, restarts, reserved, position = [], [], 0, 0
        for now in trace['t']:
            while position < len(levels) and levels[position][0] <= now:
                if levels[position][1] != reserved:
                    reserved = levels[position][1]
                    restarts.append(levels[position][0])
                position += 1
            series.append(reserved)
        out.append((series, restarts))
    return out


BOUNDS = ('clairvoyant-daily', 'best-constant')


def _simple_points(policies):
    return _points(policies, 'simple ')


def _points(policies, prefix):
    return [dict(name=name, risk=entry['exposed']['after_warmup']['mib_minutes'],
                 waste=entry['waste_after_warmup_gib_hours'],
                 dangerous=entry['dangerous']['after_warmup']['points'],
                 dangerous_warmup=entry['dangerous']['warmup']['points'])
            for name, entry in policies.items() if name.startswith(prefix)]


def versus(policies, node_days, name='measured'):
    """The measured policy against the simple-rule curve, the clairvoyant bound and GKE (issue 29's targets).

    Risk is the exposed shortfall after warm-up (MiB·min); waste is after warm-up too (the warm-up day is
    scored apart, the same for every policy that starts from the same prior).
    ``simple_waste_at_measured_risk``: the least waste of a simple rule at no more risk than the measured
    policy's (the curve at its risk; None when every simple rule takes more risk); the target is a ratio to the
    measured waste of at least 1.1. ``simple_dangerous_at_measured_waste``: the fewest dangerous points after
    warm-up of a simple rule with no more waste than the measured policy's (None when all waste more).
    """
    measured = policies[name]
    risk, waste = measured['exposed']['after_warmup']['mib_minutes'], measured['waste_after_warmup_gib_hours']
    points = _simple_points(policies)
    at_risk = [point for point in points if point['risk'] <= risk]
    at_waste = [point for point in points if point['waste'] <= waste]
    best_at_risk = min(at_risk, key=lambda point: point['waste']) if at_risk else None
    best_at_waste = min(at_waste, key=lambda point: (point['dangerous'], point['waste'])) if at_waste else None
    safe_fixed = [point for point in _points(policies, 'fixed ') if not point['dangerous']
                  and not point['dangerous_warmup']]
    best_fixed = min(safe_fixed, key=lambda point: point['waste']) if safe_fixed else None
    clairvoyant = policies['clairvoyant-daily']
    gke_warmup = policies['gke']['dangerous']['warmup']['points']
    return {
        'measured_risk_mib_minutes': round(risk, 1), 'measured_waste_after_warmup_gib_hours': round(waste, 1),
        'simple_waste_at_measured_risk': best_at_risk and dict(best_at_risk, ratio=round(
            best_at_risk['waste'] / waste, 3) if waste else None),
        'simple_dangerous_at_measured_waste': best_at_waste,
        # Issue 38: the least-waste fixed-size rule with no dangerous point, and the measured waste as a multiple of
        # its (the target: at most 1.1).
        'best_safe_fixed': best_fixed and dict(best_fixed, measured_waste_ratio=round(
            waste / best_fixed['waste'], 3) if best_fixed['waste'] else None),
        'measured_dangerous_after_warmup': measured['dangerous']['after_warmup']['points'],
        'measured_dangerous_warmup': measured['dangerous']['warmup']['points'],
        'gke_dangerous_warmup': gke_warmup,
        'dangerous_warmup_vs_gke': round(measured['dangerous']['warmup']['points'] / gke_warmup, 3) if gke_warmup else None,
        'waste_vs_clairvoyant': round(measured['waste_gib_hours'] / clairvoyant['waste_gib_hours'], 3)
        if clairvoyant['waste_gib_hours'] else None,
        'waste_after_warmup_vs_clairvoyant': round(waste / clairvoyant['waste_after_warmup_gib_hours'], 3)
        if clairvoyant['waste_after_warmup_gib_hours'] else None,
        'changes_per_node_day': round(measured['changes'] / node_days, 3) if node_days else None,
        'node_days': round(node_days, 2)}


def run(traces, sampler_every, apply_every, pool_class=True, near_after=None, options=None, simple=True,
        decisions=None, candidates=()):
    """Replay every policy on every trace; ``decisions`` (a dict) gets the measured policy's changes per trace name."""
    settings = dict(module_defaults(), **(options or {}))
    names = ['measured', 'poc'] + list(_vendor_formulas.FORMULAS) + list(BOUNDS)
    sweep = [(fraction, days) for days in SIMPLE_WINDOW_DAYS for fraction in SIMPLE_FRACTIONS] if simple else []
    names += [simple_name(fraction, days) for fraction, days in sweep]
    fixed_sweep = [(margin, days) for days in FIXED_WINDOW_DAYS for margin in FIXED_MARGINS_MIB] if simple else []
    names += [fixed_name(margin, days) for margin, days in fixed_sweep]
    by_candidate = collections.OrderedDict((candidate_name(spec), spec) for spec in candidates)
    names += list(by_candidate)
    policies = collections.OrderedDict((name, None) for name in names)
    per_trace = []
    priors = []
    for trace in traces:
        floor = _headroom.cold_start_floor(
            _vendor_formulas.all_formulas(trace['mem_total_bytes'], trace['cpus'], trace['max_pods'],
                                          settings['openshift_sizing_version']), settings['cold_start_prior'])
        priors.append(floor[0] if floor else 0)
    candidate_series = {name: replay_candidates(traces, spec, sampler_every, apply_every, priors)
                        for name, spec in by_candidate.items()}
    fleet = Fleet(traces, sampler_every, apply_every, settings) if pool_class else None
    measured_series = {}
    for trace_index, trace in enumerate(traces):
        row = {'trace': trace['name']}
        if trace.get('skipped', {}).get('lines'):
            row['skipped'] = trace['skipped']
        readings = sampler_readings(trace, sampler_every) if sweep else None
        prior = _headroom.cold_start_floor(
            _vendor_formulas.all_formulas(trace['mem_total_bytes'], trace['cpus'], trace['max_pods'],
                                          settings['openshift_sizing_version']), settings['cold_start_prior'])
        simple_rules = {simple_name(fraction, days): (fraction, days, SIMPLE_MIN_BYTES) for fraction, days in sweep}
        simple_rules.update((fixed_name(margin, days), (0.0, days, margin * MIB)) for margin, days in fixed_sweep)
        for name in names:
            extra, changes = [], []
            if name == 'measured':
                series, restarts = replay_measured(trace, sampler_every, apply_every, settings,
                                                   near_after=near_after, extra_runs=extra, decisions=changes,
                                                   fleet=fleet, trace_index=trace_index)
                measured_series[trace_index] = series
                if decisions is not None:
                    decisions[trace['name']] = changes
            elif name == 'poc':
                series, restarts = replay_poc(trace)
            elif name == 'clairvoyant-daily':
                series, restarts = replay_clairvoyant_daily(trace)
            elif name == 'best-constant':
                series, restarts = replay_best_constant(trace)
            elif name in candidate_series:
                series, restarts = candidate_series[name][trace_index]
            elif name in simple_rules:
                fraction, days, minimum = simple_rules[name]
                series, restarts = replay_simple(trace, fraction, days, readings, apply_every, prior[0] if prior else 0,
                                                 minimum)
                if decisions is not None:
                    decisions.setdefault(BASELINES, {}).setdefault(name, {})[trace['name']] = changed_lines(
                        trace, series, restarts)
            else:
                series, restarts = replay_formula(trace, name)
            scored = score(trace, series, restarts)
            if near_after is not None and name == 'measured':
                scored['alert_runs'] = len(extra)  # role runs the alert started, a restart or not
            if name == 'measured' or not name.startswith(('simple ', 'fixed ', 'candidate ')):
                row[name] = scored
            if policies[name] is None:
                policies[name] = {}
            _accumulate(policies[name], scored)
        per_trace.append(row)
    for entry in policies.values():
        _rounded(entry)
    node_days = sum((t['t'][-1] - t['t'][0]) / float(DAY) for t in traces if t['t'])
    result = {'traces': len(traces), 'points': sum(len(t['t']) for t in traces),
              'trace_names': [t['name'] for t in traces], 'sampler_every_seconds': sampler_every,
              'apply_every_seconds': apply_every, 'apply_on_near_seconds': near_after, 'pool_class': pool_class,
              'options': dict(options or {}),
              'policies': policies, 'per_trace': per_trace}
    result['node_days'] = round(node_days, 2)
    result['operator'] = operator(policies, node_days)
    if fleet is not None:
        classes = fleet.classes_json()
        result['fleet'] = fleet_scores(fleet, measured_series, classes)
        if decisions is not None:
            decisions[CLASSES] = classes
    if sweep:
        result['versus'] = versus(policies, node_days)
        result['versus_candidates'] = {name: versus(policies, node_days, name) for name in by_candidate}
    return result


def operator(policies, node_days):
    """Per policy, the figures an operator reads (issue 38 item 5): the mean excess over the clairvoyant daily bound
    in MiB per node (reserved beyond each day's realised peak, averaged over every node-hour; after warm-up, and over
    the whole trace), dangerous points after and during warm-up, and kubelet restarts per node-day."""
    result = collections.OrderedDict()
    for name, entry in policies.items():
        if entry is None:
            continue
        hours, after = entry['node_hours'], entry['after_warmup_node_hours']
        result[name] = {
            'excess_mib_per_node': round(entry['excess_mib_hours'] / hours, 1) if hours else None,
            'excess_after_warmup_mib_per_node': round(entry['excess_after_warmup_mib_hours'] / after, 1)
            if after else None,
            'dangerous_after_warmup': entry['dangerous']['after_warmup']['points'],
            'dangerous_warmup': entry['dangerous']['warmup']['points'],
            'changes_per_node_day': round(entry['changes'] / node_days, 3) if node_days else None}
    return result


# Where run() keeps the baselines' decisions in its ``decisions`` dict: {rule name: {trace name: lines}}.
BASELINES = 'baselines'


def changed_lines(trace, series, restarts):
    """A baseline's --write-decisions lines: {t, reserved_memory_bytes} at each change, in force to the next one."""
    at = {now: index for index, now in enumerate(trace['t'])}
    return [{'t': now, 'reserved_memory_bytes': int(series[at[now]])} for now in restarts]


# Where run() keeps the fleet's classes in ``decisions``: written as DIR/classes.json.
CLASSES = 'classes.json'
# A joining node's first day is judged where its class had at least this many node-days of readings before it joined.
JOIN_CLASS_DAYS = 3.0


def fleet_scores(fleet, series_by_trace, classes):
    """Per class (issue 45's targets): the joining nodes' first 24 h (dangerous points, mean excess over the
    clairvoyant daily bound, MiB) where the class had ``JOIN_CLASS_DAYS`` node-days before they joined, the class's
    warm excess (after each node's first 24 h), the slope at the last run against the truth where the traces know it
    (``true_slope_bytes``), and each template's exceedances: points of its class's nodes above it while it was the
    newest (``classes``: Fleet.classes_json)."""
    result = collections.OrderedDict()
    for key in sorted(set(fleet.classes), key=str):
        label, members = class_label(key), fleet.members(key)
        joined, warm_excess, warm_hours = [], 0.0, 0.0
        for index in members:
            trace, series = fleet.traces[index], series_by_trace.get(index)
            if series is None:
                continue
            peaks, start = _daily_peaks(trace), trace['t'][0]
            margin = trace.get('eviction_hard_bytes', DEFAULT_EVICTION_HARD_BYTES)
            first = {'dangerous': 0, 'excess_mib_hours': 0.0, 'hours': 0.0}
            for position, now in enumerate(trace['t']):
                seconds = (trace['t'][position + 1] - now) if position + 1 < len(trace['t']) else 0
                excess = max(0, series[position] - peaks[int((now - start) // DAY)]) / MIB * seconds / 3600.0
                if now - start < DAY:
                    first['dangerous'] += trace['non_pod_bytes'][position] - series[position] > margin
                    first['excess_mib_hours'] += excess
                    first['hours'] += seconds / 3600.0
                else:
                    warm_excess += excess
                    warm_hours += seconds / 3600.0
            before = sum(max(0.0, min(fleet.traces[o]['t'][-1], start) - fleet.traces[o]['t'][0])
                         for o in members if o != index) / DAY
            if start > fleet.start and before >= JOIN_CLASS_DAYS:
                joined.append({'trace': trace['name'], 'class_node_days_before': round(before, 2),
                               'dangerous_first_day': first['dangerous'],
                               'first_day_excess_mib': round(first['excess_mib_hours'] / first['hours'], 1)
                               if first['hours'] else None})
        warm = warm_excess / warm_hours if warm_hours else None
        runs = classes.get(label) or []
        last = next((run['model'] for run in reversed(runs) if run['model']), None)
        truth = fleet.traces[members[0]].get('true_slope_bytes')
        entry = {'nodes': len(members), 'warm_excess_mib': None if warm is None else round(warm, 1),
                 'joined': joined,
                 'worst_first_day_vs_warm': round(max(j['first_day_excess_mib'] or 0 for j in joined) / warm, 3)
                 if joined and warm else None,
                 'slope_mib_per_pod': last and round(last['slope_bytes_per_pod'] / MIB, 2),
                 'slope_source': last and last['slope_source'],
                 'pods_span_share': last and round((last['pods_high'] - last['pods_low'])
                                                   / float(max(fleet.traces[o]['max_pods'] for o in members)), 3),
                 'true_slope_mib_per_pod': None if truth is None else round(truth / MIB, 2),
                 'slope_error_share': round(last['slope_bytes_per_pod'] / float(truth) - 1, 3) if last and truth else None,
                 'template_exceeded': _template_exceedances(fleet, members, runs)}
        result[label] = entry
    return result


def _template_exceedances(fleet, members, runs):
    """{points, worst_mib}: readings of the class's nodes above the newest template written before them."""
    points, worst = 0, 0.0
    written = [(run['t'], run['template']['memory_bytes']) for run in runs if run['template']]
    starts = [t for t, _memory in written]
    for index in members:
        trace = fleet.traces[index]
        for now, value in zip(trace['t'], trace['non_pod_bytes']):
            position = bisect.bisect_right(starts, now) - 1
            if position >= 0 and value > written[position][1]:
                points += 1
                worst = max(worst, (value - written[position][1]) / MIB)
    return {'points': points, 'worst_mib': round(worst, 1)}


def write_decisions(decisions, directory):
    """DIR/<trace name>.jsonl: one line per run that changed what is in force, from then to the next line.

    The baselines (simple and fixed-size rules) likewise under DIR/baselines/<rule>/ (the rule's name with '_' for
    spaces and '=': ``fixed_m_512Mi_W_7d``), memory only, so any scorer can put them beside the measured policy."""
    os.makedirs(directory, exist_ok=True)
    for rule, traces in (decisions.get(BASELINES) or {}).items():
        slug = rule.replace(' ', '_').replace('=', '_').replace('.', 'p')
        write_decisions(traces, os.path.join(directory, BASELINES, slug))
    if decisions.get(CLASSES) is not None:
        with open(os.path.join(directory, CLASSES), 'w', encoding='utf-8') as handle:
            json.dump(decisions[CLASSES], handle, indent=1, sort_keys=True)
            handle.write('\n')
    for name, lines in decisions.items():
        if name in (BASELINES, CLASSES):
            continue
        stem = name[:-len('.jsonl')] if name.endswith('.jsonl') else name.replace(' ', '-')
        with open(os.path.join(directory, stem + '.jsonl'), 'w', encoding='utf-8') as handle:
            for line in lines:
                handle.write(json.dumps(line, sort_keys=True) + '\n')


def markdown(result):
    lines = ['| policy | exposed after warm-up: points / events / MiB·min / worst MiB | dangerous after warm-up: points / '
             'events / MiB·min / worst MiB | exposed during warm-up: points / worst MiB | dangerous during warm-up: '
             'points / worst MiB | waste (GiB·h) | after warm-up | changes | max changes/day | mean excess over the '
             'clairvoyant daily bound after warm-up (whole trace), MiB per node | changes per node-day |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    figures = result.get('operator') or {}
    for name, entry in result['policies'].items():
        figure = figures.get(name) or {}
        after = [entry[tier]['after_warmup'] for tier in ('exposed', 'dangerous')]
        during = [entry[tier]['warmup'] for tier in ('exposed', 'dangerous')]
        tiers = tuple('%d / %d / %.1f / %.0f' % (t['points'], t['events'], t['mib_minutes'], t['worst_mib'])
                      for t in after)
        lines.append('| %s | %s | %s | %d / %.0f | %d / %.0f | %.1f | %.1f | %d | %d | %s (%s) | %s |'
                     % ((name,) + tiers
                        + (during[0]['points'], during[0]['worst_mib'], during[1]['points'], during[1]['worst_mib'],
                           entry['waste_gib_hours'], entry['waste_after_warmup_gib_hours'], entry['changes'],
                           entry['max_changes_per_day'], figure.get('excess_after_warmup_mib_per_node'),
                           figure.get('excess_mib_per_node'), figure.get('changes_per_node_day'))))
    if result.get('versus'):
        lines += ['', 'measured against the simple-rule curve and the bounds: '
                  + json.dumps(result['versus'], sort_keys=True)]
    return '\n'.join(lines)


def load_traces(args):
    """The traces ``args`` name: a directory of node histories, or a generated family at its seeds."""
    if args.traces:
        return read_traces(args.traces)
    seeds = [int(seed) for seed in args.seed.split(',')]
    if args.family == 'quality':
        return generated_traces(args.days or 7, seeds)
    return trace_families.family_traces(args.family, seeds, args.days or trace_families.DAYS)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--days', type=int, help='length of generated traces (7 for quality, 10 for the others)')
    parser.add_argument('--family', choices=('quality',) + tuple(trace_families.FAMILIES), default='quality',
                        help='generated traces: this file\'s own generator (quality), or one of '
                             'benchmarks/trace_families.py (shapes, incidents, weekly: 8 nodes, 10 s points)')
    parser.add_argument('--seed', default='1', help='seed(s) of the generated traces, comma-separated: 1 or 5,6,7,8')
    parser.add_argument('--traces', help='replay every *.jsonl in this directory instead of generated traces')
    parser.add_argument('--write-traces', help='write the generated traces here as *.jsonl and exit')
    parser.add_argument('--write-decisions', metavar='DIR',
                        help='write DIR/<trace name>.jsonl: one line per run of the measured policy that changed what '
                             'is in force, {"t", "reserved_memory_bytes", "reserved_millicores"}')
    parser.add_argument('--simple', action=argparse.BooleanOptionalAction, default=True,
                        help='replay the simple-rule baseline sweep (P_W + max(100Mi, f x P_W)); --no-simple: skip it')
    parser.add_argument('--sampler-every', type=int, default=60, help='seconds between sampler readings')
    parser.add_argument('--apply-every', default='24h', help='how often the role runs (a duration: 1h, 24h, 7d)')
    parser.add_argument('--apply-on-near', metavar='DURATION',
                        help='also run the role on a node whose sampler has flagged its memory near the reservation '
                             'for this long (the NodeallocNearReservation alert fires after 15m); off by default')
    parser.add_argument('--pool-class', action=argparse.BooleanOptionalAction, default=True,
                        help='pass the traces of one node class (memory size, CPUs) each other\'s records, a young node '
                             'borrowing its peers\' jumps, as the role does over an inventory by default '
                             '(reservations_pool_class); --no-pool-class: each node alone')
    parser.add_argument('--option', action='append', default=[], metavar='NAME=VALUE',
                        help='replay the measured policy with this facts module option set (repeatable), e.g. '
                             'memory_headroom_percent=30; the defaults otherwise. NAME: one of '
                             + ', '.join(REPLAYED_OPTIONS))
    parser.add_argument('--candidate', action='append', default=[], metavar='f=F,W=D,m=MIB,pool=0|1,prior=0|1',
                        help='also replay the pooled simple rule with these settings (repeatable; unset keys as %s)'
                             % ', '.join('%s=%s' % item for item in sorted(CANDIDATE.items())))
    parser.add_argument('--live-seconds', type=int, default=0,
                        help='ignored: a trace recorded by the collection itself is no longer scored')
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        traces = load_traces(args)
    except TraceError as exc:
        parser.error(str(exc))
    if args.write_traces:
        write_traces(traces, args.write_traces)
        return 0
    if not traces:
        parser.error('no *.jsonl traces in %s' % args.traces)
    for trace in traces:
        skipped = trace.get('skipped') or {}
        if skipped.get('lines'):
            print('%s: %d line(s) skipped, not replayed: %s'
                  % (trace['name'], skipped['lines'], '; '.join(skipped['first'])), file=sys.stderr)
    near_after = _duration.parse_window(args.apply_on_near) if args.apply_on_near else None
    try:
        options = dict(parse_option(text) for text in args.option)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        candidates = [parse_candidate(text) for text in args.candidate]
    except ValueError as exc:
        parser.error(str(exc))
    decisions = {} if args.write_decisions else None
    result = run(traces, args.sampler_every, _duration.parse_window(args.apply_every), args.pool_class, near_after,
                 options, args.simple, decisions, candidates)
    if decisions is not None:
        write_decisions(decisions, args.write_decisions)
    result['seconds'] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.markdown:
        print(markdown(result))
    else:
        print('%d traces, %d points, %.1f s' % (result['traces'], result['points'], result['seconds']))
        print(markdown(result))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
