# Private to nodealloc.kubelet: not a public API, may change without notice.
"""``pid`` to reserve from the node's tasks outside the pods, with the kubelet's PID arithmetic beside it.

reserved = max(FLOOR, non-pod tasks' history peak x HEADROOM_FACTOR), rounded up to a whole hundred. Memory's shape:
the peak of the node's own history (each line's ``non_pod_pids``, this reading among them) plus headroom. The history
already holds the bursts the node has had (a package upgrade, a log rotation, a node-problem-detector run, containerd
starting a shim per pod: shims run in containerd's own group, outside kubepods, so the count grows with the pods);
half of the peak again covers the ones it has not had, as for ephemeral storage. Gardener reserves 20,000 for every
node from one measurement (some 4,000 tasks in system.slice, x5; gardener/gardener#3042): a figure for nodes nobody
measured, which a node's own peak makes unnecessary. The floor, 1,000, is for a node whose history has not yet seen its
pods: a bare systemd node with containerd and a kubelet runs a few hundred tasks (this collection's test guest: 135),
and each pod adds a shim; Talos's 100 (its default systemReserved, docs/templates.md) is below what those daemons run
on a node with pods. PIDs are cheap where pid_max is 4 Mi (systemd sets it so on 64-bit machines since v243) and
dear where it is the kernel's 32,768: the plan says which, beside the pods' own limit.

Where it goes: the map that holds ``pid`` today (kubeReserved where only it does), else systemReserved, as for
ephemeral-storage. Written only with ``reserve_pids`` (default false): a new resource in the maps would restart every
kubelet on the next apply for a figure no one asked for.

Checked (``overcommit``): ``podPidsLimit`` x ``maxPods`` + the reservation against the capacity. The kubelet takes any
such sum (Kubernetes' PID-limiting page allows PIDs to be overcommitted like CPU), so it is a warning, not a refusal:
the pods' own limit stops one pod's fork bomb, the reservation stops all of them together. Refused (``refusal``, before
any write, where the written maps would carry it): a reservation that with the hard ``pid.available`` threshold takes
the whole capacity. kubepods' ``pids.max`` would then be 0, which runc takes for "no limit", and every pod would be
evicted at once by the threshold.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _node_allocatable
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _reserved_split

HEADROOM_FACTOR = 1.5
FLOOR = 1000
ROUND_TO = 100
RESOURCE = 'pid'


def _ceil_hundreds(value):
    return -(-int(value) // ROUND_TO) * ROUND_TO


def maps_with(current, recommended):
    """(kubeReserved's, systemReserved's) pid (None: not set) for ``recommended`` tasks in all (_reserved_split)."""
    return _reserved_split.maps_with(current, RESOURCE, recommended, str)


def pods_may_hold(pod_pids_limit, max_pods):
    """podPidsLimit x maxPods, or None where the pods have no limit each (unset, 0 or negative: the kubelet's
    default -1 is unlimited, and it sets no pids.max for a pod below 1)."""
    if isinstance(pod_pids_limit, bool) or not isinstance(pod_pids_limit, int) or pod_pids_limit < 1:
        return None
    return pod_pids_limit * max_pods


def history_peak(samples):
    """{peak_non_pod_tasks (None: no line carries one), lines}: the history lines' ``non_pod_pids`` (_history_store),
    kept in the history as two figures, not as the lines."""
    found = [s['non_pod_pids'] for s in samples if s.get('non_pod_pids') is not None]
    return {'peak_non_pod_tasks': max(found) if found else None, 'lines': len(found)}


def _peak(pids, history):
    history = history or {}
    older = history.get('peak_non_pod_tasks')
    return max(pids['non_pod_tasks'], older or 0), history.get('lines') or 0


def _overcommit(lines, warnings, after, pod_pids_limit, max_pods):
    reserved = after['kube_reserved'] + after['system_reserved']
    hold = pods_may_hold(pod_pids_limit, max_pods)
    if hold is None:
        lines.append('pid: podPidsLimit is %s: a pod has no limit of its own, only kubepods\' pids.max %d bounds them'
                     % ('unset' if pod_pids_limit is None else pod_pids_limit, after['kubepods_pids_max']))
        return None
    over = hold + reserved > after['capacity']
    lines.append('pid: podPidsLimit x maxPods + reserved = %d x %d + %d = %d %s capacity %d'
                 % (pod_pids_limit, max_pods, reserved, hold + reserved, '>' if over else '<=', after['capacity']))
    if over:
        warnings.append('podPidsLimit %d x maxPods %d + reserved pid %d = %d is above the node\'s %d PIDs: pods at '
                        'their limits together would reach the hard pid.available threshold (%d) and be evicted; the '
                        'kubelet accepts it (PIDs may be overcommitted), raise kernel.pid_max or lower podPidsLimit '
                        'where that is not meant' % (pod_pids_limit, max_pods, reserved, hold + reserved,
                                                     after['capacity'], after['eviction_hard_pid_available']))
    return over


def recommend(pids, history, current, eviction_hard, config, max_pods, write=False):
    """The pid recommendation from ``pids`` (the facts' ``pids``, _node/_task_count.measure) and ``history`` (``history_peak``
    of the node's history lines) against ``current`` (the reservation maps), the effective
    ``eviction_hard``, the kubelet ``config`` (podPidsLimit, enforceNodeAllocatable) and ``max_pods``.

    Returns {recommended, quantity, non_pod_tasks, peak_non_pod_tasks, history_lines, headroom_factor, floor,
    kube_reserved, system_reserved (each map's pid, None: not set), allocatable_now, allocatable_recommended
    (_node_allocatable.compute_pids), pod_pids_limit, max_pods, overcommit, warnings, refusal, written, explanation,
    reason}; recommended None (and ``reason``) when the tasks or the capacity were not measured.
    """
    current, config = current or {}, config or {}
    lines, warnings = [], []
    pod_pids_limit = config.get('podPidsLimit')
    out = {'recommended': None, 'quantity': None, 'non_pod_tasks': None, 'peak_non_pod_tasks': None,
           'history_lines': 0, 'headroom_factor': HEADROOM_FACTOR, 'floor': FLOOR, 'kube_reserved': None,
           'system_reserved': None, 'allocatable_now': None, 'allocatable_recommended': None,
           'pod_pids_limit': pod_pids_limit, 'max_pods': max_pods, 'overcommit': None, 'warnings': warnings,
           'refusal': None, 'written': False, 'explanation': lines, 'reason': None}
    if not pids or pids.get('non_pod_tasks') is None or pids.get('capacity') is None:
        problems = (pids or {}).get('problems') or ['no measurement']
        out['reason'] = 'the node\'s tasks were not measured: %s' % '; '.join(problems)
        lines.append('pid: not recommended, %s' % out['reason'])
        return out
    enforce = _defaults.effective_enforce_node_allocatable(config.get('enforceNodeAllocatable'))
    peak, history_lines = _peak(pids, history)
    recommended = max(FLOOR, _ceil_hundreds(peak * HEADROOM_FACTOR))
    kube, system = maps_with(current, recommended)
    now = _node_allocatable.compute_pids(pids['capacity'], current.get('kube_reserved'), current.get('system_reserved'),
                                         eviction_hard, enforce)
    after = _node_allocatable.compute_pids(pids['capacity'], {RESOURCE: kube} if kube else None,
                                           {RESOURCE: system} if system else None, eviction_hard, enforce)
    lines.append('pid: tasks outside the pods = all %d - kubepods %d - the measuring tool %d = %d (peak %d over %d '
                 'history lines and this reading)' % (pids['tasks_total'], pids['kubepods_tasks'],
                                                      pids['measuring_tool_tasks'], pids['non_pod_tasks'], peak,
                                                      history_lines))
    lines.append('pid reserved = max(floor %d, ceil_100(%d x %.1f)) = %d' % (FLOOR, peak, HEADROOM_FACTOR, recommended))
    lines.append('pid capacity = min(kernel.pid_max %s, kernel.threads-max %s) = %d; kubepods pids.max = capacity - '
                 'kubeReserved - systemReserved = %d - %d - %d = %d (now %d); hard pid.available %d evicts, reserves '
                 'nothing' % (pids['pid_max'], pids['threads_max'], after['capacity'], after['capacity'],
                              after['kube_reserved'], after['system_reserved'], after['kubepods_pids_max'],
                              now['kubepods_pids_max'], after['eviction_hard_pid_available']))
    maps = after if write else now
    out['overcommit'] = _overcommit(lines, warnings, maps, pod_pids_limit, max_pods)
    reserved_after = after['kube_reserved'] + after['system_reserved']
    if write and reserved_after + after['eviction_hard_pid_available'] >= after['capacity']:
        out['refusal'] = ('pid %d reserved + the hard pid.available threshold %d would take all %d of the node\'s PIDs '
                          '(kubepods pids.max %d: pods could start nothing, and runc takes 0 for no limit); raise '
                          'kernel.pid_max' % (reserved_after, after['eviction_hard_pid_available'], after['capacity'],
                                              after['kubepods_pids_max']))
        lines.append('pid: refused: %s' % out['refusal'])
    if not write:
        lines.append('pid is not written: reserve_pids is false (today\'s maps are kept)')
    out.update(recommended=recommended, quantity=str(recommended), non_pod_tasks=pids['non_pod_tasks'],
               peak_non_pod_tasks=peak, history_lines=history_lines, kube_reserved=kube, system_reserved=system,
               allocatable_now=now, allocatable_recommended=after, written=bool(write))
    return out


def carry_into(recommendation, pids):
    """Put the written pid quantities into the recommendation's maps (``reserve_pids``)."""
    _reserved_split.carry_into(recommendation, pids, RESOURCE)
