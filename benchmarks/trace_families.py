"""Three trace families for benchmarks/quality.py, written apart from its own generator (no code shared with it).

Each family is 8 nodes (4-256 GiB), a point every 10 s over 10 days by default, deterministic by seed: the
same seed gives the same traces on any machine (random.Random seeded with a string is seeded by its SHA-512).
A trace is the dict quality.py replays: name, mem_total_bytes, cpus, max_pods, t, non_pod_bytes,
non_pod_millicores.

``shapes`` (issue 29's first family, rebuilt from its description; the issue author's own traces are not in
the repository): kubelet GC sawtooth, container runtime leak reset at random restarts, a nightly batch
window, the kernel's conntrack slab (outside every cgroup) following the day's connections, a persistent
step after an upgrade, Pareto-sized log bursts.

``incidents`` (issue 29's second, held-out family, shapes the first has not): a kernel slab leak that never
resets, daemon restart storms (a crash-looping node daemon, each start's peak overlapping the last's),
a DaemonSet rollout that adds a sidecar (one more runtime shim outside the pods) to every pod, a
log-shipper's in-memory backlog during a network cut and its drain after, image-pull storms when a
drained node fills up again.

``weekly`` (issue 38's fourth family, written before the byte headroom was tuned; shapes a percentage of the
node's peak gets wrong): bursts of a fixed size (300-1000 MiB, whatever the node's size) on small nodes, every 1-3
days, some of them at the hour of the daily peak; sockets' memory that follows the working week and drops on
Saturday and Sunday (the trace starts on a random weekday, so every trace has a weekend); flat nodes that take an
unannounced persistent step (an agent upgrade, a DaemonSet adding a sidecar) once or twice; and two nodes of one
size class side by side, one that never climbs and one that climbs every day (its daily cycle rising by 300-900 MiB
from the night's low to the afternoon's high).

``fleet`` (issue 45's, written before the class model was replayed on it): three classes (8, 32, 128 GiB), each with
a true intercept and per-pod slope the scorer knows (``fleet_truth``), pods with every reading, churn, an autoscaler
packing one long-lived node of each class towards maxPods, and nodes joining after 1-6 days and leaving 1-7 days
later: its traces start and end at different times, and carry ``node_class``, ``max_pods`` and ``pods``.
"""

from __future__ import annotations

import math
import random

MIB, GIB = 1 << 20, 1 << 30
DAY, HOUR = 86400, 3600
STEP_SECONDS = 10
DAYS = 10
# (memory GiB, CPUs, pods on average)
SHAPES_NODES = ((4, 2, 12), (8, 2, 20), (16, 4, 30), (16, 8, 45), (32, 8, 60), (64, 16, 90), (128, 32, 105),
                (256, 64, 110))
INCIDENTS_NODES = ((4, 2, 15), (8, 4, 25), (8, 4, 30), (16, 4, 40), (32, 16, 70), (64, 16, 100), (96, 24, 110),
                   (256, 48, 110))


def _pareto(rng, scale, alpha, cap):
    return min(cap, scale * (1.0 - rng.random()) ** (-1.0 / alpha))


def _times(days, step):
    return list(range(0, days * DAY, step))


def _events(rng, days, mean_gap_seconds, first_after=0.0):
    """Start times of events a mean gap apart (exponential gaps), within the trace."""
    result, now = [], first_after + rng.expovariate(1.0 / mean_gap_seconds)
    while now < days * DAY:
        result.append(now)
        now += rng.expovariate(1.0 / mean_gap_seconds)
    return result


def _trace(family, seed, index, size_gib, cpus, pods_mean, times, memory, cpu):
    return {'name': '%s seed %d node %d %dGiB' % (family, seed, index, size_gib), 'mem_total_bytes': size_gib * GIB,
            'cpus': cpus, 'max_pods': 110, 't': times, 'non_pod_bytes': [int(max(0, value)) for value in memory],
            'non_pod_millicores': [int(max(0, value)) for value in cpu]}


def shapes_node(seed, index, size_gib, cpus, pods_mean, days=DAYS, step=STEP_SECONDS):
    rng = random.Random('shapes-%d-%d' % (seed, index))
    capacity = size_gib * GIB
    times = _times(days, step)
    base = 150 * MIB + rng.uniform(0.004, 0.01) * capacity
    per_pod = rng.uniform(8, 16) * MIB
    # kubelet's Go heap: grows until the GC's target, then falls back (a sawtooth).
    gc_period = rng.uniform(300, 1800)
    gc_amplitude = rng.uniform(20, 60) * MIB * (1 + pods_mean / 110.0)
    gc_phase = rng.uniform(0, gc_period)
    # Runtime leak, reset when the runtime restarts at random.
    leak_per_second = rng.uniform(0.5, 6) * MIB / HOUR
    restarts = _events(rng, days, rng.uniform(1.5, 4) * DAY)
    # Nightly batch window: more pods, and their runtime memory.
    batch_start = rng.uniform(0, 3) * HOUR
    batch_length = rng.uniform(1, 3) * HOUR
    batch_pods = int(pods_mean * rng.uniform(0.2, 0.6))
    # Conntrack slab: follows the day's connections, outside every cgroup.
    conntrack_peak = min(0.02 * capacity, rng.uniform(30, 250) * MIB)
    conntrack_phase = rng.uniform(0, DAY)
    # A persistent step after an upgrade (a bigger kubelet / runtime / agent).
    upgrade_at = rng.uniform(2, days - 1) * DAY
    upgrade_step = rng.uniform(40, 300) * MIB * min(2.0, (size_gib / 16.0) ** 0.3)
    # Pareto log bursts.
    burst_cap = min(1.5 * GIB, 0.06 * capacity)
    bursts = [(start, rng.expovariate(1 / 60.0) + step, _pareto(rng, 20 * MIB, rng.uniform(1.3, 1.8), burst_cap))
              for start in _events(rng, days, rng.uniform(2, 6) * HOUR)]
    pods = float(pods_mean)
    memory, cpu = [], []
    restart_index, last_restart, burst_index = 0, 0.0, 0
    for now in times:
        while restart_index < len(restarts) and restarts[restart_index] <= now:
            last_restart = restarts[restart_index]
            restart_index += 1
        hour = (now % DAY) / HOUR
        in_batch = batch_start <= (now % DAY) < batch_start + batch_length
        pods += (pods_mean - pods) * 0.001 + rng.gauss(0, 0.3)
        running = max(1.0, pods) + (batch_pods if in_batch else 0)
        sawtooth = gc_amplitude * (((now + gc_phase) % gc_period) / gc_period)
        leak = leak_per_second * (now - last_restart)
        conntrack = conntrack_peak * (0.55 + 0.45 * math.sin(2 * math.pi * (now - conntrack_phase) / DAY))
        upgrade = upgrade_step if now >= upgrade_at else 0.0
        while burst_index < len(bursts) and bursts[burst_index][0] + bursts[burst_index][1] < now:
            burst_index += 1
        burst = bursts[burst_index][2] if burst_index < len(bursts) and bursts[burst_index][0] <= now else 0.0
        memory.append(base + running * per_pod + sawtooth + leak + conntrack + upgrade + burst + rng.gauss(0, 3 * MIB))
        cpu.append(50 + running * 3 + (200 if in_batch else 0) + (150 if burst else 0) + 20 * math.sin(hour)
                   + rng.gauss(0, 10))
    return _trace('shapes', seed, index, size_gib, cpus, pods_mean, times, memory, cpu)


def incidents_node(seed, index, size_gib, cpus, pods_mean, days=DAYS, step=STEP_SECONDS):
    rng = random.Random('incidents-%d-%d' % (seed, index))
    capacity = size_gib * GIB
    times = _times(days, step)
    base = 180 * MIB + rng.uniform(0.003, 0.008) * capacity
    shim = rng.uniform(6, 14) * MIB                     # a runtime shim per pod (outside the pod's cgroup)
    # Kernel slab leak (a driver or dentry leak): never reset within the trace, on some nodes only.
    slab_leak_per_second = (rng.uniform(0.3, 3) * MIB / HOUR * (size_gib / 16.0) ** 0.5
                            if rng.random() < 0.6 else 0.0)
    # Daemon restart storms: a node daemon crash-loops for a while, each start's peak overlapping the last's.
    storms = [(start, rng.uniform(20, 90) * 60, rng.uniform(30, 150) * MIB, rng.uniform(10, 60))
              for start in _events(rng, days, rng.uniform(2, 5) * DAY)]
    # DaemonSet rollout adding a sidecar to every pod: one more shim per pod, rolled over some minutes.
    rollout_at = rng.uniform(1.5, days - 2) * DAY
    rollout_length = rng.uniform(30, 120) * 60
    sidecar = rng.uniform(3, 9) * MIB
    # Log shipper's backlog: buffered in memory while the network is cut, drained after.
    cuts = [(start, rng.uniform(10, 120) * 60, rng.uniform(0.3, 3) * MIB / 60.0)
            for start in _events(rng, days, rng.uniform(3, 6) * DAY)]
    backlog_cap = min(0.05 * capacity, 1 * GIB)
    # Node drains (pods gone) and the image-pull storm when it fills up again.
    drains = [(start, rng.uniform(10, 40) * 60, min(0.04 * capacity, rng.uniform(150, 700) * MIB))
              for start in _events(rng, days, rng.uniform(2.5, 6) * DAY, first_after=HOUR)]
    pods = float(pods_mean)
    memory, cpu = [], []
    for now in times:
        pods += (pods_mean - pods) * 0.002 + rng.gauss(0, 0.25)
        running = max(1.0, pods)
        pull = 0.0
        for start, drained_for, pull_peak in drains:
            if start <= now < start + drained_for:
                running = 1.0                               # drained: the node's pods are gone
            elif start + drained_for <= now < start + drained_for + 1200:
                # Pods come back and every image is pulled and unpacked at once: the runtime's memory climbs
                # while they unpack, then falls as the pulls finish.
                into = (now - start - drained_for) / 1200.0
                running *= min(1.0, 0.2 + into)
                pull = pull_peak * math.sin(math.pi * into) * rng.uniform(0.8, 1.0)
        rolled = min(1.0, max(0.0, (now - rollout_at) / rollout_length))
        per_pod = shim + sidecar * rolled
        storm = 0.0
        for start, length, peak, every in storms:
            if start <= now < start + length:
                # A new start every ``every`` s; each holds its startup peak for ~20 s while the last winds down.
                overlap = min(3.0, 20.0 / every + 1.0)
                storm = peak * overlap * (0.5 + 0.5 * ((now - start) % every < 20))
        backlog = 0.0
        for start, length, rate in cuts:
            if start <= now < start + length:
                backlog = max(backlog, min(backlog_cap, rate * (now - start)))
            elif start + length <= now < start + length + length / 3.0:
                held = min(backlog_cap, rate * length)
                backlog = max(backlog, held * (1 - (now - start - length) / (length / 3.0)))
        slab = slab_leak_per_second * now
        memory.append(base + running * per_pod + slab + storm + backlog + pull + rng.gauss(0, 3 * MIB))
        cpu.append(60 + running * 2.5 + (300 if storm else 0) + (400 if pull else 0) + (80 if backlog else 0)
                   + rng.gauss(0, 10))
    return _trace('incidents', seed, index, size_gib, cpus, pods_mean, times, memory, cpu)


# (memory GiB, CPUs, pods on average, kind): what each node of ``weekly`` does beside its pods (weekly_node).
WEEKLY_NODES = ((4, 2, 12, 'bursty'), (4, 2, 15, 'bursty-weekly'), (8, 4, 25, 'weekly'), (16, 4, 30, 'flat-step'),
                (32, 8, 60, 'never-climbs'), (32, 8, 60, 'climbs-daily'), (64, 16, 90, 'flat-step-weekly'),
                (128, 32, 110, 'bursty-weekly'))


def weekly_node(seed, index, size_gib, cpus, pods_mean, kind, days=DAYS, step=STEP_SECONDS):
    """One node of ``weekly``; ``kind`` names what it does beside its pods (WEEKLY_NODES)."""
    rng = random.Random('weekly-%d-%d' % (seed, index))
    week_start = random.Random('weekly-%d-start' % seed).randrange(5)  # day 0 is Monday + this (the same fleet-wide)
    capacity = size_gib * GIB
    times = _times(days, step)
    base = 160 * MIB + rng.uniform(0.003, 0.008) * capacity
    per_pod = rng.uniform(8, 14) * MIB
    flat = kind in ('flat-step', 'flat-step-weekly', 'never-climbs')
    # Bursts of a fixed size: a log flush, an image re-pull, a node agent's report; sized like the cause, not the node.
    bursts = []
    if kind.startswith('bursty'):
        peak_hour = rng.uniform(10, 16)
        for start in _events(rng, days, rng.uniform(1, 3) * DAY, first_after=rng.uniform(0, 1) * DAY):
            if rng.random() < 0.4:  # landing on the daily peak: the hour the pods are busiest
                start = (start // DAY) * DAY + peak_hour * HOUR
            bursts.append((start, rng.uniform(60, 300), rng.uniform(300, 1000) * MIB))
    # Sockets' memory and the day's connections: weekdays busy from 8 to 20, Saturday and Sunday quiet.
    weekly = kind.endswith('weekly') or kind == 'weekly'
    sockets = rng.uniform(0.004, 0.012) * capacity + rng.uniform(100, 400) * MIB if weekly else 0.0
    # Unannounced persistent steps on a flat node: an agent upgrade, a DaemonSet adding a sidecar.
    steps = ([(rng.uniform(1.5, days - 0.5) * DAY, rng.uniform(150, 600) * MIB) for _step in range(rng.choice((1, 2)))]
             if kind.startswith('flat-step') else [])
    # The node that climbs every day: from the night's low to the afternoon's high by 300-900 MiB.
    climb = rng.uniform(300, 900) * MIB if kind == 'climbs-daily' else 0.0
    climb_peak_hour = rng.uniform(14, 18)
    pods = float(pods_mean)
    memory, cpu = [], []
    for now in times:
        day, hour = int(now // DAY), (now % DAY) / HOUR
        weekend = (week_start + day) % 7 >= 5
        if not flat:
            pods += (pods_mean * (0.6 if weekend and weekly else 1.0) - pods) * 0.002 + rng.gauss(0, 0.25)
        running = max(1.0, pods)
        busy = 0.0 if weekend else max(0.0, math.sin(math.pi * (hour - 8) / 12.0)) if 8 <= hour < 20 else 0.0
        socket_memory = sockets * (0.1 + 0.9 * busy) if weekly else 0.0
        daily = climb * max(0.0, 1 - abs(hour - climb_peak_hour) / 12.0) ** 1.5 if climb else 0.0
        stepped = sum(size for at, size in steps if now >= at)
        burst = sum(size for start, length, size in bursts if start <= now < start + length)
        memory.append(base + running * per_pod + socket_memory + daily + stepped + burst
                      + rng.gauss(0, 2 * MIB if flat else 4 * MIB))
        cpu.append(50 + running * 3 + 200 * busy + (300 if burst else 0) + rng.gauss(0, 10))
    return _trace('weekly', seed, index, size_gib, cpus, pods_mean, times, memory, cpu)


# Issue 45's family: (class, memory GiB, CPUs, maxPods, kind). Per class two nodes for the whole trace (one of them
# packed by the autoscaler towards maxPods for a day or two, from day 3 on) and three that join after 1-6 days and
# leave 1-7 days later (or stay to the end).
FLEET_CLASSES = (('small', 8, 2, 58), ('general', 32, 8, 110), ('large', 128, 32, 110))
FLEET_NODES = tuple((name, size, cpus, max_pods, kind) for name, size, cpus, max_pods in FLEET_CLASSES
                    for kind in ('steady', 'packed', 'joiner', 'joiner', 'joiner'))


def fleet_truth(seed, class_name):
    """A class's true line, which the scorer knows and no node does: (intercept bytes, slope bytes per pod)."""
    rng = random.Random('fleet-class-%d-%s' % (seed, class_name))
    return rng.uniform(250, 700) * MIB, rng.uniform(9, 24) * MIB


def fleet_node(seed, index, class_name, size_gib, cpus, max_pods, kind, days=DAYS, step=STEP_SECONDS):
    """One node of a fleet class: pods that start and stop (about one a minute, each pod's runtime memory released
    5-30 min after it goes), a density the class shares with a daily cycle, packing by the autoscaler, nodes joining
    and leaving, and what no pod count explains: a runtime leak reset at its restarts, page cache grown and reclaimed,
    Pareto log bursts, noise. Non-pod memory = the node's intercept (its class's, +-10 %) + slope x pods + the rest.
    """
    rng = random.Random('fleet-%d-%d' % (seed, index))
    capacity = size_gib * GIB
    class_intercept, slope = fleet_truth(seed, class_name)
    intercept = class_intercept * rng.uniform(0.9, 1.1)
    if kind == 'joiner':
        join = rng.uniform(1, 6) * DAY
        leave = min(days * DAY, join + rng.uniform(1, 7) * DAY)
    else:
        join, leave = 0.0, days * DAY
    times = [t for t in _times(days, step) if join <= t < leave]
    density = random.Random('fleet-density-%d-%s' % (seed, class_name)).uniform(0.3, 0.5) * max_pods
    packing = []
    if kind == 'packed':
        start = rng.uniform(3, days - 3) * DAY
        packing.append((start, start + rng.uniform(1, 2) * DAY, rng.uniform(0.85, 1.0) * max_pods))
    leak_per_second = rng.uniform(0.5, 3) * MIB / HOUR
    restarts = _events(rng, days, rng.uniform(1.5, 4) * DAY)
    cache_cap = min(400 * MIB, rng.uniform(0.003, 0.008) * capacity)
    burst_cap = min(1 * GIB, 0.05 * capacity)
    bursts = [(start, rng.expovariate(1 / 45.0) + step, _pareto(rng, 16 * MIB, 1.6, burst_cap))
              for start in _events(rng, days, rng.uniform(2, 5) * HOUR)]
    pods = 0 if kind == 'joiner' else int(density)
    releasing, memory, cpu, counts = [], [], [], []
    restart_index, last_restart, burst_index, cache = 0, 0.0, 0, 0.0
    for now in times:
        target = density * (0.85 + 0.3 * (1 if 8 <= (now % DAY) / HOUR <= 20 else 0))
        for begin, end, level in packing:
            if begin <= now < end:
                target = level
        target = min(max_pods, target)
        # A joining node is filled in its first half hour; afterwards about one start or stop a minute.
        rate = 1.0 if kind == 'joiner' and now - join < 1800 and pods < target else step / 60.0
        if rng.random() < rate:
            if pods < target and (rng.random() < 0.8 or pods == 0):
                pods += 1
            elif pods > 0:
                pods -= 1
                releasing.append((now + rng.uniform(5, 30) * 60, slope))
        releasing = [(until, amount) for until, amount in releasing if until > now]
        while restart_index < len(restarts) and restarts[restart_index] <= now:
            last_restart = restarts[restart_index]
            restart_index += 1
        leak = leak_per_second * (now - max(last_restart, join))
        cache = min(cache_cap, cache + cache_cap / DAY * step)
        if rng.random() < step / (2 * DAY):
            cache *= rng.uniform(0.2, 0.5)  # the kernel reclaims
        while burst_index < len(bursts) and bursts[burst_index][0] + bursts[burst_index][1] < now:
            burst_index += 1
        burst = bursts[burst_index][2] if burst_index < len(bursts) and bursts[burst_index][0] <= now else 0.0
        memory.append(intercept + slope * pods + sum(a for _u, a in releasing) + leak + cache + burst
                      + rng.gauss(0, 4 * MIB))
        cpu.append(40 + 3 * pods + (250 if burst else 0) + rng.gauss(0, 15))
        counts.append(pods)
    trace = _trace('fleet', seed, index, size_gib, cpus, 0, times, memory, cpu)
    trace.update(name='fleet seed %d node %d %s %s' % (seed, index, class_name, kind), max_pods=max_pods,
                 node_class=class_name, pods=counts, true_intercept_bytes=int(class_intercept),
                 true_slope_bytes=int(slope))
    return trace


FAMILIES = {'shapes': (SHAPES_NODES, shapes_node), 'incidents': (INCIDENTS_NODES, incidents_node),
            'weekly': (WEEKLY_NODES, weekly_node), 'fleet': (FLEET_NODES, fleet_node)}


def family_traces(family, seeds, days=DAYS, step=STEP_SECONDS):
    """Every node of ``family`` for every seed, in order."""
    nodes, make = FAMILIES[family]
    return [make(seed, index, *(node + (days, step))) for seed in seeds for index, node in enumerate(nodes)]
