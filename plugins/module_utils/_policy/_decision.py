# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Whether a recommendation is worth a kubelet restart: keep, increase or decrease, and why.

A restart costs API traffic and a window in which the kubepods limit is stale
(the PoC's first caveat), so small differences are kept: the recommended total
(kubeReserved + systemReserved) must differ from the current total by more
than ``change_threshold_percent`` of the current total and more than the
absolute minimum (bytes for memory, millicores for CPU) to decrease; an increase
needs only to pass the absolute minimum, since the percentage would otherwise
eat into the headroom that keeps the node out of a global OOM.

Memory and CPU decide apart: each keeps, increases or decreases on its own
threshold, and each one's decrease waits on its own for the stabilization
window. The values to write (``kube_reserved`` / ``system_reserved`` in the
result) take the recommendation only for a resource that moves; a resource that
keeps is written back as it is now, so a CPU increase never carries an early
memory decrease through (and vice versa). With ``allow_decrease`` false a
resource that would decrease keeps (a run started to raise the reservation).

CPU is compressible (_cpu_sustained): a CPU increase while memory keeps restarts the kubelet only when the history
shows the need sustained: the 95th percentile of the node's CPU readings over the last reaction time, plus the
recommendation's CPU headroom, must itself pass the increase rule above; on a history too short to judge it
(less than a reaction time, or fewer than 20 readings in it) the CPU increase is deferred, the reason saying when
it is reconsidered. One short sample (the module's own reading is 5 s) never restarts a kubelet for CPU. When
memory moves anyway (the kubelet restarts either way), CPU moves with it to the recommended value. A recommendation
that does not rest on the measurement (``policy`` a vendor formula) is not held back.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_sustained

DEFAULTS = _option_specs.defaults(('change_threshold_percent', 'change_threshold_min_bytes',
                                   'change_threshold_min_millicores', 'allow_decrease'))


def _total(reservations, resource, scale):
    return sum(_node_allocatable.reserved_amount(r, resource, scale) for r in reservations)


def _decide_resource(name, now, new, threshold, minimum, unit, basis, headroom=0):
    """One resource's action and the reasons; a decrease is deferred until the history spans the window.

    An increase within the minimum still acts when what is reserved now leaves less than half the
    recommended headroom above the figure the recommendation rests on (``new - headroom``).
    """
    delta = new - now
    moves = abs(delta) > threshold
    if 0 < delta <= minimum and headroom and now - (new - headroom) < headroom / 2.0:
        return 'increase', delta, ['%s: reserved now %d%s leaves %d%s above the measured need, less than half the '
                                   'headroom %d%s: increase to %d%s' % (name, now, unit, now - (new - headroom), unit,
                                                                        headroom, unit, new, unit)]
    if delta > 0:
        reasons = ['%s: reserved now %d%s, recommended %d%s, increase %+d%s %s the minimum %d%s'
                   % (name, now, unit, new, unit, delta, unit, 'beyond' if delta > minimum else 'within', minimum,
                      unit)]
    else:
        reasons = ['%s: reserved now %d%s, recommended %d%s, difference %+d%s %s the threshold %d%s'
                   % (name, now, unit, new, unit, delta, unit, 'beyond' if moves else 'within', threshold, unit)]
    if delta > 0 and delta > minimum:
        # An increase acts beyond the absolute minimum alone: the percentage would eat into the headroom
        # the recommendation sized to keep the node out of a global OOM.
        return 'increase', delta, reasons
    if not moves:
        return 'keep', delta, reasons
    stabilization = (basis or {}).get('stabilization_seconds') or 0
    span = (basis or {}).get('span_seconds') or 0
    if span < stabilization:
        # Increases act at once; a decrease waits until the history covers the stabilization window.
        reasons.append('%s decrease deferred: the history covers %.1f h of the %.1f h stabilization window'
                       % (name, span / 3600.0, stabilization / 3600.0))
        return 'keep', delta, reasons
    return 'decrease', delta, reasons


def _sustained_cpu(now, new, threshold, minimum, recommendation, basis, reasons):
    """A CPU increase while memory keeps: 'increase' only when the sustained need asks for it (module doc).

    Returns (action, reasons): 'keep' with the reason why and when it is reconsidered, or 'increase' with the
    sustained need that confirms it.
    """
    if ((recommendation.get('settings') or {}).get('policy') or 'measured') != 'measured':
        return 'increase', reasons  # a vendor formula's CPU rests on no sample
    sustained = (basis or {}).get('cpu_sustained')
    deferred = _cpu_sustained.deferral(sustained)
    if deferred:
        return 'keep', reasons + [deferred]
    headroom = recommendation.get('cpu_headroom_millicores') or 0
    target = _cpu_sustained.target_millicores(sustained, new, headroom)
    action, _delta, _reasons = _decide_resource('cpu', now, target, threshold, minimum, 'm', basis, headroom)
    if action == 'increase':
        return 'increase', reasons + ['cpu increase sustained: %s; with the headroom %dm it asks for %dm'
                                      % (_cpu_sustained.describe(sustained), headroom, target)]
    return 'keep', reasons + ['cpu increase not made: CPU is compressible and the need is not sustained: %s; with '
                              'the headroom %dm it asks for %dm against %dm reserved now; reconsidered at the next '
                              'run, or made with the next memory change' % (_cpu_sustained.describe(sustained),
                                                                            headroom, target, now)]


def _to_write(current, recommendation, key, actions):
    """The map to write for ``key``: today's map, with each moving resource's recommended value."""
    written = dict((current or {}).get(key) or {})
    for resource, action in actions.items():
        if action == 'keep':
            continue
        value = (recommendation.get(key) or {}).get(resource)
        if value is None:
            written.pop(resource, None)
        else:
            written[resource] = value
    return written


def _ephemeral_storage_action(current, recommendation, options, basis):
    """ephemeral-storage's own action where the recommendation carries it (option ``reserve_ephemeral_storage``,
    _policy/_ephemeral_storage.carry_into), else None: today's value is then written back as it is. Memory's rule in
    bytes: an increase beyond change_threshold_min_bytes acts, a decrease beyond the threshold waits for the
    stabilization window."""
    maps = (recommendation['kube_reserved'], recommendation['system_reserved'])
    if not any('ephemeral-storage' in (m or {}) for m in maps):
        return None
    now = _total((current.get('kube_reserved'), current.get('system_reserved')), 'ephemeral-storage', 0)
    new = _total(maps, 'ephemeral-storage', 0)
    threshold = max(now * options['change_threshold_percent'] / 100.0, options['change_threshold_min_bytes'])
    action, _delta, reasons = _decide_resource('ephemeral-storage', now, new, threshold,
                                               options['change_threshold_min_bytes'], ' B', basis)
    if action == 'decrease' and not options['allow_decrease']:
        action = 'keep'
        reasons.append('ephemeral-storage decrease not made: allow_decrease is false')
    return {'action': action, 'now_bytes': now, 'recommended_bytes': new, 'threshold_bytes': int(threshold),
            'reasons': reasons}


# A pid change smaller than this many tasks restarts no kubelet (the recommendation moves in hundreds: _policy/_pids).
CHANGE_THRESHOLD_MIN_PIDS = 100


def _pids_action(current, recommendation, options, basis):
    """pid's own action where the recommendation carries it (option ``reserve_pids``, _policy/_pids.carry_into), else
    None: today's value is then written back as it is. Memory's rule in tasks: an increase beyond
    CHANGE_THRESHOLD_MIN_PIDS acts, a decrease beyond the threshold waits for the stabilization window."""
    maps = (recommendation['kube_reserved'], recommendation['system_reserved'])
    if not any('pid' in (m or {}) for m in maps):
        return None
    now = _total((current.get('kube_reserved'), current.get('system_reserved')), 'pid', 0)
    new = _total(maps, 'pid', 0)
    threshold = max(now * options['change_threshold_percent'] / 100.0, CHANGE_THRESHOLD_MIN_PIDS)
    action, _delta, reasons = _decide_resource('pid', now, new, threshold, CHANGE_THRESHOLD_MIN_PIDS, '', basis)
    if action == 'decrease' and not options['allow_decrease']:
        action = 'keep'
        reasons.append('pid decrease not made: allow_decrease is false')
    return {'action': action, 'now': now, 'recommended': new, 'threshold': int(threshold), 'reasons': reasons}


def decide(current, recommendation, settings=None, basis=None):
    """Decide per resource and overall.

    Returns {'action': keep|increase|decrease (increase if either resource increases, else decrease if
    either decreases), 'memory': {...}, 'cpu': {...} (each with its own action), 'kube_reserved' and
    'system_reserved' (the maps to write), 'reasons', 'memory_delta_bytes', 'cpu_delta_millicores'}.
    """
    options = _option_specs.with_defaults(settings, DEFAULTS)
    current = current or {}
    now_memory = _total((current.get('kube_reserved'), current.get('system_reserved')), 'memory', 0)
    now_cpu = _total((current.get('kube_reserved'), current.get('system_reserved')), 'cpu', -3)
    new_memory = _total((recommendation['kube_reserved'], recommendation['system_reserved']), 'memory', 0)
    new_cpu = _total((recommendation['kube_reserved'], recommendation['system_reserved']), 'cpu', -3)
    memory_threshold = max(now_memory * options['change_threshold_percent'] / 100.0,
                           options['change_threshold_min_bytes'])
    cpu_threshold = max(now_cpu * options['change_threshold_percent'] / 100.0,
                        options['change_threshold_min_millicores'])
    memory_action, memory_delta, memory_reasons = _decide_resource(
        'memory', now_memory, new_memory, memory_threshold, options['change_threshold_min_bytes'], ' B', basis,
        recommendation.get('memory_headroom_bytes') or 0)
    cpu_action, cpu_delta, cpu_reasons = _decide_resource(
        'cpu', now_cpu, new_cpu, cpu_threshold, options['change_threshold_min_millicores'], 'm', basis,
        recommendation.get('cpu_headroom_millicores') or 0)
    if not options['allow_decrease']:
        # A run started to raise the reservation (the near-reservation alert, on one node) never lowers it.
        if memory_action == 'decrease':
            memory_action = 'keep'
            memory_reasons.append('memory decrease not made: allow_decrease is false')
        if cpu_action == 'decrease':
            cpu_action = 'keep'
            cpu_reasons.append('cpu decrease not made: allow_decrease is false')
    if cpu_action == 'increase' and memory_action == 'keep':
        # CPU alone would restart the kubelet: only for a need the history shows sustained (module doc).
        cpu_action, cpu_reasons = _sustained_cpu(now_cpu, new_cpu, cpu_threshold,
                                                 options['change_threshold_min_millicores'], recommendation, basis,
                                                 cpu_reasons)
    actions = {'memory': memory_action, 'cpu': cpu_action}
    ephemeral = _ephemeral_storage_action(current, recommendation, options, basis)
    if ephemeral is not None:
        actions['ephemeral-storage'] = ephemeral['action']
        cpu_reasons = cpu_reasons + ephemeral.pop('reasons')
    pids = _pids_action(current, recommendation, options, basis)
    if pids is not None:
        actions['pid'] = pids['action']
        cpu_reasons = cpu_reasons + pids.pop('reasons')
    if 'increase' in actions.values():
        action = 'increase'
    elif 'decrease' in actions.values():
        action = 'decrease'
    else:
        action = 'keep'
    reasons = memory_reasons + cpu_reasons
    kept = [name for name, value in sorted(actions.items()) if value == 'keep']
    if action != 'keep' and kept:
        reasons.append('%s kept as reserved now; only %s changes'
                       % (' and '.join(kept), ' and '.join(n for n in sorted(actions) if n not in kept)))
    return {'action': action, 'reasons': reasons, 'memory_delta_bytes': memory_delta, 'ephemeral_storage': ephemeral, 'pids': pids,
            'cpu_delta_millicores': cpu_delta, 'settings': options,
            'memory': {'action': memory_action, 'now_bytes': now_memory, 'recommended_bytes': new_memory,
                       'threshold_bytes': int(memory_threshold)},
            'cpu': {'action': cpu_action, 'now_millicores': now_cpu, 'recommended_millicores': new_cpu,
                    'threshold_millicores': int(cpu_threshold)},
            'kube_reserved': _to_write(current, recommendation, 'kube_reserved', actions),
            'system_reserved': _to_write(current, recommendation, 'system_reserved', actions)}
