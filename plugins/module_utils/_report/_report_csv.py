# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report as CSV: one row per node, the columns of ``COLUMNS`` in that order (issue 46).

A spreadsheet, a ticket attachment or ``pandas.read_csv`` reads it; the figures are the JSON report's own, exact
machine values (bytes, millicores, seconds, a share as Python's shortest round-tripping float), never the rounded
MiB/GiB a person reads in the Markdown. An empty cell is a value the JSON has as null (a node not measured has no
figures). Written by Python's ``csv`` module (RFC 4180: every text cell quoted, a quote doubled, a newline kept
inside its quoted cell), so a host, a class or a reason cannot add a column or a row.

Spreadsheet formula injection (OWASP, "CSV Injection"): a text cell that starts with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return is read as a formula by Excel, LibreOffice and Google Sheets; such a cell gets a leading
``'``, which they show as text. Reasons quote parsers' messages and hosts come from the inventory, so every text
cell goes through ``text_cell``; numbers are written as numbers (a negative change stays ``-1048576``).
"""

from __future__ import annotations

import csv
import io

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report

# (column, unit or kind, what it holds): the documented, stable header. New columns go at the end.
COLUMNS = (
    ('host', 'text', 'the inventory host name'),
    ('class', 'text', 'the node class (the inventory\'s nodealloc_node_class, else the size class); empty when not measured'),
    ('status', 'text', 'ok, no_kubelet, or why the node was not measured (failed, unreachable, ...)'),
    ('verdict_action', 'text', 'the verdict: apply, observe, keep or fix'),
    ('verdict_severity', 'text', 'minor, moderate or major (apply only: by the change\'s size)'),
    ('risk', 'text', 'the memory risk: exceeded, thin, not_configured, unknown, ok, no_kubelet'),
    ('capacity_memory_bytes', 'bytes', 'the node\'s memory (MemTotal)'),
    ('capacity_millicores', 'millicores', 'the node\'s CPUs'),
    ('non_pod_memory_now_bytes', 'bytes', 'memory in use outside the pods at this run'),
    ('non_pod_memory_peak_bytes', 'bytes', 'the larger of the history window\'s peak of non-pod memory and now'),
    ('reserved_now_memory_bytes', 'bytes', 'kubeReserved + systemReserved memory in force; empty: no config found'),
    ('reserved_now_millicores', 'millicores', 'kubeReserved + systemReserved CPU in force'),
    ('recommended_memory_bytes', 'bytes', 'the recommended kubeReserved + systemReserved memory'),
    ('recommended_millicores', 'millicores', 'the recommended kubeReserved + systemReserved CPU'),
    ('change_memory_bytes', 'bytes', 'the verdict\'s change of reserved memory (negative: given back to pods)'),
    ('change_share', 'fraction', 'that change as a fraction of the node\'s memory, negative for a decrease'),
    ('decision', 'text', 'the policy\'s decision: increase, decrease or keep'),
    ('history_source', 'text', 'where the history came from: node, prometheus or none'),
    ('history_span_seconds', 'seconds', 'how long the history spans (a fractional part where the readings have one)'),
    ('reason', 'text', 'one sentence: the verdict\'s reason, else why the node was not measured, else its memory risk'),
)
FIELDS = tuple(name for name, _unit, _meaning in COLUMNS)
NUMERIC = frozenset(name for name, unit, _meaning in COLUMNS if unit != 'text')

# What a spreadsheet takes for the start of a formula (OWASP CSV Injection).
FORMULA_STARTS = ('=', '+', '-', '@', '\t', '\r')


def text_cell(value):
    """``value`` as a text cell: a leading ``'`` where it would start a formula; None (an empty cell) for None."""
    if value is None:
        return None
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def number_cell(value):
    """An exact number, as the ``csv`` module writes it (an ``int`` as digits, a ``float`` as its shortest
    round-tripping form); None (an empty cell) for None or a non-number: a report from another version may hold
    anything there, and it becomes an empty cell, never text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def row(node):
    """The node's cells by column name, before the cell forms: the JSON's own values."""
    verdict = node.get('verdict') if isinstance(node.get('verdict'), dict) else {}
    memory_risk = node.get('memory_risk') or {}
    measured = _fleet_report.measured(node)
    history = node.get('history') or {}
    return {
        'host': node.get('host'),
        'class': node.get('template_class'),
        'status': node.get('status'),
        'verdict_action': verdict.get('action'),
        'verdict_severity': verdict.get('severity'),
        'risk': node.get('risk'),
        'capacity_memory_bytes': node.get('capacity_memory_bytes'),
        'capacity_millicores': node.get('capacity_millicores'),
        'non_pod_memory_now_bytes': (node.get('measured') or {}).get('non_pod_memory_bytes'),
        'non_pod_memory_peak_bytes': memory_risk.get('peak_bytes'),
        'reserved_now_memory_bytes': (node.get('current') or {}).get('reserved_memory_bytes'),
        'reserved_now_millicores': node.get('reserved_now_millicores'),
        'recommended_memory_bytes': node.get('recommended_reserved_memory_bytes'),
        'recommended_millicores': node.get('recommended_reserved_millicores'),
        'change_memory_bytes': verdict.get('change_memory_bytes'),
        'change_share': verdict.get('change_share'),
        'decision': node.get('decision'),
        'history_source': _fleet_report.history_source_of(node) if measured else None,
        'history_span_seconds': history.get('span_seconds') if measured else None,
        'reason': verdict.get('reason') or node.get('status_reason') or memory_risk.get('reason'),
    }


def render_csv(report):
    """The whole CSV (header, then one row per node in the report's order) as text with CRLF line ends (RFC 4180)."""
    out = io.StringIO()
    # Every text cell in quotes (OWASP's advice with the leading quote); numbers and empty cells bare, so a number
    # is never read as text.
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator='\r\n')
    writer.writerow(FIELDS)
    for node in report.get('nodes') or []:
        cells = row(node)
        writer.writerow([number_cell(cells[name]) if name in NUMERIC else text_cell(cells[name]) for name in FIELDS])
    return out.getvalue()
