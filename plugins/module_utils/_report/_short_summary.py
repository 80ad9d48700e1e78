# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The short summary: at most ``MAX_LINES`` plain lines, for a chat message or a ticket (issue 46).

The fleet's counts, one line per node class with its verdict and the command that carries it out (the most urgent
classes first, the rest counted in one line), the ``RISKIEST`` riskiest nodes, what changed since the previous
report where one was given, and where the full files are. The same at 5 nodes as at 5,000: the fleet summary
(``_fleet_summary``) and the report files hold the rest.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_summary, _report_changes

MAX_LINES = 20
# A line longer than this reads badly in a chat message: a class's command that would make it longer (a fix listing
# every host to measure again) is left to the report, the line gives the verdict's reason.
MAX_LINE_CHARACTERS = 160
RISKIEST = 3
# The order a reader should act in, the verdict's own (_verdict.URGENCY): an increase a reading already demands, what
# needs fixing, what to apply, what to watch, what to leave; an apply by its severity. A class without a verdict (a
# report from before verdicts) comes after all of them.
ACTION_ORDER = ('demanded', 'fix', 'apply', 'observe', 'keep')
SEVERITY_ORDER = ('major', 'moderate', 'minor')


def _verdict(entry):
    verdict = entry.get('verdict')
    return verdict if isinstance(verdict, dict) else {}


def _rank(order, value):
    return order.index(value) if value in order else len(order)


def urgency(entry):
    """A class's place in the summary: by its verdict (``ACTION_ORDER``), an apply by its severity, then the nodes at
    risk, then the larger class."""
    verdict = _verdict(entry)
    risk = entry.get('risk') or {}
    return (_rank(ACTION_ORDER, 'demanded' if verdict.get('demanded') else verdict.get('action')),
            _rank(SEVERITY_ORDER, verdict.get('severity')),
            -(risk.get('exceeded', 0) + risk.get('thin', 0)), -(entry.get('nodes') or 0), str(entry.get('name')))


def class_line(entry):
    """``  name (N nodes): action [until DATE] [(severity)]: command``; the reason (cut to the line's length) where
    there is no command or where the command would make the line longer than ``MAX_LINE_CHARACTERS``."""
    verdict = _verdict(entry)
    action = verdict.get('action') or 'no verdict'
    if verdict.get('until'):
        action += ' until %s' % verdict['until']
    if verdict.get('severity'):
        action += ' (%s)' % verdict['severity']
    start = '  %s (%d nodes): %s: ' % (entry.get('name'), entry.get('nodes') or 0, action)
    command = verdict.get('command')
    if command and len(start) + len(command) <= MAX_LINE_CHARACTERS:
        return start + command
    reason = verdict.get('reason') or 'see the report'
    tail = '; the command is in the report' if command else ''
    room = max(40, MAX_LINE_CHARACTERS - len(start) - len(tail))
    # A reason may quote a parser's message: cut, since the report files hold it whole.
    return start + (reason if len(reason) <= room else reason[:room - 3] + '...') + tail


def _counts_line(report):
    """The node counts by verdict, where the nodes carry one."""
    counts = {}
    for node in report.get('nodes') or []:
        action = (node.get('verdict') or {}).get('action') if isinstance(node.get('verdict'), dict) else None
        if action:
            counts[action] = counts.get(action, 0) + 1
    if not counts:
        return None
    return 'Nodes by verdict: %s.' % ', '.join('%d %s' % (counts[action], action) for action in sorted(
        counts, key=lambda action: _rank(ACTION_ORDER, action)))


def _history_line(summary):
    sources = summary.get('history_source') or {}
    line = 'History: %d on their own file, %d on Prometheus, %d on one reading' % (
        sources.get('node', 0), sources.get('prometheus', 0), sources.get('none', 0))
    if summary.get('cold_start_floor'):
        line += '; %d held at the cold-start floor' % summary['cold_start_floor']
    return line + '.'


def _risky_line(node):
    memory_risk = node.get('memory_risk') or {}
    return '  %s (%s): %s, reserves %s, peak %s' % (
        node['host'], node.get('template_class') or '-', str(node.get('risk')).replace('_', ' '),
        units.memory(memory_risk.get('reserved_bytes')), units.memory(memory_risk.get('peak_bytes')))


def lines(report, where=None):
    """The short summary as plain lines (never more than ``MAX_LINES``); ``where``: the report files, as a phrase."""
    head = ['Kubelet reservations, %s: %s' % (report.get('generated_at'), _fleet_summary.headline(report)),
            _history_line(report.get('summary') or {})]
    counts = _counts_line(report)
    if counts:
        head.append(counts)
    risky = _fleet_summary.riskiest(report, RISKIEST)
    tail = (['Riskiest nodes:'] + [_risky_line(node) for node in risky]) if risky else []
    changes = report.get('changes')
    if changes:
        tail.append(_report_changes.headline(changes))
    tail.append('Full report: %s.' % (where or 'the JSON, Markdown, HTML and CSV report files'))
    classes = sorted(report.get('classes') or [], key=urgency)
    room = MAX_LINES - len(head) - len(tail) - 1  # the "Per node class" line
    if len(classes) > room:
        shown = [class_line(entry) for entry in classes[:room - 1]]
        shown.append('  and %d more classes (the report\'s class table)' % (len(classes) - room + 1))
    else:
        shown = [class_line(entry) for entry in classes]
    out = head + ['Per node class, most urgent first:'] + shown + tail
    # Hosts, class names and reasons come from nodes and result files: each stays on its line (units.plain_text).
    return [units.plain_text(line) for line in out]
