# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The facts as Prometheus metrics for node_exporter's textfile collector: one schema for both writers.

``FAMILIES`` is the one table of every ``nodealloc_*`` family: its type, its labels and its one meaning. The
module's ``textfile_path`` (``render``) and the sampler (``render_sampler``) write only families of it, each
with its help text and labels, so a name means the same whichever wrote it; the alert rules, the dashboard and
docs/monitoring.md use these names (tests/unit/test_monitoring.py checks each against the table). The two writers
each need a file of their own: node_exporter fails a scrape that finds one series in two files.

Names follow the Prometheus conventions (base units in the name: ``_bytes``, ``_cores``, ``_seconds``, ``_ratio``;
one HELP and one TYPE line per family); everything is a gauge but the PSI stall totals (counters, ``_total``).
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults

# name: (type, labels, help). The help text is the meaning; a writer that cannot give that meaning omits the family.
FAMILIES = {
    'nodealloc_memory_capacity_bytes': ('gauge', (), 'Node memory capacity (MemTotal).'),
    'nodealloc_memory_non_pod_bytes': (
        'gauge', (), 'Memory used outside the pods when measured: MemTotal - MemAvailable - kubepods working set.'),
    'nodealloc_memory_non_pod_swap_bytes': (
        'gauge', (), 'Non-pod memory swapped out when measured, counted in nodealloc_memory_non_pod_bytes: '
        'SwapTotal - SwapFree - SwapCached less the kubepods cgroup\'s swap.'),
    'nodealloc_swap_system_slice_may_swap': (
        'gauge', (), '1 when swap is on and system.slice may swap (memory.swap.max not 0: no MemorySwapMax=0 drop-in), else 0.'),
    'nodealloc_memory_non_pod_window_bytes': (
        'gauge', ('percentile',), 'Non-pod memory at the policy percentile over the history window (1 MiB buckets, rounded up).'),
    'nodealloc_memory_kubepods_working_set_bytes': ('gauge', (), 'Working set of the kubepods cgroup.'),
    'nodealloc_memory_kubepods_limit_bytes': ('gauge', (), 'Memory limit of the kubepods cgroup, as the kernel holds it.'),
    'nodealloc_memory_reserved_bytes': (
        'gauge', (), 'Memory kept from the pods: MemTotal - kubepods limit (kubeReserved + systemReserved + pre-allocated huge pages).'),
    'nodealloc_memory_headroom_bytes': (
        'gauge', (), 'Reserved memory not used outside the pods now: reserved - non-pod (negative: daemons eat into the pods).'),
    'nodealloc_memory_allocatable_bytes': (
        'gauge', (), 'Allocatable memory: kubepods limit - hard eviction threshold (the last decision, else the kubelet default 100Mi).'),
    'nodealloc_memory_planned_headroom_bytes': (
        'gauge', (), 'Headroom above the non-pod peak that the reservation last applied by the role was sized with.'),
    'nodealloc_memory_near_reservation': (
        'gauge', (), '1 when non-pod memory has used up the planned headroom (non-pod >= applied reservation - planned '
        'headroom): a new peak the reservation was not sized for; apply sooner than the next planned run.'),
    'nodealloc_memory_recommended_reserved_bytes': (
        'gauge', (), 'Memory the latest recommendation for this node would keep from the pods: MemTotal - its kubepods memory limit.'),
    'nodealloc_kubelet_reserved_memory_bytes': (
        'gauge', ('reservation', 'source'),
        'kubeReserved (reservation="kube") / systemReserved (reservation="system") memory: configured (source="current") '
        'and recommended (source="recommended").'),
    'nodealloc_kubelet_reserved_cpu_cores': (
        'gauge', ('reservation', 'source'),
        'kubeReserved (reservation="kube") / systemReserved (reservation="system") CPU: configured (source="current") '
        'and recommended (source="recommended").'),
    'nodealloc_cpu_capacity_cores': ('gauge', (), 'CPUs the node offers.'),
    'nodealloc_cpu_non_pod_cores': (
        'gauge', (), 'CPU used outside the pods, the average over the measurement period (nodealloc_cpu_period_seconds, '
        'ending when measured): the module\'s sample, or the time since the sampler\'s previous run.'),
    'nodealloc_cpu_period_seconds': ('gauge', (), 'Length of the period nodealloc_cpu_non_pod_cores is the average of.'),
    'nodealloc_sampler_cpu_cores': (
        'gauge', (), 'CPU the sampler itself used over the measurement period, left out of nodealloc_cpu_non_pod_cores.'),
    'nodealloc_cpu_non_pod_window_cores': ('gauge', ('percentile',), 'Non-pod CPU at the policy percentile over the history window.'),
    'nodealloc_cpu_allocatable_cores': ('gauge', (), 'Allocatable CPU read back from the kubepods cpu.shares / cpu.weight.'),
    'nodealloc_cpu_reserved_cores': ('gauge', (), 'CPU kept from the pods: capacity - allocatable.'),
    'nodealloc_cpu_headroom_cores': ('gauge', (), 'Reserved CPU not used outside the pods: reserved - non-pod.'),
    'nodealloc_pods': ('gauge', ('qos',), 'Pod cgroups under kubepods, by QoS class.'),
    'nodealloc_pods_without_memory_limit': ('gauge', (), 'Pods with no memory limit (bounded only by kubepods).'),
    'nodealloc_pod_memory_limits_bytes': ('gauge', (), 'Sum of the memory limits of the pods that have one.'),
    'nodealloc_pod_cpu_requests_cores': ('gauge', (), 'Sum of the pods\' CPU requests, read back from cpu.shares / cpu.weight.'),
    'nodealloc_pod_memory_limits_kubepods_ratio': (
        'gauge', (), 'Sum of pod memory limits / kubepods limit: above 1, pods together may use more than kubepods allows.'),
    'nodealloc_pressure_stall_seconds_total': (
        'counter', ('cgroup', 'kind', 'resource'), 'PSI stall time of a cgroup (cgroup v2 only).'),
    'nodealloc_decision': ('gauge', ('action',), 'The latest reservations decision for this node: 1 for its action.'),
    'nodealloc_decision_timestamp_seconds': ('gauge', (), 'When the latest decision was made (Unix time).'),
    'nodealloc_history_samples': ('gauge', (), 'Valid samples in the history window.'),
    'nodealloc_history_rejected_samples': ('gauge', (), 'History lines rejected as invalid since the sampler state began.'),
    'nodealloc_sample_recorded': (
        'gauge', (), '1 when this run appended its reading to the history (0 also while a nodealloc step changes the '
        'node: such a reading is not recorded).'),
    'nodealloc_sample_timestamp_seconds': ('gauge', (), 'When these figures were measured (Unix time).'),
}
ACTIONS = ('keep', 'increase', 'decrease')


def _escape(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _family(lines, name, samples):
    """Append family ``name`` of ``FAMILIES`` with ``samples`` (``[(labels, value)]``); nothing when there are none."""
    kind, label_names, help_text = FAMILIES[name]
    if not samples:
        return
    lines.append('# HELP %s %s' % (name, help_text))
    lines.append('# TYPE %s %s' % (name, kind))
    for labels, value in samples:
        if tuple(sorted(labels)) != label_names:
            raise ValueError('%s takes the labels %s, not %s' % (name, label_names, tuple(sorted(labels))))
        label_text = ','.join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items()))
        lines.append('%s%s %s' % (name, '{%s}' % label_text if label_text else '', repr(float(value))
                                  if isinstance(value, float) else value))


def _swap_families(lines, memory, swap_control):
    """The swap families, the same in both writers: ``memory`` from _measure.memory, ``swap_control`` from _swap.may_swap
    (the module's through _swap.control); without ``swap_control`` the may-swap family is left out."""
    _family(lines, 'nodealloc_memory_non_pod_swap_bytes', [({}, memory.get('non_pod_swap_bytes', 0))])
    if swap_control:
        _family(lines, 'nodealloc_swap_system_slice_may_swap', [({}, int(bool(swap_control['system_slice_may_swap'])))])


def render(facts, now):
    """The module's textfile (``textfile_path``) for one node's facts: the families its measurement and recommendation give."""
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable  # not in the sampler's path
    memory, cpu, recommendation = facts['memory'], facts['cpu'], facts['recommendation']
    current = facts.get('current') or {}
    lines = []
    _family(lines, 'nodealloc_memory_capacity_bytes', [({}, memory['mem_total_bytes'])])
    _family(lines, 'nodealloc_memory_non_pod_bytes', [({}, memory['non_pod_bytes'])])
    _swap_families(lines, memory, facts.get('swap_control'))
    _family(lines, 'nodealloc_memory_kubepods_working_set_bytes', [({}, memory['kubepods_working_set_bytes'])])
    _family(lines, 'nodealloc_memory_recommended_reserved_bytes',
            [({}, memory['mem_total_bytes'] - recommendation['kubepods_memory_limit_bytes'])])
    reserved_memory, reserved_cpu = [], []
    for source, reservations in (('recommended', recommendation), ('current', current)):
        if not reservations:
            continue
        for kind in ('kube', 'system'):
            values = reservations.get('%s_reserved' % kind) or {}
            labels = {'source': source, 'reservation': kind}
            reserved_memory.append((labels, _node_allocatable.reserved_amount(values, 'memory', 0)))
            reserved_cpu.append((labels, _node_allocatable.reserved_amount(values, 'cpu', -3) / 1000.0))
    _family(lines, 'nodealloc_kubelet_reserved_memory_bytes', reserved_memory)
    _family(lines, 'nodealloc_kubelet_reserved_cpu_cores', reserved_cpu)
    _family(lines, 'nodealloc_cpu_capacity_cores', [({}, cpu['capacity_millicores'] / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_cores', [({}, cpu['non_pod_millicores'] / 1000.0)])
    if cpu.get('sample_seconds') is not None:
        _family(lines, 'nodealloc_cpu_period_seconds', [({}, float(cpu['sample_seconds']))])
    decision = facts.get('decision') or {}
    if decision.get('action'):
        _family(lines, 'nodealloc_decision', [({'action': action}, 1 if decision['action'] == action else 0) for action in ACTIONS])
        _family(lines, 'nodealloc_decision_timestamp_seconds', [({}, float(int(now)))])
    _family(lines, 'nodealloc_history_samples', [({}, (facts.get('history') or {}).get('samples', 1))])
    _family(lines, 'nodealloc_sample_timestamp_seconds', [({}, float(int(now)))])
    return '\n'.join(lines) + '\n'


def render_sampler(figures):
    """The textfile the sampler writes each run (see _sample_once.run for ``figures``)."""
    memory, cpu = figures['memory'], figures['cpu']
    percentile = {'percentile': '%g' % figures['percentile']}
    lines = []
    _family(lines, 'nodealloc_memory_capacity_bytes',
            [({}, memory['mem_total_bytes'])])
    _family(lines, 'nodealloc_memory_non_pod_bytes',
            [({}, memory['non_pod_bytes'])])
    _swap_families(lines, memory, figures.get('swap_control'))
    _family(lines, 'nodealloc_memory_non_pod_window_bytes',
            [(percentile, figures['window_non_pod_bytes'])])
    _family(lines, 'nodealloc_memory_kubepods_working_set_bytes',
            [({}, memory['kubepods_working_set_bytes'])])
    limit = figures['kubepods_memory_limit_bytes']
    if limit is not None:
        reserved = memory['mem_total_bytes'] - limit
        _family(lines, 'nodealloc_memory_kubepods_limit_bytes',
                [({}, limit)])
        _family(lines, 'nodealloc_memory_reserved_bytes',
                [({}, reserved)])
        _family(lines, 'nodealloc_memory_headroom_bytes',
                [({}, reserved - memory['non_pod_bytes'])])
        eviction = ((figures.get('decision') or {}).get('eviction_hard_memory_bytes')
                    or _defaults.EVICTION_HARD_MEMORY_AVAILABLE_BYTES)
        _family(lines, 'nodealloc_memory_allocatable_bytes',
                [({}, limit - eviction)])
    applied = figures.get('reservation') or {}
    if figures.get('near_reservation') is not None:
        _family(lines, 'nodealloc_memory_planned_headroom_bytes',
                [({}, applied['memory_headroom_bytes'])])
        _family(lines, 'nodealloc_memory_near_reservation',
                [({}, 1 if figures['near_reservation'] else 0)])
    _family(lines, 'nodealloc_cpu_capacity_cores', [({}, cpu['capacity_millicores'] / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_cores',
            [({}, cpu['non_pod_millicores'] / 1000.0)])
    if cpu.get('sample_seconds') is not None:
        _family(lines, 'nodealloc_cpu_period_seconds', [({}, float(cpu['sample_seconds']))])
    _family(lines, 'nodealloc_sampler_cpu_cores',
            [({}, cpu.get('sampler_millicores', 0) / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_window_cores',
            [(percentile, figures['window_non_pod_millicores'] / 1000.0)])
    allocatable_m = figures['kubepods_cpu_allocatable_millicores']
    if allocatable_m:
        _family(lines, 'nodealloc_cpu_allocatable_cores',
                [({}, allocatable_m / 1000.0)])
        _family(lines, 'nodealloc_cpu_reserved_cores',
                [({}, (cpu['capacity_millicores'] - allocatable_m) / 1000.0)])
        _family(lines, 'nodealloc_cpu_headroom_cores',
                [({}, (cpu['capacity_millicores'] - allocatable_m - cpu['non_pod_millicores']) / 1000.0)])
    audit = figures.get('overcommit')
    if audit:
        _family(lines, 'nodealloc_pods',
                [({'qos': qos}, count) for qos, count in sorted(audit['pods_by_qos'].items())])
        _family(lines, 'nodealloc_pods_without_memory_limit',
                [({}, audit['pods_without_memory_limit'])])
        _family(lines, 'nodealloc_pod_memory_limits_bytes',
                [({}, audit['memory_limits_sum_bytes'])])
        _family(lines, 'nodealloc_pod_cpu_requests_cores',
                [({}, audit['cpu_requests_sum_millicores'] / 1000.0)])
        if audit['kubepods_memory_limit_bytes']:
            _family(lines, 'nodealloc_pod_memory_limits_kubepods_ratio',
                    [({}, round(audit['memory_limits_sum_bytes'] / float(audit['kubepods_memory_limit_bytes']), 6))])
    _family(lines, 'nodealloc_pressure_stall_seconds_total',
            [({'cgroup': c, 'resource': r, 'kind': k}, v) for (c, r, k), v in sorted(figures['pressure'].items())])
    decision = figures.get('decision') or {}
    if decision.get('action'):
        _family(lines, 'nodealloc_decision',
                [({'action': action}, 1 if decision['action'] == action else 0) for action in ACTIONS])
        if decision.get('recommended_kubepods_memory_limit_bytes'):
            _family(lines, 'nodealloc_memory_recommended_reserved_bytes',
                    [({}, memory['mem_total_bytes'] - decision['recommended_kubepods_memory_limit_bytes'])])
        if decision.get('time'):
            _family(lines, 'nodealloc_decision_timestamp_seconds',
                    [({}, float(decision['time']))])
    _family(lines, 'nodealloc_history_samples', [({}, figures['window_samples'])])
    _family(lines, 'nodealloc_history_rejected_samples',
            [({}, figures['rejected_samples'])])
    _family(lines, 'nodealloc_sample_recorded',
            [({}, 1 if figures['recorded'] else 0)])
    _family(lines, 'nodealloc_sample_timestamp_seconds',
            [({}, round(float(figures['time']), 3))])
    return '\n'.join(lines) + '\n'
