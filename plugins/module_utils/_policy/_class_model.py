# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The class model (issue 45): what a node of a class spends outside its pods as an intercept plus a per-pod slope.

A node's history lines carry ``pods`` (the pod cgroups under kubepods at that reading). ``profile`` summarizes a
node's window per pod count (at most ``PROFILE_BUCKETS`` buckets of adjacent counts: each one's pods, the median
and the largest non-pod memory and CPU, and how many readings), small enough to travel in the node's class record.
``fit`` learns over every node of the class:

* the **slope** (bytes, millicores per pod) from the medians *within* each node (a regression on each node's
  deviations from its own mean, weighted by readings): nodes of one class differ in their base (agents, kernel
  caches), and a pooled regression across them would read those differences as a slope. Medians, so a log burst
  does not tilt the line. With too little spread in pod counts (the class's pods span less than
  ``MIN_SPAN_SHARE`` of maxPods or fewer than ``MIN_SPAN_PODS`` pods, or the slope's standard error is more than
  ``MAX_RELATIVE_ERROR`` of it) the slope is the prior: EKS's 11 MiB a pod (amazon-eks-ami's
  ``11 * maxPods + 255`` MiB, the figure Bottlerocket and Karpenter use too); for CPU 0 (no vendor formula has a
  per-pod CPU figure; CPU is compressible);
* the **envelope intercept**: the largest reading of any node less slope x the fewest pods of its bucket: the line
  ``envelope + slope x pods`` lies above every reading the class made, bursts included (an upper envelope, not a
  mean: a mean line would be exceeded half the time);
* the typical **intercept** (the readings-weighted mean of each node's median less slope x its mean pods), for the
  report's line beside EKS's;
* the **burst**: the largest rise of a bucket's largest reading above its median, over the class.

``enough``: the class has at least ``MIN_NODE_DAYS`` node-days of readings with pods (say 3 nodes for a day or one
node for 3 days); a class with less is not modelled and a cold node rests on today's prior.

Where it is used (_headroom, _recommend): at ``target_pods`` = the node's maxPods (110 when the kubelet config sets
none): the kubelet admits pods up to maxPods and an autoscaler may pack a node that far between two daily runs
(issue 45: a node measured at 30 pods and packed to 110 before the next run). The reservation is at least the
envelope at maxPods, with no headroom on top (the envelope lies above every reading already): the class's for a cold
node (less than a reaction time of history) or a young one (fewer than two days of its own jumps), its own for a warm
one (its own readings moved to maxPods along the class's slope).
"""

from __future__ import annotations

import collections
import math

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats

MIB = 1 << 20
DAY = 86400
PROFILE_BUCKETS = 16
# The slope prior: EKS's 11 MiB per pod (awslabs/amazon-eks-ami, files/get-ec2-max-pods / nodeadm: 11 * maxPods + 255
# MiB of kube-reserved memory), the only per-pod figure a vendor ships; CPU has none.
PRIOR_NAME = 'eks'
PRIOR_SLOPE_BYTES = 11 * MIB
PRIOR_SLOPE_MILLICORES = 0.0
MIN_SPAN_SHARE = 0.2
MIN_SPAN_PODS = 5
MAX_RELATIVE_ERROR = 0.25
MIN_NODE_DAYS = 3.0
# What a peer's profile may hold (checked): pods as a history line may count them (_history_store.MAX_PODS is far
# below), and a window of at most this span (the history window is days; a year is beyond any).
MAX_POD_COUNT = 1 << 20
MAX_PROFILE_SPAN_SECONDS = 366 * DAY
# A slope past this is not a per-pod cost any runtime has (the kubelet e2e bound: 100 pods add ~100-225 MiB to the
# kubelet and runtime together, test/e2e/node/kubelet_perf.go); a fit beyond it is taken as confounded, not used.
MAX_SLOPE_BYTES = 64 * MIB


class ModelError(ParseError):
    """A profile that cannot be a class record's (from another node's record: checked, never trusted)."""


def _pods(sample):
    pods = sample.get('pods')
    return pods if isinstance(pods, int) and not isinstance(pods, bool) and pods >= 0 else None


def climb(samples, reaction_seconds):
    """The largest rise in pods within one reaction time: a reading's pods less the fewest of the reaction time
    before it (``samples`` oldest first, each with ``pods``)."""
    lows, best = collections.deque(), 0  # (t, pods), pods increasing from the left: the window's fewest first
    for sample in samples:
        while lows and lows[-1][1] >= sample['pods']:
            lows.pop()
        lows.append((sample['t'], sample['pods']))
        while lows[0][0] < sample['t'] - reaction_seconds:
            lows.popleft()
        best = max(best, sample['pods'] - lows[0][1])
    return best


def profile(samples, reaction_seconds=DAY):
    """A node's window per pod count: {'buckets': [[pods_low, pods_high, pods_mean, median_bytes, max_bytes,
    median_millicores, max_millicores, readings], ...], 'first': t, 'last': t, 'readings': n, 'pods_now': n,
    'pods_most': n, 'pods_climb': n} of the readings that carry ``pods`` (``pods_climb``: ``climb``); None when
    none does (a history from before pods were recorded)."""
    counted = [sample for sample in samples if _pods(sample) is not None]
    if not counted:
        return None
    by_pods = {}
    for sample in counted:
        by_pods.setdefault(sample['pods'], []).append(sample)
    counts = sorted(by_pods)
    # Adjacent pod counts merge into at most PROFILE_BUCKETS buckets of about equal width in pods.
    width = max(1, int(math.ceil((counts[-1] - counts[0] + 1) / float(PROFILE_BUCKETS))))
    groups = {}
    for pods in counts:
        groups.setdefault((pods - counts[0]) // width, []).extend(by_pods[pods])
    buckets = []
    for key in sorted(groups):
        group = groups[key]
        memory = [int(s['non_pod_bytes']) for s in group]
        cpu = [int(s.get('non_pod_millicores') or 0) for s in group]
        pods = [s['pods'] for s in group]
        buckets.append([min(pods), max(pods), round(sum(pods) / float(len(pods)), 2),
                        _history_stats.percentile(memory, 50), max(memory),
                        _history_stats.percentile(cpu, 50), max(cpu), len(group)])
    newest = max(counted, key=lambda s: s['t'])
    return {'buckets': buckets, 'first': min(s['t'] for s in counted), 'last': newest['t'],
            'readings': len(counted), 'pods_now': newest['pods'], 'pods_most': counts[-1],
            'pods_climb': climb(sorted(counted, key=lambda s: s['t']), reaction_seconds)}


def checked(record_profile):
    """``record_profile`` as ``profile`` makes it, or ModelError: a peer's record came through the controller."""
    if record_profile is None:
        return None
    try:
        buckets = record_profile['buckets']
        if not isinstance(buckets, list) or not buckets or len(buckets) > PROFILE_BUCKETS:
            raise ModelError('a profile holds 1 to %d buckets' % PROFILE_BUCKETS)
        clean = []
        for bucket in buckets:
            if not isinstance(bucket, list) or len(bucket) != 8:
                raise ModelError('a bucket is a list of 8 numbers')
            for value in bucket:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value < 0 or value > 1 << 50:
                    raise ModelError('a bucket holds numbers from 0 to 2^50: %r' % (value,))
            low, high, mean = bucket[:3]
            if high > MAX_POD_COUNT:
                raise ModelError('a bucket\'s pods are at most %d: %r' % (MAX_POD_COUNT, high))
            if not low <= mean <= high or bucket[3] > bucket[4] or bucket[5] > bucket[6] or bucket[7] < 1:
                raise ModelError('a bucket is not pods low <= mean <= high, median <= largest, readings >= 1')
            clean.append([int(low), int(high), float(mean), int(bucket[3]), int(bucket[4]), int(bucket[5]),
                          int(bucket[6]), int(bucket[7])])
        first, last = float(record_profile['first']), float(record_profile['last'])
        if not (math.isfinite(first) and math.isfinite(last)) or last < first:
            raise ModelError('first and last are times, first <= last')
        if last - first > MAX_PROFILE_SPAN_SECONDS:
            # One peer claiming years of readings would make any class "enough" alone: a window spans days.
            raise ModelError('a profile spans at most %d days, not %.0f' % (MAX_PROFILE_SPAN_SECONDS // DAY,
                                                                            (last - first) / DAY))
        return {'buckets': clean, 'first': first, 'last': last, 'readings': int(record_profile['readings']),
                'pods_now': _count(record_profile['pods_now']), 'pods_most': _count(record_profile['pods_most']),
                'pods_climb': _count(record_profile.get('pods_climb') or 0)}
    except ModelError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise ModelError('not a profile: %s' % exc) from exc


def _count(value):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POD_COUNT:
        raise ModelError('a pod count is a whole number from 0 to %d: %r' % (MAX_POD_COUNT, value))
    return value


def _within_slope(profiles, median_index):
    """(slope, standard error or None, Sxx): the readings-weighted regression of each node's bucket medians on its
    pods, each node about its own mean (a fixed intercept per node)."""
    sxx = sxy = 0.0
    centred = []
    for node in profiles:
        buckets = node['buckets']
        weight = float(sum(b[7] for b in buckets))
        x_mean = sum(b[2] * b[7] for b in buckets) / weight
        y_mean = sum(b[median_index] * b[7] for b in buckets) / weight
        for bucket in buckets:
            dx, dy = bucket[2] - x_mean, bucket[median_index] - y_mean
            sxx += bucket[7] * dx * dx
            sxy += bucket[7] * dx * dy
            centred.append((dx, dy, bucket[7]))
    if sxx <= 0:
        return None, None, 0.0
    slope = sxy / sxx
    # The error as if each bucket were one observation (readings a few seconds apart are not independent).
    points, weight = len(centred), float(sum(w for _dx, _dy, w in centred))
    freedom = points - len(profiles) - 1
    if freedom <= 0:
        return slope, None, sxx
    residual = sum(w * (dy - slope * dx) ** 2 for dx, dy, w in centred) / weight * points / freedom
    spread = sxx / weight * points
    return slope, math.sqrt(residual / spread) if spread > 0 else None, sxx


def _slope(profiles, median_index, max_pods, prior, ceiling):
    """(slope, source, standard error, reason): the fitted slope, or the prior and why."""
    low = min(b[0] for node in profiles for b in node['buckets'])
    high = max(b[1] for node in profiles for b in node['buckets'])
    span = high - low
    slope, error, _sxx = _within_slope(profiles, median_index)
    if span < max(MIN_SPAN_PODS, MIN_SPAN_SHARE * max_pods):
        return prior, PRIOR_NAME, None, ('the class\'s pods span %d to %d, less than %d%% of maxPods %d or %d pods'
                                         % (low, high, int(MIN_SPAN_SHARE * 100), max_pods, MIN_SPAN_PODS))
    if slope is None or error is None:
        return prior, PRIOR_NAME, None, 'no node\'s pods varied enough within its own window to fit a slope'
    if slope <= 0 or error > MAX_RELATIVE_ERROR * slope:
        return prior, PRIOR_NAME, error, ('the fitted slope %.3g has a standard error of %.3g, more than %d%% of it'
                                          % (slope, error, int(MAX_RELATIVE_ERROR * 100)) if slope > 0
                                          else 'the fitted slope %.3g is not positive' % slope)
    if slope > ceiling:
        return prior, PRIOR_NAME, error, 'the fitted slope %.3g is past %.3g, no per-pod cost a runtime has' % (
            slope, ceiling)
    return slope, 'fit', error, None


def node_days(profiles):
    return sum(max(0.0, node['last'] - node['first']) for node in profiles) / DAY


def fit(profiles, max_pods):
    """The class model from the nodes' ``profile``s (None ones dropped), or None when no node has pods readings.

    Returns {'enough', 'nodes', 'node_days', 'days', 'max_pods', 'pods_low', 'pods_high', 'memory': {...},
    'cpu': {...}}, each resource {'slope', 'slope_source' ('fit' or the prior's name), 'slope_error',
    'prior_reason', 'intercept', 'envelope', 'burst'} in bytes or millicores (module doc).
    """
    profiles = [node for node in profiles or () if node and node.get('buckets')]
    if not profiles:
        return None
    max_pods = max(1, int(max_pods))
    model = {'nodes': len(profiles), 'node_days': round(node_days(profiles), 3),
             'days': round((max(n['last'] for n in profiles) - min(n['first'] for n in profiles)) / DAY, 3),
             'max_pods': max_pods,
             'pods_low': min(b[0] for node in profiles for b in node['buckets']),
             'pods_high': max(b[1] for node in profiles for b in node['buckets']),
             'pods_climb': max(int(node.get('pods_climb') or 0) for node in profiles)}
    model['enough'] = model['node_days'] >= MIN_NODE_DAYS
    for name, median, largest, prior, ceiling in (('memory', 3, 4, PRIOR_SLOPE_BYTES, MAX_SLOPE_BYTES),
                                                  ('cpu', 5, 6, PRIOR_SLOPE_MILLICORES, 1000.0)):
        slope, source, error, reason = _slope(profiles, median, max_pods, prior, ceiling)
        weight = float(sum(b[7] for node in profiles for b in node['buckets']))
        intercept = sum(b[7] * (b[median] - slope * b[2]) for node in profiles for b in node['buckets']) / weight
        model[name] = {'slope': slope, 'slope_source': source, 'slope_error': error, 'prior_reason': reason,
                       'intercept': max(0, int(intercept)),
                       'envelope': max(envelope(node, slope, largest) for node in profiles),
                       'burst': max(b[largest] - b[median] for node in profiles for b in node['buckets'])}
    return model


def envelope(node_profile, slope, largest=4):
    """The node's envelope intercept: its largest reading less ``slope`` x the fewest pods of that reading's bucket,
    over its buckets (a line of that slope through it lies above every reading of the node)."""
    return max(0, int(max(b[largest] - slope * b[0] for b in node_profile['buckets'])))


def at(intercept, slope, pods):
    """intercept + slope x pods, rounded up to a whole unit."""
    return int(math.ceil(intercept + slope * max(0, pods)))


def target_pods(model, own, max_pods):
    """(pods, why): the pods the node may hold before the next run: its maxPods (module doc)."""
    del model, own
    return int(max_pods), ('its maxPods %d: the kubelet admits that many, and an autoscaler may pack the node that far '
                           'before the next run' % int(max_pods))


def raised_peak(model, own, max_pods, cold, young=False):
    """(memory bytes, lines): the non-pod memory the node may reach at ``target_pods``, from the class's envelope
    (a cold node, or a ``young`` one: fewer than two days of jumps of its own, whose readings have not yet shown its
    bursts, where the class has enough data) or its own (its readings moved along the class's slope), or
    (None, lines) when the model does not apply (no pods readings, or a cold node in a class with too little data)."""
    if not model or not own:
        return None, []
    if cold and not model['enough']:
        return None, ['the class model rests on %.1f node-days of readings with pods, less than %g: not used'
                      % (model['node_days'], MIN_NODE_DAYS)]
    memory = model['memory']
    pods, why = target_pods(model, own, max_pods)
    borrowed = cold or (young and model['enough'])
    base = max(memory['envelope'], envelope(own, memory['slope'])) if borrowed else envelope(own, memory['slope'])
    value = at(base, memory['slope'], pods)
    if memory['slope_source'] == 'fit':
        slope_text = ('%.1f MiB a pod, fitted over %d node(s), %.1f node-days, pods %d-%d (standard error %.1f MiB)'
                      % (memory['slope'] / MIB, model['nodes'], model['node_days'], model['pods_low'],
                         model['pods_high'], (memory['slope_error'] or 0) / MIB))
    else:
        slope_text = '%.1f MiB a pod, the %s prior (%s)' % (
            memory['slope'] / MIB, memory['slope_source'], memory['prior_reason'])
    whose = ("the class's (this node's history has not yet shown its bursts: %s)"
             % ('less than a reaction time' if cold else 'fewer than two days of jumps of its own')
             if borrowed else "this node's own")
    lines = ['class model: slope %s; envelope intercept %.1f MiB, %s (the largest reading less slope x its pods)'
             % (slope_text, base / MIB, whose),
             'pods it may hold before the next run: %d, %s' % (pods, why),
             'non-pod memory at %d pods = %.1f MiB + %.1f MiB x %d = %.1f MiB'
             % (pods, base / MIB, memory['slope'] / MIB, pods, value / MIB)]
    return value, lines
