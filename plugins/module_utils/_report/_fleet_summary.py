# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet summary a report starts with, and all a job's output prints (issue 37): bounded at any fleet size.

First one line per node class with its verdict (``verdict_lines``, issue 46: ``_verdict.class_verdict``): the
action, its reason and the command that carries it out, and the flags its template raises
(``_memory_risk.reservation_flags``). Then the counts by status and memory risk, per node class what to do (``report['classes']``, ``_fleet_classes``), the
nodes that were not measured with their reason, and the riskiest nodes (the report's own order, ``_memory_risk``),
at most ``TOP`` of each list: at 500 nodes the per-node text runs to tens of thousands of lines and belongs in the
report's files, not in a job log.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _model_template
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk

TOP = 20
CLASS_HEADER = ('node class', 'nodes', 'recommended kubeReserved + systemReserved memory / CPU', 'increase',
                'decrease', 'keep', 'restarts', 'memory given back', 'memory taken', 'cold-start floor',
                'exceeded', 'thin', 'not configured')
RISKY_HEADER = ('host', 'node class', 'memory risk', 'reserved', 'history peak', 'decision', 'why')


def _gib(value_bytes):
    return '%.1f GiB' % (value_bytes / float(units.GIB))


def _reserved(recommended):
    """The class's templates' reservation, memory and CPU summed over kubeReserved and systemReserved."""
    if not recommended:
        return 'no template (no node with a kubelet)'
    parts = []
    for field in ('kube_reserved', 'system_reserved'):
        values = recommended.get(field) or {}
        parts.append('%s/%s' % (values.get('memory', '-'), values.get('cpu', '-')))
    return ' + '.join(parts)


def class_rows(report):
    """Per node class, what to do, as rows of CLASS_HEADER."""
    rows = []
    for entry in report.get('classes') or []:
        risk = entry.get('risk') or {}
        reserved = '-' if entry['nodes'] == entry['not_measured'] else _reserved(entry.get('recommended'))
        rows.append((entry['name'], str(entry['nodes']), reserved, str(entry['increase']),
                     str(entry['decrease']), str(entry['keep']), str(entry['kubelet_restarts']),
                     _gib(entry['memory_given_back_bytes']), _gib(entry['memory_taken_bytes']),
                     str(entry['on_cold_start_prior']), str(risk.get(_memory_risk.EXCEEDED, 0)),
                     str(risk.get(_memory_risk.THIN, 0)), str(risk.get(_memory_risk.NOT_CONFIGURED, 0))))
    return rows


def riskiest(report, count=TOP):
    """The ``count`` measured nodes with a kubelet at the worst memory risk (the report's order), ok ones left out."""
    return [node for node in report['nodes'] if node['status'] == 'ok' and node['risk'] != _memory_risk.OK][:count]


def risky_rows(report, count=TOP):
    rows = []
    for node in riskiest(report, count):
        memory_risk = node['memory_risk']
        rows.append((node['host'], node.get('template_class') or '-', node['risk'].replace('_', ' '),
                     units.memory(memory_risk.get('reserved_bytes')), units.memory(memory_risk.get('peak_bytes')),
                     node.get('decision') or '-', memory_risk['reason']))
    return rows


def not_measured(report, count=TOP):
    """(host, status, reason) of at most ``count`` nodes that were not measured, and how many more there are."""
    nodes = [node for node in report['nodes'] if 'measured' not in node]
    # One line each: a reason may quote a parser's multi-line message.
    return ([(node['host'], node['status'], ' '.join(str(node['status_reason']).split())) for node in nodes[:count]],
            max(0, len(nodes) - count))


def verdict_parts(entry):
    """('<class> (<n> nodes): <ACTION>', reason, command or None): ACTION with 'until DATE' for observe and its
    severity for apply."""
    verdict = entry.get('verdict') or {}
    action = str(verdict.get('action') or 'unknown').upper()
    if verdict.get('until'):
        action += ' until %s' % verdict['until']
    if verdict.get('severity'):
        action += ' (%s)' % verdict['severity']
    return '%s (%d nodes): %s' % (entry['name'], entry['nodes'], action), verdict.get('reason') or '', verdict.get('command')


def verdict_line(entry):
    """'<class> (<n> nodes): <ACTION> - <reason>; run: <command>' (no command for keep)."""
    head, reason, command = verdict_parts(entry)
    return '%s \u2014 %s%s' % (head, reason, '; run: %s' % command if command else '')


def template_flags(entry):
    """The class template's flags as sentences."""
    return [flag['reason'] for flag in entry.get('flags') or []]


def headline(report):
    """One sentence: how many nodes, by status and by memory risk."""
    summary = report.get('summary') or {}
    status = ', '.join('%d %s' % (n, k.replace('_', ' ')) for k, n in sorted((summary.get('status') or {}).items()))
    risk = ', '.join('%d %s' % (n, k.replace('_', ' ')) for k, n in sorted(
        (summary.get('risk') or {}).items(), key=lambda item: _memory_risk.rank(item[0])))
    return '%d nodes (%s); memory risk: %s.' % (len(report['nodes']), status or 'none', risk or 'none')


def text_lines(report, files=None):
    """The fleet summary as plain lines (the job output); ``files``: where the full report was written, if known."""
    out = ['What to do, per node class:']
    for entry in report.get('classes') or []:
        out.append('  ' + verdict_line(entry))
        out.extend('    flagged: the class template %s' % flag for flag in template_flags(entry))
        if entry.get('model'):
            out.append('    ' + _model_template.header_line(entry['model']))
    out += ['', 'Kubelet reservation report, %s: %s' % (report['generated_at'], headline(report)), '',
            'Per node class, what apply would do:']
    out.extend('  ' + line for line in units.aligned([CLASS_HEADER] + class_rows(report), right=(1, 3, 4, 5, 6, 7, 8,
                                                                                                 9, 10, 11, 12)))
    missed, more = not_measured(report)
    if missed:
        out += ['', 'Not measured (look at these first):']
        out.extend('  %s: %s, %s' % row for row in missed)
        if more:
            out.append('  ... and %d more (see the report files)' % more)
    rows = risky_rows(report)
    if rows:
        out += ['', 'The %d riskiest nodes (memory risk: %s):' % (len(rows), '; '.join(
            '%s: %s' % (name.replace('_', ' '), _memory_risk.MEANING[name])
            for name in (_memory_risk.EXCEEDED, _memory_risk.THIN, _memory_risk.NOT_CONFIGURED)))]
        out.extend('  ' + line for line in units.aligned([RISKY_HEADER] + rows, right=(3, 4)))
    out += ['', 'Each node in full: %s.' % (', '.join(files) if files else 'the JSON, Markdown and HTML report files')]
    return out


def _escaped(rows):
    """Every cell as Markdown text: hosts, classes and reasons come from nodes and result files (units.markdown_text)."""
    return [tuple(units.markdown_text(cell) for cell in row) for row in rows]


def markdown_lines(report):
    """The fleet summary as Markdown: the start of the Markdown report."""
    out = ['## What to do, per node class', '']
    for entry in report.get('classes') or []:
        head, reason, command = verdict_parts(entry)
        run = '; run: `%s`' % units.markdown_code(command) if command else ''
        out.append('- **%s** \u2014 %s%s' % (units.markdown_text(head), units.markdown_text(reason), run))
        out.extend('  - flagged: the class template %s' % units.markdown_text(flag) for flag in template_flags(entry))
        if entry.get('model'):
            out.append('  - ' + units.markdown_text(_model_template.header_line(entry['model'])))
    out += ['', '## Fleet summary', '', units.markdown_text(headline(report)), '',
            '### Per node class, what apply would do', '']
    out.extend(units.markdown_table(CLASS_HEADER, _escaped(class_rows(report)), right=(1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)))
    missed, more = not_measured(report)
    if missed:
        out += ['', '### Not measured', '']
        out.extend('- **%s**: %s, %s' % row for row in _escaped(missed))
        if more:
            out.append('- ... and %d more, below' % more)
    rows = risky_rows(report)
    if rows:
        out += ['', '### The %d riskiest nodes' % len(rows), '']
        out.extend(units.markdown_table(RISKY_HEADER, _escaped(rows), right=(3, 4)))
    out.append('')
    return out
