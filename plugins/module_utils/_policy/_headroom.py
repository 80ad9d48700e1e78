# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The headroom rule (the window's peak plus a headroom in bytes from the node's own jumps), lending, the prior, the flag.

The rule (issue 38; docs/arithmetic.md, docs/benchmarks.md "Issue 38"): at each run reserve

    P + H,  H = max(memory_headroom_min_bytes, min(memory_headroom_max_bytes, J))

with P the history's ``percentile`` (100: the largest sampler reading) over ``history_window`` (7 days), and J the
largest *jump above the preceding peak* the node made in that history (``daily_jumps``): cut the history into
reaction-time periods counted back from the newest reading (the days between two daily runs), and for every period
with at least (nearly) a reaction time of history before it, take how far its peak rose above every reading before
it. That is what pushed non-pod memory past the P a run had reserved on: a log burst, a step in pod count, an image
re-pull, a DaemonSet's sidecar. Those come in sizes that do not grow with the node's peak, so the headroom is
bytes, not a share of P (a share over-reserves a 128-256 GiB node by gigabytes and under-reserves a 4 GiB one).
``memory_headroom_rule: percent`` keeps the rule before this one: P + max(memory_headroom_min_bytes,
memory_headroom_percent % of P).

A young node (fewer than ``OWN_JUMP_DAYS`` jumps of its own: its history does not yet span OWN_JUMP_DAYS + 1
reaction times) has not shown what jumps it makes: J is then the largest of its own jumps so far, the jumps its
class's peers lend it (``pool_jumps``) and ``memory_headroom_percent`` of P (the rule before, as safe on days
1-2 as it was), under the same floor and cap. A node with jumps of its own keeps them: no peer's peak or jumps
raise it (class pooling of peaks, the rule before, raised a node that never climbed to a noisy peer's peak).

CPU keeps P + max(``cpu_headroom_min_millicores``, ``cpu_headroom_percent`` of P), P its own.

Node class: over an inventory, nodes of one class (the same memory size and CPU count, ``node_class``) run
the same kind of workload. The role passes each node what its peers measured in the same run
(``reservations_pool_class``): each node's first decision returns what it tells its class (``class_record``),
and a node that the class would change decides again with its peers' records (the facts module's
``class_peers``). The records travel under the key ``jumps`` (the basis's and the record's): the node's P, its
largest own jump and how many days of jumps it has.

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
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _class_model, _cpu_sustained, _history_stats)

DEFAULTS = _option_specs.defaults(('reaction_time', 'cold_start_prior'))

# A history counts as spanning a reaction time from this share of it on: the role's runs are scheduled (cron,
# AWX) and start minutes to an hour apart from one day to the next, which must not keep a node on its prior
# for one more day. The replays in benchmarks/quality.py run exactly a reaction time apart.
WARM_SHARE = 0.9
# A node with fewer jumps of its own than this (days of history past the first) is young: it borrows (module doc).
OWN_JUMP_DAYS = 2


def warm(span_seconds, reaction_seconds):
    """True when a history spanning ``span_seconds`` has (nearly, ``WARM_SHARE``) seen one reaction time."""
    return span_seconds >= WARM_SHARE * reaction_seconds


def daily_jumps(samples, reaction_seconds):
    """The node's jumps above the preceding peak: one per reaction-time period with a reaction time of history before it.

    Periods are counted back from the newest reading: (newest - R, newest], (newest - 2R, newest - R], ... (the
    days between two daily runs, R the reaction time). A period's jump is how far its largest reading rose above
    the largest reading before the period (0 when it did not), counted only when the readings before it span
    (nearly, ``WARM_SHARE``) a reaction time: against a few minutes of history every day would look like a jump.
    Oldest first.
    """
    if not samples or reaction_seconds <= 0:
        return []
    first, newest = samples[0]['t'], samples[-1]['t']
    peaks = {}
    for sample in samples:
        back = max(0, int(math.ceil((newest - sample['t']) / float(reaction_seconds))) - 1)
        peaks[back] = max(peaks.get(back, 0), sample['non_pod_bytes'])
    jumps, before = [], None
    for back in sorted(peaks, reverse=True):
        period_start = newest - (back + 1) * reaction_seconds
        if before is not None and warm(period_start - first, reaction_seconds):
            jumps.append(max(0, int(peaks[back] - before)))
        before = peaks[back] if before is None else max(before, peaks[back])
    return jumps


def window_peaks(result, span_seconds, reaction_seconds, jumps=()):
    """What a node tells its class: P of memory and CPU (``result`` is _history_stats.basis's), whether it is warm,
    and its own jumps (``daily_jumps``): the largest (``memory_jump_bytes``) and how many (``jump_days``).

    ``warm``: the history spans (nearly, ``WARM_SHARE``) one reaction time, so P has seen a whole cycle.
    """
    jumps = list(jumps or ())
    return {'reaction_seconds': reaction_seconds, 'span_seconds': span_seconds,
            'memory_bytes': int(result['non_pod_bytes']), 'millicores': int(result['non_pod_millicores']),
            'warm': warm(span_seconds, reaction_seconds),
            'memory_jump_bytes': max(jumps) if jumps else 0, 'jump_days': len(jumps)}


def young(jumps):
    """True when a node has fewer than ``OWN_JUMP_DAYS`` jumps of its own (``window_peaks``'s ``jump_days``)."""
    return int((jumps or {}).get('jump_days') or 0) < OWN_JUMP_DAYS


def node_class(mem_total_bytes, cpus):
    """The class a node's peaks are pooled in: its memory size, rounded to whole GiB, and its CPU count."""
    return int(round(mem_total_bytes / float(1 << 30))), int(cpus)


def pool_jumps(own, peers):
    """``own`` (as ``window_peaks`` returns it), with its peers' jumps lent to it when it is ``young``.

    A young node's ``memory_jump_bytes`` is raised to the largest jump of the ``peers`` of its class that have
    jumps of their own (``jump_days`` 1 or more); a node with jumps of its own keeps them, and no peer's P raises
    anyone's (issue 38: pooling peaks added waste and bought no safety). Only peers that run at the same reaction
    time count. The result says how many nodes there were (``class_nodes``), what a peer raised
    (``raised_by_class``: ['memory_jump_bytes'] or []) and how many peers are warm.
    """
    result = dict(own)
    counted = [peer for peer in peers or () if isinstance(peer, dict)
               and peer.get('reaction_seconds') == own.get('reaction_seconds')]
    result['class_nodes'] = 1 + len(counted)
    result['warm_peers'] = sum(1 for peer in counted if peer.get('warm'))
    raised = []
    if young(own):
        lent = [int(peer.get('memory_jump_bytes') or 0) for peer in counted if int(peer.get('jump_days') or 0) >= 1]
        # A cold node whose class has jumps to lend rests on them, not on the cap (jump_headroom).
        result['lent_jumps'] = bool(lent)
        if lent and max(lent) > int(own.get('memory_jump_bytes') or 0):
            result['memory_jump_bytes'] = max(lent)
            raised.append('memory_jump_bytes')
    result['raised_by_class'] = raised
    return result


PEAK_KEYS = ('reaction_seconds', 'span_seconds', 'memory_bytes', 'millicores', 'warm', 'memory_jump_bytes',
             'jump_days')


def class_record(mem_total_bytes, cpus, jumps, recommendation, class_name=None, control_plane=False,
                 pods_profile=None, max_pods=None, max_pods_source=None):
    """What one node tells the nodes of its class: its class, its own peaks and, once warm, its reservation.

    ``class_name`` is the inventory's ``nodealloc_node_class`` (None or empty: the size class alone decides): the
    class pooling, the report and the templates use, so a GPU pool and a general pool of one size never pool.
    ``control_plane``: the node's static pods run the API server or etcd (_node/_control_plane); its class is then
    its own (``class_key``), so no worker pools with it nor it with a worker, named alike or of one size.
    ``jumps`` are the node's own peaks (before any pooling: a peer's pooled figures would echo back round the
    class). A node whose history does not yet span a reaction time (``cold_start``) offers no reservation: it
    rests on a prior itself. ``pods_profile`` (_class_model.profile of its window, None without pods readings) and
    ``max_pods`` are what the class model (_class_model.fit) learns from it; ``max_pods_source`` says whether that
    maxPods was given ('option', 'kubelet') or assumed ('default'), which the templates read (_node_templates).
    """
    jumps = jumps or {}
    cold = bool(recommendation.get('single_reading')) or not jumps.get('warm')
    return {'node_class': list(node_class(mem_total_bytes, cpus)),
            'class_name': class_name or None,
            'control_plane': bool(control_plane),
            'jumps': {key: jumps.get(key) for key in PEAK_KEYS},
            'cold_start': cold,
            'reserved_memory_bytes': None if cold else recommendation.get('reserved_memory_bytes'),
            'reserved_millicores': None if cold else recommendation.get('reserved_millicores'),
            'pods_profile': pods_profile, 'max_pods': max_pods, 'max_pods_source': max_pods_source}


def class_key(record):
    """The class a record belongs to: its inventory class name where set, else its size class; None if neither.
    A control-plane node's key is marked so (a record from before detection has no mark: not one)."""
    record = record or {}
    mark = ('control-plane',) if record.get('control_plane') else ()
    if record.get('class_name'):
        return ('name', str(record['class_name'])) + mark
    if record.get('node_class'):
        return ('size',) + tuple(int(part) for part in record['node_class']) + mark
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

    A peer with a larger jump raises a young node's; a cold node also takes a warm peer's reservation (the class
    prior); and a node whose class model (_class_model) over its peers' pods profiles differs from its own alone
    (``model_changes``). Every other node keeps its first decision: no second measurement.
    """
    if not record:
        return []
    peers = same_class(record, peers)
    if record.get('cold_start') and class_prior(peers):
        return peers
    if model_changes(record, peers):
        return peers
    pooled = pool_jumps(record['jumps'], [peer['jumps'] for peer in peers])
    return peers if pooled['raised_by_class'] else []


def class_profiles(record, peers):
    """(profiles, problems): ``record``'s own pods profile and its peers' (_class_model.checked; a peer's that is not
    one is left out and said), Nones dropped."""
    profiles, problems = [], []
    for index, item in enumerate([record] + list(peers or ())):
        try:
            checked = _class_model.checked((item or {}).get('pods_profile'))
        except _class_model.ModelError as exc:
            problems.append('class peer %d: its pods profile is not used: %s' % (index, exc))
            continue
        if checked:
            profiles.append(checked)
    return profiles, problems


def model_changes(record, peers):
    """True when the class model over ``record`` and its ``peers`` raises its memory otherwise than its own alone
    (as _recommend uses it: cold, young or warm). False where the record's own profile is missing or not one."""
    if not record.get('pods_profile') or not any((peer or {}).get('pods_profile') for peer in peers or ()):
        return False
    try:
        own = _class_model.checked(record['pods_profile'])
    except _class_model.ModelError:
        return False
    max_pods = int(record.get('max_pods') or 110)
    cold, is_young = bool(record.get('cold_start')), young(record.get('jumps'))
    profiles, _problems = class_profiles({'pods_profile': own}, peers)
    alone = _class_model.raised_peak(_class_model.fit([own], max_pods), own, max_pods, cold, is_young)[0]
    pooled = _class_model.raised_peak(_class_model.fit(profiles, max_pods), own, max_pods, cold, is_young)[0]
    return alone != pooled


def basis(samples, now, percent, stabilization_seconds, reaction_seconds, window_seconds=None):
    """What a recommendation rests on: _history_stats.basis (P, held up by the stabilization window), the peaks and
    the sustained CPU need (``cpu_sustained``).

    ``samples`` are history readings (dicts with t, non_pod_bytes, non_pod_millicores), oldest first, already
    within the history window (``window_seconds`` is not used: _history_store.read and the replays cut the window).
    """
    del window_seconds
    result = _history_stats.basis(samples, now, percent, stabilization_seconds)
    span = samples[-1]['t'] - samples[0]['t'] if samples else 0
    result['jumps'] = window_peaks(result, span, reaction_seconds, daily_jumps(samples, reaction_seconds))
    # What a CPU change alone must show before it restarts a kubelet (_decision, _cpu_sustained).
    result['cpu_sustained'] = cpu_sustained(samples, now, reaction_seconds)
    # The window per pod count, for the class model (_class_model; None without pods readings).
    result['pods_profile'] = _class_model.profile(samples, reaction_seconds)
    return result


def cpu_sustained(samples, now, reaction_seconds):
    """_cpu_sustained.summary of ``samples`` (oldest first), warm from WARM_SHARE of the reaction time as the prior."""
    return _cpu_sustained.summary(samples, now, reaction_seconds, WARM_SHARE)


def headroom(peak, percent, minimum):
    """(headroom, rule) for one resource: max(minimum, percent % of the peak), rounded up."""
    proportional = int(math.ceil(peak * percent / 100.0)) if peak > 0 else 0
    value = max(proportional, minimum)
    return value, 'max(%d x %s%%, %d) = %d' % (peak, percent, minimum, value)


def jump_headroom(peak, jumps, percent, minimum, maximum):
    """(headroom, rule) in bytes from the node's jumps: max(minimum, min(maximum, J)) (module doc).

    J is ``jumps``' ``memory_jump_bytes`` (its own largest, or lent to a young node by ``pool_jumps``); for a young
    node (``young``) also ``percent`` % of the peak, the rule before, until it has jumps of its own; for a cold one
    (not ``warm``: less than a reaction time of history, or one reading) that no peer lends jumps to, ``maximum``:
    before the node has shown its daily cycle the rule adds the most it ever adds (on issue 38's ``weekly`` family
    a 4 GiB node's ~900 MiB burst on its first day was dangerous under GKE's formula, the prior, alone).
    """
    jumps = jumps or {}
    jump = max(0, int(jumps.get('memory_jump_bytes') or 0))
    parts = ['largest jump %d' % jump]
    if not jumps.get('warm') and not jumps.get('lent_jumps'):
        # Cold, and no peer lends jumps: nothing of the node's daily cycle seen yet; the most the rule adds.
        parts.append('the most, %d (the history spans less than a reaction time)' % maximum)
        jump = max(jump, maximum)
    elif young(jumps):
        proportional = int(math.ceil(peak * percent / 100.0)) if peak > 0 else 0
        parts.append('%s%% of P %d (fewer than %d days of jumps of its own: %d)'
                     % (percent, peak, OWN_JUMP_DAYS, int(jumps.get('jump_days') or 0)))
        jump = max(jump, proportional)
    value = max(minimum, min(maximum, jump))
    return value, 'max(%d, min(%d, %s)) = %d' % (minimum, maximum, ' and '.join(parts) if len(parts) == 1
                                                 else 'max(%s)' % ', '.join(parts), value)


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
    (docs/benchmarks-history.md).
    """
    if not reserved_bytes:
        return False
    return non_pod_bytes > reserved_bytes - max(0, headroom_bytes or 0) / 2.0
