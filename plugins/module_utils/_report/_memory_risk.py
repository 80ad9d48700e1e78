# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A node's memory risk: what it reserves against its own history's peak and its usage now (issue 37).

The one home of "risk": the fleet report's JSON, its text, Markdown and HTML (the chart's position and colour,
the tables) all read the dict ``memory_risk`` returns and compute nothing of their own.

What the kubelet sets aside for the system is kubeReserved + systemReserved memory; the hard eviction
threshold (``evictionHard`` ``memory.available``) is the last buffer before the kernel, not a reservation: the
kubelet starts evicting pods when free memory falls under it, and a spike faster than eviction ends in a global
OOM kill. So a node whose non-pod memory has already passed what it reserves has exceeded its reservation
(whether or not the eviction buffer caught it: the sentence says which), and the headroom the policy keeps
above the peak (``memory_headroom_bytes``: max(memory_headroom_min, memory_headroom_percent % of the peak)) is
the line between a thin reservation and an adequate one. A node reserving nothing has no line to cross: its
own category, since its pods and its daemons compete for the same memory with nothing set aside.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units

EXCEEDED, THIN, NOT_CONFIGURED, OK = 'exceeded', 'thin', 'not_configured', 'ok'
# Not a risk of the node but of the report: not measured, or a kubelet whose reservations were not found.
UNKNOWN = 'unknown'
# Measured, with no kubelet: nothing competes with the system for memory.
NO_KUBELET = 'no_kubelet'

# Worst first: the order the report sorts by and the chart's legend reads in.
ORDER = (EXCEEDED, THIN, NOT_CONFIGURED, UNKNOWN, OK, NO_KUBELET)
MEANING = {
    EXCEEDED: 'non-pod memory (its history\'s peak or now) has passed what the node reserves: pods may take memory '
              'the system needs, and the next spike ends in evictions or a kernel OOM kill',
    THIN: 'what the node reserves is above its peak by less than the headroom the policy keeps',
    NOT_CONFIGURED: 'the node reserves no memory for the system (no kubeReserved or systemReserved memory)',
    UNKNOWN: 'the node was not measured, or its kubelet configuration was not found',
    OK: 'what the node reserves is above its peak by at least the headroom the policy keeps',
    NO_KUBELET: 'no kubelet runs here: nothing to reserve for',
}


def rank(category):
    """The category's place, worst first (unknown words last)."""
    return ORDER.index(category) if category in ORDER else len(ORDER)


def memory_risk(reserved_bytes, peak_bytes, now_bytes, headroom_bytes, capacity_bytes, eviction_hard_bytes=None):
    """The node's memory risk and the figures it rests on.

    ``reserved_bytes``: kubeReserved + systemReserved memory in force (None: not known); ``peak_bytes``: the
    largest non-pod reading in the node's own history window (None without a history); ``now_bytes``: non-pod
    memory now; ``headroom_bytes``: the headroom the policy keeps above the peak; ``capacity_bytes``: the node's
    memory (MemTotal); ``eviction_hard_bytes``: the hard eviction threshold in force.

    Returns ``category`` (one of ``ORDER``), ``peak_bytes`` (the larger of the history's peak and now),
    ``spare_bytes`` (reserved - peak: below zero, exceeded), ``spare_share`` (``spare_bytes`` as a share of the
    node's memory: the fleet chart's axis, so nodes of every size compare), the inputs, and ``reason``.
    """
    peak = max(value for value in (peak_bytes, now_bytes, 0) if value is not None)
    result = {'reserved_bytes': reserved_bytes, 'peak_bytes': peak, 'now_bytes': now_bytes,
              'headroom_bytes': headroom_bytes, 'eviction_hard_bytes': eviction_hard_bytes,
              'capacity_bytes': capacity_bytes, 'spare_bytes': None, 'spare_share': None}
    if reserved_bytes is None:
        return dict(result, category=UNKNOWN, reason='the kubelet configuration was not found: what it reserves is '
                    'unknown')
    if reserved_bytes <= 0:
        return dict(result, category=NOT_CONFIGURED, reason='reserves nothing; non-pod memory peaked at %s'
                    % units.memory(peak))
    spare = reserved_bytes - peak
    result.update(spare_bytes=spare, spare_share=float(spare) / capacity_bytes if capacity_bytes else None)
    if spare < 0:
        beyond = ''
        if eviction_hard_bytes is not None:
            beyond = (', beyond the %s eviction threshold too: a global OOM was possible' % units.memory(
                eviction_hard_bytes) if -spare > eviction_hard_bytes else
                ', inside the %s eviction threshold' % units.memory(eviction_hard_bytes))
        return dict(result, category=EXCEEDED, reason='non-pod memory peaked at %s, %s above the %s reserved%s'
                    % (units.memory(peak), units.memory(-spare), units.memory(reserved_bytes), beyond))
    if spare < (headroom_bytes or 0):
        return dict(result, category=THIN, reason='%s reserved, %s above the peak %s: less than the %s headroom the '
                    'policy keeps' % (units.memory(reserved_bytes), units.memory(spare), units.memory(peak),
                                      units.memory(headroom_bytes)))
    return dict(result, category=OK, reason='%s reserved, %s above the peak %s (headroom kept: %s)' % (
        units.memory(reserved_bytes), units.memory(spare), units.memory(peak), units.memory(headroom_bytes or 0)))


def not_assessed(category, reason):
    """The risk of a node without figures (not measured, or no kubelet)."""
    return {'category': category, 'reason': reason, 'reserved_bytes': None, 'peak_bytes': None, 'now_bytes': None,
            'headroom_bytes': None, 'eviction_hard_bytes': None, 'capacity_bytes': None, 'spare_bytes': None,
            'spare_share': None}
