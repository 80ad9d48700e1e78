# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The facts as Prometheus metrics for node_exporter's textfile collector.

Names follow the Prometheus conventions (base units in the name: ``_bytes``, ``_cores``,
``_seconds``; one HELP and one TYPE line per family); everything is a gauge.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _node_allocatable


def _escape(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _family(lines, name, help_text, samples):
    lines.append('# HELP %s %s' % (name, help_text))
    lines.append('# TYPE %s gauge' % name)
    for labels, value in samples:
        label_text = ','.join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items()))
        lines.append('%s%s %s' % (name, '{%s}' % label_text if label_text else '', repr(float(value))
                                  if isinstance(value, float) else value))


def render(facts, now):
    """The textfile content for one node's facts (the module's result)."""
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
