# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The verdict: one thing to do per node and per class, with its reason and the command that does it (issue 46).

``node_verdict(node, now_seconds)`` decides a report node's (``_fleet_report._node``) action, first rule that holds:

``fix``
    The node was not measured (``status`` is not ``ok``/``no_kubelet``: unreachable, failed), or apply would refuse
    its change (``refusals``: the plan's, ``_node_plan.REFUSAL_SOURCES``: no config found, flags that override the
    file, a kubelet version that would not start ...), or its kubelet config was not found. Command: look at the
    one-line reason, then ``ansible-playbook playbooks/recommend.yml --limit HOST`` to measure it again.
``keep`` with reason ``no kubelet``
    Measured, no kubelet (``status`` ``no_kubelet``): nothing to reserve for.
``apply``, an increase a reading already demands (``demanded``)
    The decision is ``increase`` and a reading has passed what the node reserves: its memory risk is ``exceeded``
    (the history's peak or now above kubeReserved + systemReserved, ``_memory_risk``) or the non-pod memory measured now
    is above what is reserved (``margin_bytes`` < 0; a node reserving nothing has that margin). This holds on a young
    node too: a node is never both "observe" and "restart".
``observe`` until DATE
    The history does not span what the decision needs: the recommendation still rests on the cold-start prior
    (``cold_start`` is set: ``_recommend.cold_start``, the history spans less than ``_headroom.WARM_SHARE`` of the
    reaction time, ``cold_start.warm_span_seconds``), or there is one reading and no history at all. DATE (``until``,
    an ISO date, UTC) is when the history will span it: the later of its oldest reading + the span needed
    (``cold_start.takes_over_at``, or the history's ``since`` or first series point + the span), and the report's
    time + what is still missing (a history that stopped recording resumes no sooner than now). Command:
    ``ansible-playbook playbooks/observe.yml --limit HOST`` (installs the sampler, restarts nothing). A young node
    whose cold-start decision is an increase no reading demands is observed, not restarted: the increase rests on the
    prior, not on what the node did.
``apply``
    The decision is ``increase`` or ``decrease`` (a decrease is one only beyond ``change_threshold_percent`` of what
    is reserved and the absolute minimum, and once the history spans the stabilization window: ``_decision`` applies
    both, so a decrease here is worth its restart). Command: ``ansible-playbook playbooks/apply.yml -e
    nodealloc_classes=CLASS`` (the class selector, playbooks/apply.yml: it writes and restarts only the nodes of that
    class whose verdict is apply).
``keep``
    Otherwise: the decision is keep.

``severity`` (apply only) grades the change by its size, as KRR grades a recommendation's change by its size: the
memory change in bytes and as a share of the node's memory (``change_memory_bytes``, ``change_share``), and the CPU
change as a share of the node's CPUs; the worst of them. ``minor``: below ``MINOR_BYTES`` (256 MiB) and below
``MINOR_SHARE`` (2 %) of the node, memory and CPU alike; ``major``: at least ``MAJOR_BYTES`` (1 GiB) or at least
``MAJOR_SHARE`` (10 %) of the node; ``moderate`` between. The thresholds live here only.

``class_verdict(name, nodes)`` folds a class's: its action is its most urgent node's, in the order ``URGENCY``: an
increase a reading demands > fix > apply (other) > observe > keep (a class with one node that a reading says is short
of memory is applied, even while others are broken: the apply command leaves the broken ones untouched). Its
``nodes_by_action`` counts every node by its own action; its ``reason`` says those counts; its command acts on that
class only (``-e nodealloc_classes=CLASS``) or, for fix, on the hosts to fix (``--limit``). ``until``: the latest
date among its observed nodes. ``severity``: the worst among its applied nodes; ``change_memory_bytes`` their sum,
``change_share`` that sum over their memory.

The verdict dict (the contract other renderers read): ``action`` (``ACTIONS``), ``until`` (ISO date or None, observe
only), ``reason`` (one sentence), ``command`` (a shell command, None for keep), ``severity`` (apply only), the change
figures (apply only) and ``demanded`` (apply: a reading already demands the increase).
"""

from __future__ import annotations

import datetime
import shlex

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk

APPLY, OBSERVE, KEEP, FIX = 'apply', 'observe', 'keep', 'fix'
ACTIONS = (APPLY, FIX, OBSERVE, KEEP)
# The class's action is its most urgent node's: an increase a reading demands, fix, apply, observe, keep.
URGENCY = ('demanded', FIX, APPLY, OBSERVE, KEEP)

# Severity of an applied change (module docstring): the one place these thresholds are set.
MINOR_BYTES = 256 << 20
MINOR_SHARE = 0.02
MAJOR_BYTES = 1 << 30
MAJOR_SHARE = 0.10
SEVERITIES = ('minor', 'moderate', 'major')

RECHECK_COMMAND = 'ansible-playbook playbooks/recommend.yml --limit %s'
OBSERVE_COMMAND = 'ansible-playbook playbooks/observe.yml --limit %s'
OBSERVE_CLASS_COMMAND = 'ansible-playbook playbooks/observe.yml -e nodealloc_classes=%s'
APPLY_COMMAND = 'ansible-playbook playbooks/apply.yml -e nodealloc_classes=%s'
NO_KUBELET = 'no kubelet'
# A reason quoting a parser's message is cut to one line of this many characters (the report keeps it whole).
REASON_CHARACTERS = 200


def severity(change_memory_bytes, change_share, cpu_share=None):
    """``minor``, ``moderate`` or ``major`` for a change of this size (module docstring); None without a change."""
    if change_memory_bytes is None and change_share is None and cpu_share is None:
        return None
    size, share, cpu = abs(change_memory_bytes or 0), abs(change_share or 0.0), abs(cpu_share or 0.0)
    if size >= MAJOR_BYTES or share >= MAJOR_SHARE or cpu >= MAJOR_SHARE:
        return 'major'
    if size < MINOR_BYTES and share < MINOR_SHARE and cpu < MINOR_SHARE:
        return 'minor'
    return 'moderate'


def _verdict(action, reason, command=None, until=None, change=None, demanded=False):
    change = change or {}
    return {'action': action, 'until': until, 'reason': reason, 'command': command,
            'severity': severity(change.get('memory_bytes'), change.get('share'), change.get('cpu_share'))
            if action == APPLY else None,
            'change_memory_bytes': change.get('memory_bytes') if action == APPLY else None,
            'change_share': change.get('share') if action == APPLY else None,
            'demanded': bool(demanded)}


def one_line(text):
    """A reason on one line, at most REASON_CHARACTERS long."""
    line = ' '.join(str(text or '').split())
    return line if len(line) <= REASON_CHARACTERS else line[:REASON_CHARACTERS - 3] + '...'


def _quoted(text):
    return shlex.quote(str(text))


def _moves(node, resource):
    """Whether the decision changes ``resource`` (``decision_by_resource``; an older report: a non-zero delta)."""
    by_resource = node.get('decision_by_resource') or {}
    if resource in by_resource:
        return by_resource[resource] in ('increase', 'decrease')
    return bool(node.get('memory_delta_bytes' if resource == 'memory' else 'cpu_delta_millicores'))


def change_of(node):
    """{'memory_bytes', 'share', 'cpu_share'}: what apply changes on the node, signed (0 for a resource it keeps)."""
    memory = int(node.get('memory_delta_bytes') or 0) if _moves(node, 'memory') else 0
    cpu = int(node.get('cpu_delta_millicores') or 0) if _moves(node, 'cpu') else 0
    capacity, millicores = node.get('capacity_memory_bytes'), node.get('capacity_millicores')
    return {'memory_bytes': memory, 'share': float(memory) / capacity if capacity else None,
            'cpu_share': float(cpu) / millicores if millicores else None, 'cpu_millicores': cpu}


def demanded(node):
    """True when the decision is an increase and a reading has already passed what the node reserves."""
    if node.get('decision') != 'increase':
        return False
    margin = node.get('margin_bytes')
    return node.get('risk') == _memory_risk.EXCEEDED or (margin is not None and margin < 0)


def history_needed(node):
    """(seconds the history spans, seconds the decision needs) for a young node, None for a warm one.

    Young: the recommendation rests on the cold-start prior (``cold_start``), or there is no history at all (one
    reading). Where no prior applies (cold_start_prior none, no warm peer) the report does not carry the reaction
    time, and a multi-reading history counts as warm.
    """
    cold = node.get('cold_start')
    if cold:
        return float(cold.get('history_span_seconds') or 0), float(cold.get('warm_span_seconds') or 0)
    if ((node.get('history') or {}).get('samples') or 0) <= 1:
        # One reading, and no prior to say the reaction time: the role's default one.
        return 0.0, _headroom.WARM_SHARE * _duration.parse_window(_headroom.DEFAULTS['reaction_time'])
    return None


def _first_reading(node):
    history = node.get('history') or {}
    if history.get('since') is not None:
        return float(history['since'])
    series = history.get('series') or []
    return float(series[0][0]) if series else None


def observe_until(node, now_seconds):
    """The Unix time the history will span what the decision needs (module docstring), or None for a warm node."""
    needed = history_needed(node)
    if needed is None:
        return None
    span, need = needed
    candidates = [now_seconds + max(0.0, need - span)]
    takes_over = (node.get('cold_start') or {}).get('takes_over_at')
    first = _first_reading(node)
    if takes_over is not None:
        candidates.append(float(takes_over))
    elif first is not None and (node.get('history') or {}).get('samples', 0) > 1:
        candidates.append(first + need)
    return max(candidates)


def iso_date(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime('%Y-%m-%d')


def _change_words(node, change):
    parts = []
    if change['memory_bytes']:
        parts.append('%s reserved memory by %s (%.1f %% of the node)' % (
            'increase' if change['memory_bytes'] > 0 else 'decrease', units.memory(abs(change['memory_bytes'])),
            100.0 * abs(change['share'] or 0)))
    if change['cpu_millicores']:
        parts.append('%s reserved CPU by %s' % ('increase' if change['cpu_millicores'] > 0 else 'decrease',
                                                units.cpu(abs(change['cpu_millicores']))))
    return ' and '.join(parts) or '%s the reservation' % node.get('decision')


def node_verdict(node, now_seconds):
    """The verdict of one report node (module docstring); ``now_seconds``: the report's time (Unix)."""
    host = node.get('host')
    status = node.get('status')
    if status not in ('ok', 'no_kubelet'):
        return _verdict(FIX, '%s: %s' % (status, one_line(node.get('status_reason') or 'no reason given')),
                        RECHECK_COMMAND % _quoted(host))
    if status == 'no_kubelet':
        return _verdict(KEEP, NO_KUBELET)
    refusals = node.get('refusals') or []
    if refusals:
        return _verdict(FIX, 'apply would refuse: %s' % one_line('; '.join(refusals)), RECHECK_COMMAND % _quoted(host))
    if node.get('current') is None:
        return _verdict(FIX, 'no kubelet configuration found: what it reserves is unknown and apply refuses',
                        RECHECK_COMMAND % _quoted(host))
    change = change_of(node)
    if demanded(node):
        return _verdict(APPLY, 'a reading has passed what it reserves (%s): %s' % (
            one_line(node['memory_risk']['reason']) if node.get('risk') == _memory_risk.EXCEEDED else
            '%s of non-pod memory now, %s reserved' % (
                units.memory(node['measured']['non_pod_memory_bytes']),
                units.memory((node.get('current') or {}).get('reserved_memory_bytes'))),
            _change_words(node, change)), APPLY_COMMAND % _quoted(node.get('template_class')), change=change,
            demanded=True)
    until = observe_until(node, now_seconds)
    if until is not None:
        span, need = history_needed(node)
        pending = ('; its decision (%s) rests on the cold-start prior, not on what it did' % node.get('decision')
                   if node.get('decision') in ('increase', 'decrease') else '')
        return _verdict(OBSERVE, 'its history spans %.1f h of the %.1f h a decision needs, and no reading demands '
                        'more than it reserves%s' % (span / 3600.0, need / 3600.0, pending),
                        OBSERVE_COMMAND % _quoted(host), until=iso_date(until))
    if node.get('decision') in ('increase', 'decrease'):
        return _verdict(APPLY, '%s: beyond the change threshold, worth its restart' % _change_words(node, change),
                        APPLY_COMMAND % _quoted(node.get('template_class')), change=change)
    return _verdict(KEEP, 'the decision is keep: what it reserves is within the change threshold of the recommendation')


def urgency(verdict):
    """The verdict's place in URGENCY (0: most urgent)."""
    return URGENCY.index('demanded' if verdict.get('demanded') else verdict.get('action'))


def _hosts(nodes, action):
    return [node['host'] for node in nodes if (node.get('verdict') or {}).get('action') == action]


def class_verdict(name, nodes):
    """The class's verdict from its nodes' (each a report node with ``verdict``), with ``nodes_by_action``."""
    verdicts = [node.get('verdict') or {} for node in nodes]
    counts = dict.fromkeys(ACTIONS, 0)
    for verdict in verdicts:
        counts[verdict.get('action')] = counts.get(verdict.get('action'), 0) + 1
    if not verdicts:
        return dict(_verdict(KEEP, 'no node'), nodes_by_action=counts)
    worst = min(verdicts, key=urgency)
    action = worst['action']
    counted = ', '.join('%d %s' % (counts[key], key) for key in ACTIONS if counts[key])
    if action == APPLY:
        applied = [node for node in nodes if node['verdict']['action'] == APPLY]
        memory = sum(node['verdict']['change_memory_bytes'] or 0 for node in applied)
        capacity = sum(node.get('capacity_memory_bytes') or 0 for node in applied)
        grade = max((node['verdict']['severity'] for node in applied), key=SEVERITIES.index)
        demanding = sum(1 for node in applied if node['verdict']['demanded'])
        why = ('%d node(s) with a reading past what they reserve' % demanding if demanding else
               '%d change(s) worth their restart' % len(applied))
        verdict = _verdict(APPLY, '%s (%s): apply writes and restarts the %d apply node(s) only, net memory %s' % (
            why, counted, len(applied), units.memory(memory)), APPLY_COMMAND % _quoted(name), demanded=demanding)
        verdict.update(severity=grade, change_memory_bytes=memory,
                       change_share=float(memory) / capacity if capacity else None)
    elif action == FIX:
        hosts = _hosts(nodes, FIX)
        verdict = _verdict(FIX, '%d node(s) to fix first (%s), e.g. %s: %s' % (
            len(hosts), counted, hosts[0], worst['reason']), RECHECK_COMMAND % _quoted(','.join(hosts)))
    elif action == OBSERVE:
        until = max(verdict['until'] for verdict in verdicts if verdict.get('action') == OBSERVE)
        verdict = _verdict(OBSERVE, 'the history of %d node(s) does not span what a decision needs yet, and no '
                           'reading demands more (%s)' % (counts[OBSERVE], counted),
                           OBSERVE_CLASS_COMMAND % _quoted(name), until=until)
    else:
        verdict = _verdict(KEEP, worst['reason'] if counts[KEEP] == 1 else
                           'every node keeps its reservation (%s)' % counted)
    verdict['nodes_by_action'] = counts
    return verdict


def with_verdicts(nodes, now_seconds):
    """Each report node with its ``verdict``."""
    return [dict(node, verdict=node_verdict(node, now_seconds)) for node in nodes]
