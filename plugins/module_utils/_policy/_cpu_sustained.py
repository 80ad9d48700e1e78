# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Whether the history shows a CPU need sustained: what a CPU change alone (memory kept) must show to restart a kubelet.

CPU is compressible: a node short of reserved CPU throttles (the kubepods weight is a little too high under
contention), it does not OOM. A kubelet restart is not worth it for one short sample: the module's own reading is
``sample_seconds`` (5 s) long, and on a busy machine one such reading raised a two-node fleet's CPU recommendation
from 398m to 658m minutes after a converged run, and both kubelets restarted (issue 45 item 7).

Sustained means: the ``SUSTAINED_PERCENT`` (95th) nearest-rank percentile of the node's CPU readings over the last
reaction time (``reaction_time``, 24 h: the time between two planned runs), this run's reading counted as one of
them. A need must so hold in at least 5 % of a day's readings (72 minutes of the sampler's one-minute readings).
It is judged only on a history that spans (nearly, ``_headroom.WARM_SHARE``) a reaction time and holds at least
``MIN_READINGS`` readings in that last reaction time: from 20 on, the 95th nearest-rank percentile is never the
highest reading alone, so the newest reading can never decide by itself. Before that a CPU change alone is
deferred, and the reason says when it is reconsidered. _decision applies the rule; _headroom.basis records the
summary (``cpu_sustained`` in the basis).
"""

from __future__ import annotations

import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats

SUSTAINED_PERCENT = 95.0
# The least count of readings at which the nearest-rank SUSTAINED_PERCENT is below the highest: ceil(0.95 n) <= n - 1.
MIN_READINGS = 20


def summary(samples, now, reaction_seconds, warm_share):
    """What the history says of the CPU need over the last reaction time, JSON-ready (it travels in the basis).

    ``samples``: history readings (``t``, ``non_pod_millicores``), oldest first, this run's reading among them;
    ``warm_share``: the share of a reaction time from which a history counts as spanning one (_headroom.WARM_SHARE).
    Returns {percentile, millicores (None below MIN_READINGS), readings (in the last reaction time), window_seconds,
    span_seconds (the whole history's), warm, reconsider_at (Unix time at which the span is warm, None once it is
    or with no reading), latest_millicores (the newest reading's)}.
    """
    samples = [s for s in samples or () if s.get('non_pod_millicores') is not None]
    recent = [int(s['non_pod_millicores']) for s in samples if s['t'] > now - reaction_seconds]
    span = samples[-1]['t'] - samples[0]['t'] if samples else 0
    warm = bool(samples) and span >= warm_share * reaction_seconds
    return {'percentile': SUSTAINED_PERCENT,
            'millicores': (_history_stats.percentile(recent, SUSTAINED_PERCENT) if len(recent) >= MIN_READINGS
                           else None),
            'readings': len(recent), 'window_seconds': reaction_seconds, 'span_seconds': span, 'warm': warm,
            'reconsider_at': None if warm or not samples else samples[0]['t'] + warm_share * reaction_seconds,
            'warm_span_seconds': warm_share * reaction_seconds,
            'latest_millicores': int(samples[-1]['non_pod_millicores']) if samples else None}


def _at(unix_seconds):
    return time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(unix_seconds))


def deferral(sustained):
    """Why the history cannot yet judge a CPU need sustained, with when it is reconsidered; None when it can."""
    if not sustained:
        return ('cpu increase deferred: CPU is compressible and no history of CPU readings was given to show the '
                'need sustained; reconsidered at the first run whose history spans a reaction time')
    window_h = sustained['window_seconds'] / 3600.0
    if not sustained['warm']:
        return ('cpu increase deferred: CPU is compressible and the history spans %.1f h, less than the %.1f h '
                'reaction time, so one short sample cannot show the need sustained; reconsidered at the first run '
                'after %s, once the history spans %.1f h'
                % (sustained['span_seconds'] / 3600.0, window_h,
                   _at(sustained['reconsider_at']) if sustained.get('reconsider_at') else 'the sampler records',
                   sustained['warm_span_seconds'] / 3600.0))
    if sustained['millicores'] is None:
        return ('cpu increase deferred: CPU is compressible and the last %.1f h hold %d CPU reading(s), fewer than '
                'the %d the p%g needs to rest on more than the highest one; reconsidered at the first run with %d '
                '(the sampler, playbooks/observe.yml, records one a minute)'
                % (window_h, sustained['readings'], MIN_READINGS, sustained['percentile'], MIN_READINGS))
    return None


def target_millicores(sustained, recommended_millicores, headroom_millicores):
    """The CPU total the sustained need asks for: its percentile plus the recommendation's headroom, at most the
    recommendation (a floor or prior that raised it is not taken from a sample, but it waits as a sample does)."""
    return min(recommended_millicores, sustained['millicores'] + headroom_millicores)


def describe(sustained):
    """The sustained need, in words."""
    return ('p%g of the %d CPU readings over the last %.1f h = %dm (this run\'s reading, %dm, is one of them)'
            % (sustained['percentile'], sustained['readings'], sustained['window_seconds'] / 3600.0,
               sustained['millicores'], sustained['latest_millicores']))
