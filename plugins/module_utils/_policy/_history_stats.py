# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What a history says, for the policy: percentiles, the summary a recommendation rests on.

Pure arithmetic on samples (``{'t', 'non_pod_bytes', 'non_pod_millicores'}``) however they were read: the node's
history file (_sampler/_history_store) or a replay. The store reads and writes; this only summarizes.
"""

from __future__ import annotations

import math


def percentile(values, percent):
    """Nearest-rank percentile (``percent`` 100 is the peak)."""
    if not values:
        raise ValueError('no values')
    ordered = sorted(values)
    rank = max(1, int(math.ceil(percent / 100.0 * len(ordered))))
    return ordered[min(rank, len(ordered)) - 1]


def summarize(samples, percent):
    """What a recommendation rests on: the percentile of non-pod memory and CPU, the count and span."""
    return {
        'samples': len(samples),
        'span_seconds': (samples[-1]['t'] - samples[0]['t']) if samples else 0,
        'percentile': percent,
        'non_pod_bytes': percentile([s['non_pod_bytes'] for s in samples], percent),
        'non_pod_millicores': percentile([s['non_pod_millicores'] for s in samples], percent),
        'peak_non_pod_bytes': max(s['non_pod_bytes'] for s in samples),
    }


def basis(samples, now, percent, stabilization_seconds):
    """The summary a recommendation rests on: the percentile, raised to the recent peak while it holds.

    A lower value must have held for the whole stabilization window before it can take effect.
    """
    result = summarize(samples, percent)
    recent = [s for s in samples if s['t'] >= now - stabilization_seconds] or samples[-1:]
    recent_peak = max(s['non_pod_bytes'] for s in recent)
    recent_peak_cpu = max(s['non_pod_millicores'] for s in recent)
    if recent_peak > result['non_pod_bytes'] or recent_peak_cpu > result['non_pod_millicores']:
        result['non_pod_bytes'] = max(result['non_pod_bytes'], recent_peak)
        result['non_pod_millicores'] = max(result['non_pod_millicores'], recent_peak_cpu)
        result['stabilized'] = True
    result['stabilization_seconds'] = stabilization_seconds
    return result
