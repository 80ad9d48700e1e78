# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Headroom from how far the node's non-pod use has jumped past its peak, and the sampler's warning flag.

A reservation made now from the history's peak stays until the next playbook run
(the reaction time, ``reaction_time``: how often the role is applied, 24 h by
default). What it must absorb is how far non-pod use can climb above the peak
known at one run before the next run: a slow runtime leak, more pods, a log
burst bigger than any before. The history shows how far it did climb: for every
sample time t of the history,

    jump(t) = max(use over (t, t + reaction]) - max(use over [t - window, t])

(clipped at 0: only a new peak counts). The headroom is the largest jump seen,
times ``jump_headroom_factor`` (a larger one is likely over the next days than
over the few reaction windows a week of history holds), and never below the
fixed minimum (``memory_headroom_min_bytes``, ``cpu_headroom_min_millicores``)
nor below ``memory_headroom_percent`` / ``cpu_headroom_percent`` of the peak.
A jump is only measured from a start with one reaction time of history before
it (the peak it climbs from is one the node has shown for a whole reaction time,
as at every run but the first). While the history spans one to two reaction
times (the second daily run) the same is measured within half the history and
scaled up to the reaction time (``climb_horizon``); with less than one reaction
time of history no climb is known and the percentage rule applies alone.

Node class: over an inventory, nodes of one class (the same memory size and CPU
count, ``node_class``) run the same kind of workload, so a climb one of them showed
can happen on any of them. ``pool_jumps`` gives a node the largest climb of its
class (its own included) where that is larger than its own; the small-sample
factor keeps the node's own count of windows (the pooled climbs come from the
same days, not from a longer history). The role pools over the nodes it measures
together (``reservations_pool_class``): each node's first decision returns what it
tells its class (``class_record``), and a node that the class would change decides
again with its peers' records (the facts module's ``class_peers``).

Cold start: until a node's history shows climbs over a whole reaction time (two
reaction times of dense enough readings) its climbs are unknown or scaled up
from half a short history. The prior is the largest
reservation recommended for a node of its class that has such a history, measured
in the same run (``class_prior``); with none, the vendor formula named by
``cold_start_prior`` (``docs/formulas.md``); in either case a floor: the
reservation is the larger of the prior and the reading plus headroom, so a day of
history that climbs past what the formula reserves raises it (a formula sized for
the machine can under-reserve a busy small node). The history alone decides once it
shows climbs over a whole reaction time.

The near-reservation flag: ``near_reservation`` is true when a reading comes within
the headroom of what is reserved, so an alert or a scheduled job can apply sooner
than the next planned run (the sampler exports it as ``nodealloc_memory_near_reservation``;
the alert ``NodeallocNearReservation`` fires after 15 min: docs/arithmetic.md).
"""

from __future__ import annotations

import collections
import math

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _history, _option_specs

DEFAULTS = _option_specs.defaults(('reaction_time', 'jump_headroom_factor', 'cold_start_prior'))


def _sliding_max_before(times, values, window):
    """For each i: max of values[j] with times[i] - window <= times[j] <= times[i]."""
    queue, result = collections.deque(), []
    for index, value in enumerate(values):
        while queue and values[queue[-1]] <= value:
            queue.pop()
        queue.append(index)
        while times[queue[0]] < times[index] - window:
            queue.popleft()
        result.append(values[queue[0]])
    return result


# A history with fewer readings than this per reaction time (the role's own daily readings without the
# sampler) cannot show how use climbs within it: spot readings a reaction time apart are not climbs.
MIN_READINGS_PER_REACTION = 10


def start_slack(times, reaction_seconds):
    """How far a climb's start may sit from a whole reaction time of history on either side, or None.

    Readings rarely fall on the exact second a whole reaction time from the history's ends (the
    sampler's clock, the module's own reading at run time): one sampling interval, the median gap
    between readings. None when that gap is more than a tenth of the reaction time (fewer than
    ``MIN_READINGS_PER_REACTION`` readings per reaction time): too sparse to measure climbs.
    """
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    if not gaps:
        return None
    gap = gaps[len(gaps) // 2]
    return gap if gap <= reaction_seconds / float(MIN_READINGS_PER_REACTION) else None


def largest_jump(times, values, reaction_seconds, window_seconds, slack=None):
    """The largest climb above the running peak within ``reaction_seconds``, and how many windows it rests on.

    Returns (jump, windows) where windows is the count of whole reaction times the history spans;
    (None, 0) when it spans fewer than two (one to establish a peak, one to climb past it); (None, windows)
    when the readings are too sparse or none lies where a climb can start (``start_slack``; pass ``slack``
    when it is already known for these times).
    """
    if len(times) < 2 or times[-1] - times[0] < 2 * reaction_seconds:
        return None, 0
    if slack is None:
        slack = start_slack(times, reaction_seconds)
    if slack is None:
        return None, int((times[-1] - times[0]) // reaction_seconds)
    before = _sliding_max_before(times, values, window_seconds)
    # Forward max over (t, t + reaction]: a second pass with a deque over indices in time order.
    after = [None] * len(values)
    queue = collections.deque()
    right = 0
    for index in range(len(values)):
        while right < len(values) and times[right] <= times[index] + reaction_seconds:
            while queue and values[queue[-1]] <= values[right]:
                queue.pop()
            queue.append(right)
            right += 1
        while queue and queue[0] <= index:
            queue.popleft()
        after[index] = values[queue[0]] if queue else None
    jump = None
    for index, time_value in enumerate(times):
        # A start counts when one reaction time of history lies before it (the peak it climbs from is one
        # the node has shown over a whole reaction time, as at every run but the first) and one after it,
        # each to within one sampling interval.
        if time_value + reaction_seconds > times[-1] + slack:
            break
        if time_value - times[0] < reaction_seconds - slack or after[index] is None:
            continue
        jump = max(jump or 0, after[index] - before[index])
    windows = int((times[-1] - times[0]) // reaction_seconds)
    return jump, windows


def climb_horizon(span_seconds, reaction_seconds):
    """How far ahead climbs are measured: the reaction time, half the history while it spans one to two of them.

    None while the history spans less than one reaction time (nothing to measure a climb over yet).
    """
    if span_seconds >= 2 * reaction_seconds:
        return reaction_seconds
    if span_seconds >= reaction_seconds > 0:
        return span_seconds / 2.0
    return None


def jumps(samples, reaction_seconds, window_seconds):
    """Largest memory and CPU jumps to a new peak within the reaction time, from history samples.

    With one to two reaction times of history (the second daily run) climbs are measured within half the
    history (``horizon_seconds``) and scaled by reaction / horizon to the reaction time: exact for a steady
    leak, more than a burst grows in twice the time, so on the safe side.
    """
    times = [s['t'] for s in samples]
    span = times[-1] - times[0] if times else 0
    horizon = climb_horizon(span, reaction_seconds)
    result = {'reaction_seconds': reaction_seconds, 'horizon_seconds': horizon, 'windows': 0,
              'memory_bytes': None, 'millicores': None}
    if horizon is None:
        return result
    slack = start_slack(times, horizon)  # once for memory and CPU: the same readings
    result['too_sparse'] = slack is None
    result['windows'] = int(span // horizon)
    if slack is None:
        return result
    scale = reaction_seconds / float(horizon)
    for key, field in (('memory_bytes', 'non_pod_bytes'), ('millicores', 'non_pod_millicores')):
        climb, _windows = largest_jump(times, [s[field] for s in samples], horizon, window_seconds, slack)
        if climb is not None and horizon < reaction_seconds:
            climb = int(math.ceil(climb * scale))
        result[key] = climb
    return result


def extrapolated(jumps):
    """True when ``jumps`` were measured within less than the reaction time and scaled up (a short history)."""
    jumps = jumps or {}
    horizon = jumps.get('horizon_seconds')
    return horizon is not None and jumps.get('memory_bytes') is not None and horizon < jumps.get('reaction_seconds', 0)


def node_class(mem_total_bytes, cpus):
    """The class a node's climbs are pooled in: its memory size, rounded to whole GiB, and its CPU count."""
    return int(round(mem_total_bytes / float(1 << 30))), int(cpus)


def pool_jumps(own, peers):
    """``own`` jumps (as ``jumps`` returns them) raised to the largest climb among ``peers`` of the same class.

    Only peers measured over the same reaction time count; a peer without a measured climb adds nothing.
    The result says how many nodes the climbs came from (``class_nodes``) and which resource was raised.
    """
    result = dict(own)
    # A peer's climb scaled up from a short history (``extrapolated``) would raise the class by a guess.
    counted = [peer for peer in peers or () if peer and peer.get('reaction_seconds') == own.get('reaction_seconds')
               and not extrapolated(peer)]
    result['class_nodes'] = 1 + len(counted)
    raised = []
    for key in ('memory_bytes', 'millicores'):
        values = [peer[key] for peer in counted if peer.get(key) is not None]
        if own.get(key) is None or not values:
            continue  # no climb of its own yet: the node's short-history rules apply, as without peers
        if max(values) > own[key]:
            result[key] = max(values)
            raised.append(key)
    result['raised_by_class'] = raised
    return result


def class_record(mem_total_bytes, cpus, jumps, recommendation):
    """What one node tells the nodes of its class: its class, its own climbs and, with history, its reservation.

    ``jumps`` are the node's own (before any pooling): a peer's pooled climbs would echo back round the class.
    A node whose history does not yet span two reaction times (``cold_start``) offers no reservation: it
    rests on a prior itself.
    """
    cold = (bool(recommendation.get('single_reading')) or (jumps or {}).get('memory_bytes') is None
            or extrapolated(jumps))
    return {'node_class': list(node_class(mem_total_bytes, cpus)),
            'jumps': {key: (jumps or {}).get(key)
                      for key in ('reaction_seconds', 'horizon_seconds', 'windows', 'memory_bytes', 'millicores')},
            'cold_start': cold,
            'reserved_memory_bytes': None if cold else recommendation.get('reserved_memory_bytes'),
            'reserved_millicores': None if cold else recommendation.get('reserved_millicores')}


def same_class(wanted, peers):
    """The peers' records (dicts as ``class_record`` makes them) of class ``wanted``; anything else is dropped."""
    wanted = list(wanted or ())
    return [peer for peer in peers or () if isinstance(peer, dict) and wanted
            and list(peer.get('node_class') or ()) == wanted and isinstance(peer.get('jumps'), dict)]


def class_prior(peers):
    """(memory bytes, millicores, nodes): the largest reservations of the peers with history, or None."""
    warm = [peer for peer in peers if not peer.get('cold_start') and peer.get('reserved_memory_bytes') is not None]
    if not warm:
        return None
    return (max(int(peer['reserved_memory_bytes']) for peer in warm),
            max(int(peer.get('reserved_millicores') or 0) for peer in warm), len(warm))


def peers_that_matter(record, peers):
    """``record``'s class peers when deciding with them would change something, else [].

    A node with climbs of its own is changed by a peer's larger climb; a node without (cold start) by a peer
    with history (the class prior). Every other node keeps its first decision: no second measurement.
    """
    if not record:
        return []
    peers = same_class(record.get('node_class'), peers)
    if record.get('cold_start'):
        return peers if class_prior(peers) else []
    pooled = pool_jumps(record['jumps'], [peer['jumps'] for peer in peers])
    return peers if pooled['raised_by_class'] else []


def basis(samples, now, percent, stabilization_seconds, reaction_seconds, window_seconds):
    """What a recommendation rests on: _history.basis (percentile held up by the stabilization window) and the jumps.

    ``samples`` are history readings (dicts with t, non_pod_bytes, non_pod_millicores), oldest first.
    """
    result = _history.basis(samples, now, percent, stabilization_seconds)
    result['jumps'] = jumps(samples, reaction_seconds, window_seconds)
    return result


def headroom(peak, jump, percent, minimum, factor, windows=0):
    """(headroom, rule) for one resource: the jump rule where a jump was measured, else the percentage rule.

    The largest of few climbs understates the next one: with ``windows`` reaction times of history the
    climbs come from ``windows - 1`` of them, and the factor grows by windows / (windows - 1) (x2 on the
    first run that can measure one, x1.17 with a week of daily runs).
    """
    proportional = int(-(-peak * percent // 100)) if peak > 0 else 0
    fixed = max(proportional, minimum)
    if jump is None:
        return fixed, 'max(%d x %s%%, %d) = %d (no reaction window in the history yet)' % (peak, percent, minimum, fixed)
    scaled = factor * windows / (windows - 1.0) if windows > 1 else factor
    from_jumps = int(math.ceil(jump * scaled))
    value = max(fixed, from_jumps)
    return value, ('max(largest climb to a new peak within the reaction time %d x %s x %d/%d, %d x %s%%, %d) = %d'
                   % (jump, factor, windows, max(1, windows - 1), peak, percent, minimum, value))


def cold_start_floor(formulas, name):
    """(memory bytes, millicores) the prior formula reserves, or None when there is none."""
    if not name or name == 'none' or name not in (formulas or {}):
        return None
    chosen = formulas[name]
    return chosen['reserved_memory_bytes'], chosen['reserved_millicores']


def near_reservation(non_pod_bytes, reserved_bytes, headroom_bytes):
    """True when a reading comes within the headroom of the reservation (or passes it): apply sooner.

    ``reserved_bytes`` is kubeReserved + systemReserved memory in force; ``headroom_bytes`` the
    headroom of the last recommendation. False when nothing is reserved (nothing to compare with).
    Strictly above: the reservation is the peak it was sized on plus the headroom (rounded up), so a
    node back at that peak is what the reservation planned for, not a reason to apply sooner.
    """
    if not reserved_bytes:
        return False
    return non_pod_bytes > reserved_bytes - max(0, headroom_bytes or 0)
