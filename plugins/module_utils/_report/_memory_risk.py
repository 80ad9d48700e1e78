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

Young nodes (issue 46): while a node's history spans less than the reaction time its recommendation keeps the most
headroom the rule adds (``memory_headroom_max_bytes``, 2 GiB: ``_headroom.jump_headroom``), a safety margin for the
recommendation, not the line between thin and ok: measured against it, no young node could read ok (one with 21.8 %
of its memory spare read thin). A young node's risk (``cold_start`` set) is measured against the headroom a WARM node
of its class keeps (``reassessed``, ``class_warm_headrooms``): the median ``memory_headroom_bytes`` of the class's
warm nodes with a kubelet in the same report, or, in a class with none, what the rule gives a warm node with no jump
of its own yet (``warm_rule_headroom``: max(memory_headroom_min_bytes, min(memory_headroom_max_bytes,
memory_headroom_percent % of the peak)); ``memory_headroom_rule: percent``: max(min, percent % of the peak)).
``headroom_source`` says which.

Flags (``reservation_flags``): a recommendation reserving more than the largest vendor formula for the node's size
(the node's ``formulas``: GKE, AKS, EKS, OpenShift, ``_vendor_formulas``) or more than ``MAX_RESERVED_SHARE`` (25 %)
of the node's memory is flagged with its reason: not wrong in itself (a node whose daemons use that much needs it),
but worth a look before it is written to a whole class.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom

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


# A recommendation reserving more than this share of the node's memory is flagged (module docstring).
MAX_RESERVED_SHARE = 0.25
ABOVE_FORMULAS, ABOVE_SHARE = 'above_vendor_formulas', 'above_node_share'
OWN_HEADROOM = 'own'


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
    result = {'headroom_source': OWN_HEADROOM, 'reserved_bytes': reserved_bytes, 'peak_bytes': peak, 'now_bytes': now_bytes,
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


def reassessed(risk, headroom_bytes, headroom_source):
    """``risk`` (``memory_risk``'s) measured against another headroom: only thin and ok can change."""
    if risk.get('category') not in (THIN, OK):
        return dict(risk, headroom_source=risk.get('headroom_source') or OWN_HEADROOM)
    again = memory_risk(risk['reserved_bytes'], risk['peak_bytes'], risk['now_bytes'], headroom_bytes,
                        risk['capacity_bytes'], risk['eviction_hard_bytes'])
    again['headroom_source'] = headroom_source
    if headroom_source != OWN_HEADROOM:
        again['reason'] += '; a young node, measured against the headroom %s' % headroom_source
    return again


def warm_rule_headroom(peak_bytes, settings):
    """The headroom the rule gives a warm node with no jump of its own yet (module docstring)."""
    settings = settings or {}
    percent = settings.get('memory_headroom_percent') or 0
    minimum = settings.get('memory_headroom_min_bytes') or 0
    if settings.get('memory_headroom_rule') == 'percent':
        return _headroom.headroom(peak_bytes or 0, percent, minimum)[0]
    return _headroom.jump_headroom(peak_bytes or 0, {'warm': True, 'jump_days': 0, 'memory_jump_bytes': 0}, percent,
                                   minimum, settings.get('memory_headroom_max_bytes') or minimum)[0]


def _warm(node):
    return node.get('status') == 'ok' and not node.get('cold_start') and node.get('memory_headroom_bytes') is not None


def class_warm_headrooms(nodes):
    """{class name: (median memory_headroom_bytes of its warm nodes, how many)}: the line young nodes are read by."""
    found = {}
    for node in nodes:
        if _warm(node):
            found.setdefault(node.get('template_class'), []).append(int(node['memory_headroom_bytes']))
    return {name: (sorted(values)[(len(values) - 1) // 2], len(values)) for name, values in found.items()}


def young_node_risk(node, warm_headrooms):
    """A young node's risk against its class's warm headroom (module docstring); any other node's unchanged."""
    risk = node.get('memory_risk') or {}
    if node.get('status') != 'ok' or not node.get('cold_start') or risk.get('reserved_bytes') is None:
        return dict(risk, headroom_source=risk.get('headroom_source') or OWN_HEADROOM)
    class_headroom = warm_headrooms.get(node.get('template_class'))
    if class_headroom:
        return reassessed(risk, class_headroom[0], 'of its class\'s warm nodes (the median of %d)' % class_headroom[1])
    return reassessed(risk, warm_rule_headroom(risk.get('peak_bytes'), node.get('settings')),
                      'the rule gives a warm node without jumps (no warm node in its class)')


def reservation_flags(reserved_bytes, capacity_bytes, formulas):
    """[{'flag', 'reason'}] for a reservation above every vendor formula for the size, or above MAX_RESERVED_SHARE."""
    flags = []
    if reserved_bytes is None:
        return flags
    largest = max(((f.get('reserved_memory_bytes') or 0, name) for name, f in (formulas or {}).items()), default=None)
    if largest and reserved_bytes > largest[0]:
        flags.append({'flag': ABOVE_FORMULAS, 'reason': 'reserves %s, more than the largest vendor formula for its '
                      'size (%s: %s)' % (units.memory(reserved_bytes), largest[1], units.memory(largest[0]))})
    if capacity_bytes and reserved_bytes > MAX_RESERVED_SHARE * capacity_bytes:
        flags.append({'flag': ABOVE_SHARE, 'reason': 'reserves %s, %.0f %% of the node\'s %s: more than %.0f %%' % (
            units.memory(reserved_bytes), 100.0 * reserved_bytes / capacity_bytes, units.memory(capacity_bytes),
            100 * MAX_RESERVED_SHARE)})
    return flags


def not_assessed(category, reason):
    """The risk of a node without figures (not measured, or no kubelet)."""
    return {'category': category, 'reason': reason, 'headroom_source': None, 'reserved_bytes': None, 'peak_bytes': None, 'now_bytes': None,
            'headroom_bytes': None, 'eviction_hard_bytes': None, 'capacity_bytes': None, 'spare_bytes': None,
            'spare_share': None}
