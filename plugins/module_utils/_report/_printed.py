# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What recommend.yml and report_merge.yml print for a small fleet (the filter's ``text_lines`` up to
``_fleet_report.JOB_OUTPUT_NODES`` nodes; a larger fleet prints the short summary, ``_short_summary``): one terminal
screen a node, in plain words.

Issue 46: the job output for one node was 85 lines of the module's arithmetic (watermarks, cgroup weights, rounding
steps), which belongs in the report's files. Here each node gets a screen of about 20 lines: its verdict first
(``node['verdict']``, from ``_verdict``; the decision where a report carries none), then what was measured, what is
recommended beside the cloud vendors' formulas for its size, what apply would change, and where the arithmetic is.
Every line is at most ``WIDTH`` characters (AWX and a terminal show it unwrapped) and plain text (``units.plain_text``:
hosts and reasons come from nodes and result files).
"""

from __future__ import annotations

import textwrap

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _other_resources

WIDTH = 72  # with the "    - '...'" ansible.builtin.debug puts around each line: 80 columns
ACTION_WORDS = {'apply': 'APPLY NOW', 'observe': 'OBSERVE', 'keep': 'KEEP AS IT IS', 'fix': 'FIX FIRST'}
FILES = "Each figure's arithmetic: the JSON, Markdown and HTML report files."


def _verdict(entry):
    """The verdict an entry (node or class) carries (the shared contract, issue 46), or {} where it has none."""
    verdict = entry.get('verdict')
    return verdict if isinstance(verdict, dict) else {}


def verdict_words(verdict):
    """``APPLY NOW (major)``, ``OBSERVE until 2026-12-13``: the verdict's action as a person reads it, or None."""
    action = verdict.get('action')
    if not action:
        return None
    words = ACTION_WORDS.get(action, str(action).upper())
    if verdict.get('until'):
        words += ' until %s' % str(verdict['until'])[:10]
    if verdict.get('severity'):
        words += ' (%s change)' % verdict['severity']
    return words


def _one_line(text, limit=160):
    """A reason on one line (a parser's message may span several), cut at ``limit`` characters."""
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + '...'


def _wrapped(text, indent='', more='    '):
    """``text`` as lines of at most WIDTH characters, the first indented by ``indent``, the rest by ``indent + more``."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + more,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def _reserved(reservation):
    """``memory 3817Mi, CPU 565m`` of a kubeReserved or systemReserved map (``-`` where a field is unset)."""
    reservation = reservation or {}
    return 'memory %s, CPU %s' % (reservation.get('memory') or '-', reservation.get('cpu') or '-')


def _history_words(node):
    history = node.get('history') or {}
    source = history.get('source') or ('node' if (history.get('samples') or 0) > 1 else 'none')
    if source == 'none':
        return 'one reading, no history recorded yet'
    hours = (history.get('span_seconds') or 0) / 3600.0
    span = '%.1f days' % (hours / 24.0) if hours >= 48 else '%.1f hours' % hours
    origin = 'Prometheus' if source == 'prometheus' else 'the node\'s history file'
    return '%d readings over %s, from %s' % (history.get('samples') or 0, span, origin)


def _node_verdict_lines(node):
    """The node's verdict first: its action and reason, and the command that carries it out."""
    verdict = _verdict(node)
    words = verdict_words(verdict)
    if words:
        out = _wrapped('%s: %s - %s' % (node['host'], words, verdict.get('reason') or ''))
        out += _command_lines(verdict.get('command'))
        if node['status'] == 'no_kubelet':
            out += _wrapped(str(node.get('status_reason')), '  ')  # why there is nothing to apply, in the report's words
        return out
    # A report from before verdicts: the status or the decision, with its first reason.
    if 'measured' not in node:
        return _wrapped('%s: NOT MEASURED (%s) - %s' % (node['host'], node['status'], _one_line(node['status_reason'])))
    if node['status'] == 'no_kubelet':
        return _wrapped('%s: NOTHING TO APPLY - %s' % (node['host'], node.get('status_reason')))
    reasons = node.get('decision_reasons') or []
    return _wrapped('%s: %s%s' % (node['host'], str(node.get('decision') or 'no decision').upper(),
                                  ' - ' + units.humanize(reasons[0]) if reasons else ''))


def _command_lines(command):
    """The command that carries the verdict out, never wrapped (it is copied as it is): after ``Run:`` where the line
    has room, else on a line of its own."""
    if not command:
        return []
    line = '  Run: %s' % command
    return [line] if len(line) <= WIDTH else ['  Run:', '  %s' % command]


def _packed(items, indent):
    """``items`` joined by ``; `` into lines of at most WIDTH characters, never breaking an item."""
    out, line = [], ''
    for item in items:
        if line and len(indent + line + '; ' + item) > WIDTH:
            out.append(indent + line + ';')
            line = item
        else:
            line = line + '; ' + item if line else item
    return out + [indent + line] if line else out


def _figure(label, memory, cpu, note=''):
    return '    %-24s %10s %6s%s' % (label, memory, cpu, '  ' + note if note else '')


def _measured_lines(node):
    measured = node['measured']
    memory_risk = node.get('memory_risk') or {}
    out = ['  Measured (%s):' % _history_words(node),
           _figure('capacity', units.memory(node.get('capacity_memory_bytes')), units.cpu(node.get('capacity_millicores'))),
           _figure('used outside the pods', units.memory(max(0, measured['non_pod_memory_bytes'])),
                   units.cpu(measured['non_pod_millicores']), 'now')]
    if memory_risk.get('peak_bytes') is not None:
        out.append(_figure('  at its peak', units.memory(memory_risk['peak_bytes']), '-', 'in the history'))
    if node['status'] == 'ok':
        current = node.get('current')
        if current is None:
            out.append('    reserved now: unknown (no kubelet config found; apply refuses)')
        else:
            out.append(_figure('reserved now', units.memory(current.get('reserved_memory_bytes') or 0),
                               units.cpu(node.get('reserved_now_millicores') or 0), 'for the system'))
        reason = memory_risk.get('reason') or ''
        # Said once: a verdict that quotes the risk's reason is not followed by the same sentence.
        said = reason and reason in str(_verdict(node).get('reason') or '')
        out += _wrapped('memory risk: %s%s' % (str(node['risk']).replace('_', ' '), '' if said else ' - ' + reason),
                        '    ')
    return out


def _floor_words(cold):
    """Why the recommendation is a vendor's formula (or the class's) and not the measurement, and until when."""
    floor = "the class's warm nodes" if cold.get('floor') == 'class' else 'the %s formula' % cold.get('floor')
    return ('raised to %s until the history spans %.0f hours (measured alone: %s)'
            % (floor, (cold.get('warm_span_seconds') or 0) / 3600.0, units.memory(cold.get('measured_memory_bytes'))))


def _recommended_lines(node):
    no_kubelet = node['status'] == 'no_kubelet'
    memory, cpu = node['recommended_reserved_memory_bytes'], node['recommended_reserved_millicores']
    cold = node.get('cold_start') or {}
    if cold.get('raised'):
        why = _floor_words(cold)
    else:
        why = 'what it uses outside the pods plus %s headroom' % units.memory(node.get('memory_headroom_bytes'))
    out = ['  Recommended%s:' % (' if a kubelet ran here' if no_kubelet else '')]
    out.append(_figure('reserve for the system', units.memory(memory), units.cpu(cpu)))
    out += _wrapped(why, '      ')
    if not no_kubelet:
        recommended = node.get('recommended') or {}
        out += _wrapped('kubeReserved %s; systemReserved %s' % (_reserved(recommended.get('kube_reserved')),
                                                                _reserved(recommended.get('system_reserved'))), '    ')
        out.append(_figure('left for the pods', units.memory(node.get('allocatable_memory_bytes')),
                           units.cpu(node.get('allocatable_millicores')), 'allocatable'))
    formulas = sorted((node.get('formulas') or {}).items())
    if formulas:
        out.append("  The cloud vendors' formulas for this size reserve (memory, CPU):")
        out += _packed(['%s %s, %s' % (name, units.memory(formula.get('reserved_memory_bytes')),
                                       units.cpu(formula.get('reserved_millicores'))) for name, formula in formulas],
                       '    ')
        largest = max(formula.get('reserved_memory_bytes') or 0 for _name, formula in formulas)
        if memory > largest:
            out += _wrapped('The recommendation is %s above the largest.' % units.memory(memory - largest), '    ')
    return out


def _change_lines(node):
    """What apply would change, as one line per field (the diff itself is in the files)."""
    if node['status'] != 'ok' or not node.get('config_diff'):
        return []
    current, recommended = node.get('current') or {}, node.get('recommended') or {}
    changed = []
    for key, title in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
        before, after = current.get(key) or {}, recommended.get(key) or {}
        for field in ('memory', 'cpu'):
            if str(before.get(field) or '') != str(after.get(field) or ''):
                changed.append('%s %s %s -> %s' % (title, field, before.get(field) or 'unset', after.get(field) or 'unset'))
    if not changed:
        return []
    return _wrapped('Apply would write into %s: %s.' % (node.get('kubelet_config'), '; '.join(changed)), '  ')


def node_screen(node):
    """One node's screen: its verdict, what was measured, what is recommended, what apply would change."""
    out = _node_verdict_lines(node)
    if 'measured' not in node:
        return out
    managers = []
    for sentence in node.get('resource_managers') or []:  # the static CPU/memory managers (_node_plan)
        managers += _wrapped(sentence[:1].upper() + sentence[1:] + '.', '  ')
    others = []
    entries = node.get('other_resources') or []
    for entry, (resource, used, now, recommended, allocatable, written) in zip(entries, _other_resources.rows(node)):
        if entry['recommended'] is None:  # not measured: the reason alone, not a row of dashes
            others += _wrapped('%s: not measured: %s.' % (_other_resources.SPOKEN[resource], entry['reason']), '  ')
            continue
        others += _wrapped('%s: %s used outside the pods, %s reserved now, %s recommended, allocatable %s; written: %s.'
                           % (_other_resources.SPOKEN[resource], used, now, recommended, allocatable, written), '  ')
    return out + _measured_lines(node) + _recommended_lines(node) + others + _change_lines(node) + managers


def lines(report):
    """The printed message as plain lines of at most WIDTH characters."""
    out = []
    for node in report['nodes']:
        out += node_screen(node) + ['']
    out.append(FILES)
    shown = []
    for line in out:
        # A control character in a host or reason becomes \xNN (longer): the line is wrapped again where it grew.
        text = units.plain_text(line)
        shown += [text] if len(text) <= WIDTH else _wrapped(text.strip(), ' ' * (len(text) - len(text.lstrip())))
    return shown
