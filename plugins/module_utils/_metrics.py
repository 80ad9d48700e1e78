# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The facts as Prometheus metrics for node_exporter's textfile collector.

Names follow the Prometheus conventions (base units in the name: ``_bytes``, ``_cores``,
``_seconds``, ``_ratio``; one HELP and one TYPE line per family); everything is a gauge but
the PSI stall totals (counters, ``_total``). ``render`` is the module's view (with the
recommendation), ``render_sampler`` the sampler's, written on every node each minute; the alert
rules and the dashboard in monitoring/ use the sampler's names.
"""

from __future__ import annotations


def _escape(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _family(lines, name, help_text, samples, kind='gauge'):
    if not samples:
        return
    lines.append('# HELP %s %s' % (name, help_text))
    lines.append('# TYPE %s %s' % (name, kind))
    for labels, value in samples:
        label_text = ','.join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items()))
        lines.append('%s%s %s' % (name, '{%s}' % label_text if label_text else '', repr(float(value))
                                  if isinstance(value, float) else value))


def render(facts, now):
    """The textfile content for one node's facts (the module's result)."""
    from ansible_collections.nodealloc.kubelet.plugins.module_utils import _node_allocatable  # not in the sampler's path
    memory, cpu, recommendation = facts['memory'], facts['cpu'], facts['recommendation']
    current = facts.get('current') or {}
    lines = []
    _family(lines, 'nodealloc_memory_capacity_bytes', 'Node memory capacity (MemTotal).',
            [({}, memory['mem_total_bytes'])])
    _family(lines, 'nodealloc_memory_non_pod_bytes',
            'Memory used outside the pods: MemTotal - MemAvailable - kubepods working set.',
            [({}, memory['non_pod_bytes'])])
    _family(lines, 'nodealloc_memory_kubepods_working_set_bytes', 'Working set of the kubepods cgroup.',
            [({}, memory['kubepods_working_set_bytes'])])
    _family(lines, 'nodealloc_cpu_capacity_cores', 'CPUs the node offers.', [({}, cpu['capacity_millicores'] / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_cores', 'CPU used outside the pods over the sample.',
            [({}, cpu['non_pod_millicores'] / 1000.0)])
    reserved_memory, reserved_cpu = [], []
    for source, reservations in (('recommended', recommendation), ('current', current)):
        if not reservations:
            continue
        for kind in ('kube', 'system'):
            values = reservations.get('%s_reserved' % kind) or {}
            labels = {'source': source, 'reservation': kind}
            reserved_memory.append((labels, _node_allocatable.reserved_amount(values, 'memory', 0)))
            reserved_cpu.append((labels, _node_allocatable.reserved_amount(values, 'cpu', -3) / 1000.0))
    _family(lines, 'nodealloc_reserved_memory_bytes', 'kubeReserved / systemReserved memory, current and recommended.',
            reserved_memory)
    _family(lines, 'nodealloc_reserved_cpu_cores', 'kubeReserved / systemReserved CPU, current and recommended.',
            reserved_cpu)
    _family(lines, 'nodealloc_recommended_kubepods_memory_limit_bytes',
            'The kubepods memory limit the recommendation would give (capacity - kubeReserved - systemReserved).',
            [({}, recommendation['kubepods_memory_limit_bytes'])])
    decision = facts.get('decision') or {}
    _family(lines, 'nodealloc_decision', 'The decision for this node: 1 for the action taken or proposed.',
            [({'action': action}, 1 if decision.get('action') == action else 0)
             for action in ('keep', 'increase', 'decrease')])
    _family(lines, 'nodealloc_history_samples', 'Samples in the history window the recommendation used.',
            [({}, (facts.get('history') or {}).get('samples', 1))])
    _family(lines, 'nodealloc_last_run_timestamp_seconds', 'When these figures were measured (Unix time).',
            [({}, float(int(now)))])
    return '\n'.join(lines) + '\n'


def render_sampler(figures):
    """The textfile the sampler writes each run (see _sampler.run for ``figures``)."""
    memory, cpu = figures['memory'], figures['cpu']
    percentile = {'percentile': '%g' % figures['percentile']}
    lines = []
    _family(lines, 'nodealloc_memory_capacity_bytes', 'Node memory capacity (MemTotal).',
            [({}, memory['mem_total_bytes'])])
    _family(lines, 'nodealloc_memory_non_pod_bytes',
            'Memory used outside the pods now: MemTotal - MemAvailable - kubepods working set.',
            [({}, memory['non_pod_bytes'])])
    _family(lines, 'nodealloc_memory_non_pod_window_bytes',
            'Non-pod memory at the policy percentile over the history window (1 MiB buckets, rounded up).',
            [(percentile, figures['window_non_pod_bytes'])])
    _family(lines, 'nodealloc_memory_kubepods_working_set_bytes', 'Working set of the kubepods cgroup.',
            [({}, memory['kubepods_working_set_bytes'])])
    limit = figures['kubepods_memory_limit_bytes']
    if limit is not None:
        reserved = memory['mem_total_bytes'] - limit
        _family(lines, 'nodealloc_memory_kubepods_limit_bytes', 'Memory limit of the kubepods cgroup, as the kernel holds it.',
                [({}, limit)])
        _family(lines, 'nodealloc_memory_reserved_bytes',
                'Memory kept from the pods: MemTotal - kubepods limit (kubeReserved + systemReserved + pre-allocated huge pages).',
                [({}, reserved)])
        _family(lines, 'nodealloc_memory_headroom_bytes',
                'Reserved memory not used outside the pods now: reserved - non-pod (negative: daemons eat into the pods).',
                [({}, reserved - memory['non_pod_bytes'])])
        eviction = ((figures.get('decision') or {}).get('eviction_hard_memory_bytes') or 100 * 1024 * 1024)
        _family(lines, 'nodealloc_memory_allocatable_bytes',
                'Allocatable memory: kubepods limit - hard eviction threshold (the last decision, else the kubelet default 100Mi).',
                [({}, limit - eviction)])
    applied = figures.get('reservation') or {}
    if figures.get('near_reservation') is not None:
        _family(lines, 'nodealloc_memory_planned_headroom_bytes',
                'Headroom above the non-pod peak that the reservation last applied by the role was sized with.',
                [({}, applied['memory_headroom_bytes'])])
        _family(lines, 'nodealloc_memory_near_reservation',
                '1 when non-pod memory has used up the planned headroom (non-pod >= applied reservation - planned '
                'headroom): a new peak the reservation was not sized for; apply sooner than the next planned run.',
                [({}, 1 if figures['near_reservation'] else 0)])
    _family(lines, 'nodealloc_cpu_capacity_cores', 'CPUs the node offers.', [({}, cpu['capacity_millicores'] / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_cores', 'CPU used outside the pods since the previous run.',
            [({}, cpu['non_pod_millicores'] / 1000.0)])
    _family(lines, 'nodealloc_sampler_cpu_cores',
            'CPU the sampler itself used since the previous run, left out of nodealloc_cpu_non_pod_cores.',
            [({}, cpu.get('sampler_millicores', 0) / 1000.0)])
    _family(lines, 'nodealloc_cpu_non_pod_window_cores',
            'Non-pod CPU at the policy percentile over the history window.',
            [(percentile, figures['window_non_pod_millicores'] / 1000.0)])
    allocatable_m = figures['kubepods_cpu_allocatable_millicores']
    if allocatable_m:
        _family(lines, 'nodealloc_cpu_allocatable_cores', 'Allocatable CPU read back from the kubepods cpu.shares / cpu.weight.',
                [({}, allocatable_m / 1000.0)])
        _family(lines, 'nodealloc_cpu_reserved_cores', 'CPU kept from the pods: capacity - allocatable.',
                [({}, (cpu['capacity_millicores'] - allocatable_m) / 1000.0)])
        _family(lines, 'nodealloc_cpu_headroom_cores', 'Reserved CPU not used outside the pods: reserved - non-pod.',
                [({}, (cpu['capacity_millicores'] - allocatable_m - cpu['non_pod_millicores']) / 1000.0)])
    audit = figures.get('overcommit')
    if audit:
        _family(lines, 'nodealloc_pods', 'Pod cgroups under kubepods, by QoS class.',
                [({'qos': qos}, count) for qos, count in sorted(audit['pods_by_qos'].items())])
        _family(lines, 'nodealloc_pods_without_memory_limit', 'Pods with no memory limit (bounded only by kubepods).',
                [({}, audit['pods_without_memory_limit'])])
        _family(lines, 'nodealloc_pod_memory_limits_bytes', 'Sum of the memory limits of the pods that have one.',
                [({}, audit['memory_limits_sum_bytes'])])
        _family(lines, 'nodealloc_pod_cpu_requests_cores', 'Sum of the pods\' CPU requests, read back from cpu.shares / cpu.weight.',
                [({}, audit['cpu_requests_sum_millicores'] / 1000.0)])
        if audit['kubepods_memory_limit_bytes']:
            _family(lines, 'nodealloc_pod_memory_limits_kubepods_ratio',
                    'Sum of pod memory limits / kubepods limit: above 1, pods together may use more than kubepods allows.',
                    [({}, round(audit['memory_limits_sum_bytes'] / float(audit['kubepods_memory_limit_bytes']), 6))])
    _family(lines, 'nodealloc_pressure_stall_seconds_total', 'PSI stall time of a cgroup (cgroup v2 only).',
            [({'cgroup': c, 'resource': r, 'kind': k}, v) for (c, r, k), v in sorted(figures['pressure'].items())],
            kind='counter')
    decision = figures.get('decision') or {}
    if decision.get('action'):
        _family(lines, 'nodealloc_decision', 'The last decision of the reservations role: 1 for its action.',
                [({'action': action}, 1 if decision['action'] == action else 0) for action in ('keep', 'increase', 'decrease')])
        if decision.get('recommended_kubepods_memory_limit_bytes'):
            _family(lines, 'nodealloc_memory_recommended_reserved_bytes',
                    'Memory the last recommendation would keep from the pods: MemTotal - its kubepods limit.',
                    [({}, memory['mem_total_bytes'] - decision['recommended_kubepods_memory_limit_bytes'])])
        if decision.get('time'):
            _family(lines, 'nodealloc_decision_timestamp_seconds', 'When the last decision was made (Unix time).',
                    [({}, float(decision['time']))])
    _family(lines, 'nodealloc_history_samples', 'Valid samples in the history window.', [({}, figures['window_samples'])])
    _family(lines, 'nodealloc_history_rejected_samples', 'History lines rejected as invalid since the sampler state began.',
            [({}, figures['rejected_samples'])])
    _family(lines, 'nodealloc_sample_recorded', '1 when this run appended its reading to the history (0 also while a '
            'nodealloc step changes the node: such a reading is not recorded).',
            [({}, 1 if figures['recorded'] else 0)])
    _family(lines, 'nodealloc_sample_timestamp_seconds', 'When the sampler measured these figures (Unix time).',
            [({}, round(float(figures['time']), 3))])
    return '\n'.join(lines) + '\n'
