# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The headroom rule (the window's peak plus a share of it), class pooling, the cold-start prior, the near flag.

The rule (issue 29; docs/benchmarks.md, "The shipped policy"): at each run reserve

    P + max(memory_headroom_min_bytes, memory_headroom_percent % of P)

with P the history's ``percentile`` (100: the largest sampler reading) over ``history_window`` (3 days), and
CPU likewise (``cpu_headroom_min_millicores``, ``cpu_headroom_percent``). Chosen on traces it was not written
for against the rules it replaced (the largest climb within the reaction time times a factor, history
percentiles, small-sample factors, a second-run rule): at the same or less waste those were exposed to a
global OOM where this one was not; each part below is kept because removing it costs risk or waste on
held-out traces (the ablation table in docs/benchmarks.md).

Node class: over an inventory, nodes of one class (the same memory size and CPU count, ``node_class``) run
the same kind of workload, so a peak one of them reached can be reached on any of them. ``pool_jumps``
raises a node's P to the largest P of its class (its own included). The role pools over the nodes it
measures together (``reservations_pool_class``): each node's first decision returns what it tells its class
(``class_record``), and a node that the class would change decides again with its peers' records (the facts
module's ``class_peers``). The pooled figures travel under the key ``jumps`` (the basis's and the record's),
the name the facts module pools under; they are the window's peaks, no longer climbs.

Cold start: a history spanning less than one ``reaction_time`` (how often the role runs, 24 h) has not seen
the node's daily cycle (a nightly batch, log rotation, the runtime's garbage collection). Until it has, the
prior is the floor: the largest reservation recommended for a node of its class whose history does span one,
measured in the same run (``class_prior``); with none, the vendor formula named by ``cold_start_prior`` (GKE
by default: ``docs/formulas.md``). The reservation is the larger of the prior and the rule, so a busy small
node whose first readings pass what the formula reserves is raised above it.

The near-reservation flag: ``near_reservation`` is true when a reading has used up half the headroom of what is
reserved (the point from which _decision raises the reservation whatever the size of the step), so an alert or a
scheduled job can apply sooner than the next planned run (the sampler exports it as ``nodealloc_memory_near_reservation``; the alert
``NodeallocNearReservation`` fires after 15 min: docs/arithmetic.md).
"""

from __future__ import annotations

import math

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats

DEFAULTS = _option_specs.defaults(('reaction_time', 'cold_start_prior'))

# A history counts as spanning a reaction time from this share of it on: the role's runs are scheduled (cron,
# AWX) and start minutes to an hour apart from one day to the next, which must not keep a node on its prior
# for one more day. The replays in benchmarks/quality.py run exactly a reaction time apart.
WARM_SHARE = 0.9


def warm(span_seconds, reaction_seconds):
    """True when a history spanning ``span_seconds`` has (nearly, ``WARM_SHARE``) seen one reaction time."""
    return span_seconds >= WARM_SHARE * reaction_seconds


def window_peaks(result, span_seconds, reaction_seconds):
    """What a node tells its class: P of memory and CPU (``result`` is _history_stats.basis's), and whether it is warm.

    ``warm``: the history spans (nearly, ``WARM_SHARE``) one reaction time, so P has seen a whole cycle.
    """
    return {'reaction_seconds': reaction_seconds, 'span_seconds': span_seconds,
            'memory_bytes': int(result['non_pod_bytes']), 'millicores': int(result['non_pod_millicores']),
            'warm': warm(span_seconds, reaction_seconds)}


def node_class(mem_total_bytes, cpus):
    """The class a node's peaks are pooled in: its memory size, rounded to whole GiB, and its CPU count."""
    return int(round(mem_total_bytes / float(1 << 30))), int(cpus)


def pool_jumps(own, peers):
    """``own`` peaks (as ``window_peaks`` returns them) raised to the largest P among ``peers`` of the same class.

    Only peers that run at the same reaction time count. The result says how many nodes the peaks came from
    (``class_nodes``), which resource a peer raised (``raised_by_class``) and how many peers are warm.
    """
    result = dict(own)
    counted = [peer for peer in peers or () if isinstance(peer, dict)
               and peer.get('reaction_seconds') == own.get('reaction_seconds')]
    result['class_nodes'] = 1 + len(counted)
    result['warm_peers'] = sum(1 for peer in counted if peer.get('warm'))
    raised = []
    for key in ('memory_bytes', 'millicores'):
        values = [int(peer[key]) for peer in counted if peer.get(key) is not None]
        if values and max(values) > (own.get(key) or 0):
            result[key] = max(values)
            raised.append(key)
    result['raised_by_class'] = raised
    return result


PEAK_KEYS = ('reaction_seconds', 'span_seconds', 'memory_bytes', 'millicores', 'warm')


def class_record(mem_total_bytes, cpus, jumps, recommendation, class_name=None):
    """What one node tells the nodes of its class: its class, its own peaks and, once warm, its reservation.

    ``class_name`` is the inventory's ``nodealloc_node_class`` (None or empty: the size class alone decides): the
    class pooling, the report and the templates use, so a GPU pool and a general pool of one size never pool.
    ``jumps`` are the node's own peaks (before any pooling: a peer's pooled figures would echo back round the
    class). A node whose history does not yet span a reaction time (``cold_start``) offers no reservation: it
    rests on a prior itself.
    """
    jumps = jumps or {}
    cold = bool(recommendation.get('single_reading')) or not jumps.get('warm')
    return {'node_class': list(node_class(mem_total_bytes, cpus)),
            'class_name': class_name or None,
            'jumps': {key: jumps.get(key) for key in PEAK_KEYS},
            'cold_start': cold,
            'reserved_memory_bytes': None if cold else recommendation.get('reserved_memory_bytes'),
            'reserved_millicores': None if cold else recommendation.get('reserved_millicores')}


def class_key(record):
    """The class a record belongs to: its inventory class name where set, else its size class; None if neither."""
    record = record or {}
    if record.get('class_name'):
        return 'name', str(record['class_name'])
    if record.get('node_class'):
        return ('size',) + tuple(int(part) for part in record['node_class'])
    return None


def same_class(wanted, peers):
    """The peers' records (dicts as ``class_record`` makes them) of ``wanted``'s class (a record, or its class_key);
    anything else is dropped. A named class and a size class never match, even of one size."""
    wanted = class_key(wanted) if isinstance(wanted, dict) else wanted
    return [peer for peer in peers or () if isinstance(peer, dict) and wanted
            and class_key(peer) == wanted and isinstance(peer.get('jumps'), dict)]


def class_prior(peers):
    """(memory bytes, millicores, nodes): the largest reservations of the warm peers, or None."""
    warm = [peer for peer in peers if not peer.get('cold_start') and peer.get('reserved_memory_bytes') is not None]
    if not warm:
        return None
    return (max(int(peer['reserved_memory_bytes']) for peer in warm),
            max(int(peer.get('reserved_millicores') or 0) for peer in warm), len(warm))


def peers_that_matter(record, peers):
    """``record``'s class peers when deciding with them would change something, else [].

    A peer with a larger P raises any node; a cold node also takes a warm peer's reservation (the class
    prior). Every other node keeps its first decision: no second measurement.
    """
    if not record:
        return []
    peers = same_class(record, peers)
    if record.get('cold_start') and class_prior(peers):
        return peers
    pooled = pool_jumps(record['jumps'], [peer['jumps'] for peer in peers])
    return peers if pooled['raised_by_class'] else []


def basis(samples, now, percent, stabilization_seconds, reaction_seconds, window_seconds=None):
    """What a recommendation rests on: _history_stats.basis (P, held up by the stabilization window) and the peaks.

    ``samples`` are history readings (dicts with t, non_pod_bytes, non_pod_millicores), oldest first, already
    within the history window (``window_seconds`` is not used: _history_store.read and the replays cut the window).
    """
    del window_seconds
    result = _history_stats.basis(samples, now, percent, stabilization_seconds)
    span = samples[-1]['t'] - samples[0]['t'] if samples else 0
    result['jumps'] = window_peaks(result, span, reaction_seconds)
    return result


def headroom(peak, percent, minimum):
    """(headroom, rule) for one resource: max(minimum, percent % of the peak), rounded up."""
    proportional = int(math.ceil(peak * percent / 100.0)) if peak > 0 else 0
    value = max(proportional, minimum)
    return value, 'max(%d x %s%%, %d) = %d' % (peak, percent, minimum, value)


def cold_start_floor(formulas, name):
    """(memory bytes, millicores) the prior formula reserves, or None when there is none."""
    if not name or name == 'none' or name not in (formulas or {}):
        return None
    chosen = formulas[name]
    return chosen['reserved_memory_bytes'], chosen['reserved_millicores']


def near_reservation(non_pod_bytes, reserved_bytes, headroom_bytes):
    """True when a reading has used up half the headroom of the reservation (or passed it): apply sooner.

    ``reserved_bytes`` is kubeReserved + systemReserved memory in force; ``headroom_bytes`` the
    headroom of the last recommendation. False when nothing is reserved (nothing to compare with).
    Half, strictly above: where _decision's own rule starts raising the reservation whatever the step
    (a margin under half the headroom). The flag used to rise at any new peak (a reading past
    ``reserved - headroom``); the run it started raised the reservation to 1.5 x the new peak on any rise
    past 43 MiB (the 64 MiB minimum of an increase), a restart with more than half the headroom free: on
    the never-seen seeds 301, 302 its 93 runs added 53 restarts on ``incidents`` (1.081 changes per
    node-day against 0.750 without them) and bought no exposure back on any family; on 401, 402, run once
    after this rule was frozen, 0.625 / 0.700 / 0.571 changes per node-day at the same risk
    (docs/benchmarks.md).
    """
    if not reserved_bytes:
        return False
    return non_pod_bytes > reserved_bytes - max(0, headroom_bytes or 0) / 2.0
