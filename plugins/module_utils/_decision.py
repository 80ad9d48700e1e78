# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Whether a recommendation is worth a kubelet restart: keep, increase or decrease, and why.

A restart costs API traffic and a window in which the kubepods limit is stale
(the PoC's first caveat), so small differences are kept: the recommended total
(kubeReserved + systemReserved) must differ from the current total by more
than ``change_threshold_percent`` of the current total and more than the
absolute minimum, for memory or for CPU.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _node_allocatable, _option_specs

DEFAULTS = _option_specs.defaults(('change_threshold_percent', 'change_threshold_min_bytes',
                                   'change_threshold_min_millicores'))


def _total(reservations, resource, scale):
    return sum(_node_allocatable.reserved_amount(r, resource, scale) for r in reservations)


def decide(current, recommendation, settings=None, basis=None):
    """Return {'action': keep|increase|decrease, 'reasons': [...], 'memory_delta_bytes', 'cpu_delta_millicores'}."""
    options = dict(DEFAULTS)
    options.update({k: v for k, v in (settings or {}).items() if k in DEFAULTS and v is not None})
    current = current or {}
    now_memory = _total((current.get('kube_reserved'), current.get('system_reserved')), 'memory', 0)
    now_cpu = _total((current.get('kube_reserved'), current.get('system_reserved')), 'cpu', -3)
    new_memory = _total((recommendation['kube_reserved'], recommendation['system_reserved']), 'memory', 0)
    new_cpu = _total((recommendation['kube_reserved'], recommendation['system_reserved']), 'cpu', -3)
    memory_delta, cpu_delta = new_memory - now_memory, new_cpu - now_cpu
    memory_threshold = max(now_memory * options['change_threshold_percent'] / 100.0,
                           options['change_threshold_min_bytes'])
    cpu_threshold = max(now_cpu * options['change_threshold_percent'] / 100.0,
                        options['change_threshold_min_millicores'])
    reasons = []
    memory_moves = abs(memory_delta) > memory_threshold
    cpu_moves = abs(cpu_delta) > cpu_threshold
    reasons.append('memory: reserved now %d B, recommended %d B, difference %+d B %s the threshold %d B'
                   % (now_memory, new_memory, memory_delta, 'beyond' if memory_moves else 'within',
                      memory_threshold))
    reasons.append('cpu: reserved now %dm, recommended %dm, difference %+dm %s the threshold %dm'
                   % (now_cpu, new_cpu, cpu_delta, 'beyond' if cpu_moves else 'within', cpu_threshold))
    if (memory_moves and memory_delta > 0) or (cpu_moves and cpu_delta > 0):
        action = 'increase'
    elif memory_moves or cpu_moves:
        action = 'decrease'
        stabilization = (basis or {}).get('stabilization_seconds') or 0
        span = (basis or {}).get('span_seconds') or 0
        if span < stabilization:
            # Increases act at once; a decrease waits until the history covers the stabilization window.
            action = 'keep'
            reasons.append('decrease deferred: the history covers %.1f h of the %.1f h stabilization window'
                           % (span / 3600.0, stabilization / 3600.0))
    else:
        action = 'keep'
    return {'action': action, 'reasons': reasons, 'memory_delta_bytes': memory_delta,
            'cpu_delta_millicores': cpu_delta, 'settings': options}
