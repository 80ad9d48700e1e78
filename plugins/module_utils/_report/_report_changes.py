# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What changed since the previous report (issue 46): the ``changes`` section of the report and its rendering.

The previous report is the JSON a former run wrote (``reservations.json``), read from a path on the controller
(``read_previous``): at most ``MAX_PREVIOUS_BYTES`` (a 500-node report is about 6 MB), JSON, a ``schema_version``
this code knows (``READABLE_SCHEMA_VERSIONS``) and nodes with a host name each; anything else is refused with a
reason, which the report carries instead of a comparison (``compared: false``), since a missing or broken previous
file must not cost the measurement of a fleet.

``compare`` lists, by host: the nodes added and gone, the status changes (a node failing now, or measured again),
the recommendations moved (total kubeReserved + systemReserved memory and CPU, before, now and by how much), the
memory risk transitions (only between reports of schema 3 or later: version 2 had other risk words) and the
verdict changes (where both reports carry a verdict); per node class, the same counted, with the class's node
count and verdict before and now. The JSON keeps every entry; the Markdown shows at most ``SHOWN`` of each list.
"""

from __future__ import annotations

import json

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError

MAX_PREVIOUS_BYTES = 128 * 1024 * 1024
READABLE_SCHEMA_VERSIONS = (2, 3, 4)
# Version 3 replaced the risk words (high/medium/low/none) by the history-based categories.
RISK_WORDS_SINCE = 3
SHOWN = 100
LISTS = ('nodes_added', 'nodes_gone', 'status_changes', 'recommendations_moved', 'risk_transitions',
         'verdict_changes')
LIST_WORDS = {'nodes_added': 'added', 'nodes_gone': 'gone', 'status_changes': 'status changes',
              'recommendations_moved': 'recommendations moved', 'risk_transitions': 'risk transitions',
              'verdict_changes': 'verdict changes'}


def _problem(path, what):
    return ParseError('previous report %s %s' % (path, what))


def read_previous(path, max_bytes=MAX_PREVIOUS_BYTES):
    """The report document at ``path``; ParseError with the reason when it is missing, too large, not JSON, of a
    schema version this code cannot read, or without its nodes."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise _problem(path, 'cannot be read: %s' % (exc.strerror or exc)) from exc
    if len(data) > max_bytes:
        raise _problem(path, 'is larger than %d MiB: not a report this collection wrote' % (max_bytes >> 20))
    try:
        document = json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _problem(path, 'is not JSON (%s)' % ' '.join(str(exc).split())[:200]) from exc
    check(document, path)
    return document


def check(document, path='(given)'):
    """Refuse a document that is not a fleet report of a readable schema version (ParseError)."""
    if not isinstance(document, dict):
        raise _problem(path, 'is not a report: a JSON %s, not an object' % type(document).__name__)
    version = document.get('schema_version')
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        raise _problem(path, 'has schema_version %s, which this collection cannot compare (it reads %s)' % (
            units.plain_text(repr(version))[:40], ', '.join(str(v) for v in READABLE_SCHEMA_VERSIONS)))
    nodes = document.get('nodes')
    if not isinstance(nodes, list) or not all(isinstance(n, dict) and isinstance(n.get('host'), str) for n in nodes):
        raise _problem(path, 'has no list of nodes with a host name each')
    hosts = set()
    for node in nodes:
        if node['host'] in hosts:
            raise _problem(path, 'has host %s twice' % units.plain_text(node['host'])[:200])
        hosts.add(node['host'])
    if not isinstance(document.get('classes', []), list):
        raise _problem(path, 'has classes that are not a list')


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _word(value):
    return value if isinstance(value, str) else None


def _action(node):
    verdict = node.get('verdict')
    return _word(verdict.get('action')) if isinstance(verdict, dict) else None


def _class_of(node):
    return _word(node.get('template_class')) or 'not measured'


def _moved(host, before, now):
    """The recommendation's move on a node measured in both reports, or None when it did not move."""
    out = {'host': host}
    moved = False
    for key, field in (('memory', 'recommended_reserved_memory_bytes'), ('millicores', 'recommended_reserved_millicores')):
        old, new = _number(before.get(field)), _number(now.get(field))
        suffix = '_bytes' if key == 'memory' else ''
        out.update({'%s_before%s' % (key, suffix): old, '%s_now%s' % (key, suffix): new,
                    '%s_change%s' % (key, suffix): None if old is None or new is None else new - old})
        moved = moved or (old is not None and new is not None and old != new)
    return out if moved else None


def compare(previous, current, previous_path=None):
    """The ``changes`` section: what differs between ``previous`` and ``current`` (two report documents)."""
    before = {node['host']: node for node in previous['nodes']}
    now = {node['host']: node for node in current.get('nodes') or []}
    same_risk_words = min(previous['schema_version'], current.get('schema_version') or 0) >= RISK_WORDS_SINCE
    changes = {'compared': True, 'previous_path': previous_path,
               'previous_generated_at': _word(previous.get('generated_at')),
               'previous_schema_version': previous['schema_version'],
               'risk_compared': same_risk_words,
               'nodes_added': [{'host': host, 'class': _class_of(now[host]), 'status': now[host].get('status')}
                               for host in sorted(set(now) - set(before))],
               'nodes_gone': [{'host': host, 'class': _class_of(before[host]), 'status': _word(before[host].get('status'))}
                              for host in sorted(set(before) - set(now))],
               'status_changes': [], 'recommendations_moved': [], 'risk_transitions': [], 'verdict_changes': []}
    for host in sorted(set(before) & set(now)):
        old, new = before[host], now[host]
        if _word(old.get('status')) != new.get('status'):
            changes['status_changes'].append({'host': host, 'class': _class_of(new), 'before': _word(old.get('status')),
                                              'now': new.get('status')})
        moved = _moved(host, old, new)
        if moved:
            changes['recommendations_moved'].append(dict(moved, **{'class': _class_of(new)}))
        if same_risk_words and _word(old.get('risk')) != new.get('risk'):
            changes['risk_transitions'].append({'host': host, 'class': _class_of(new), 'before': _word(old.get('risk')),
                                                'now': new.get('risk')})
        if _action(old) and _action(new) and _action(old) != _action(new):
            changes['verdict_changes'].append({'host': host, 'class': _class_of(new), 'before': _action(old),
                                               'now': _action(new)})
    changes['counts'] = {name: len(changes[name]) for name in LISTS}
    changes['classes'] = _class_changes(previous, current, changes)
    return changes


def _class_changes(previous, current, changes):
    """Per class (by its name in either report): its node count and verdict before and now, and how many of each
    node change it holds; only the classes where something changed."""
    def by_name(report):
        return {entry['name']: entry for entry in report.get('classes') or []
                if isinstance(entry, dict) and isinstance(entry.get('name'), str)}
    old, new = by_name(previous), by_name(current)
    names = set(old) | set(new) | {entry['class'] for name in LISTS for entry in changes[name]}
    out = []
    for name in sorted(names):
        counts = {key: sum(1 for entry in changes[key] if entry['class'] == name) for key in LISTS}
        entry = {'name': name, 'nodes_before': _number((old.get(name) or {}).get('nodes')),
                 'nodes_now': _number((new.get(name) or {}).get('nodes')),
                 'verdict_before': _action(old.get(name) or {}), 'verdict_now': _action(new.get(name) or {}),
                 'counts': counts}
        if (any(counts.values()) or entry['nodes_before'] != entry['nodes_now']
                or entry['verdict_before'] != entry['verdict_now']):
            out.append(entry)
    return out


def not_compared(previous_path, reason):
    """The ``changes`` section when the previous report could not be read: the reason instead of a comparison."""
    return {'compared': False, 'previous_path': previous_path, 'reason': reason}


def with_changes(report, previous_path):
    """``report`` with its ``changes`` section against the report at ``previous_path`` (none without a path)."""
    if not previous_path:
        return report
    try:
        section = compare(read_previous(previous_path), report, previous_path)
    except ParseError as exc:
        section = not_compared(previous_path, str(exc))
    return dict(report, changes=section)


def headline(changes):
    """One line: what changed since the previous report, or why it was not compared."""
    if not changes.get('compared'):
        return 'Changes: not compared: %s' % changes.get('reason')
    counts = changes['counts']
    parts = ['%d %s' % (counts[name], LIST_WORDS[name]) for name in LISTS
             if counts[name] or name in ('nodes_added', 'nodes_gone', 'recommendations_moved')]
    if not changes.get('risk_compared'):
        parts.append('risk not compared (schema %s)' % changes['previous_schema_version'])
    return 'Changes since %s: %s.' % (changes.get('previous_generated_at') or 'the previous report', ', '.join(parts))


def _cut(rows):
    more = len(rows) - SHOWN
    return rows[:SHOWN], (['', '... and %d more (the JSON report\'s `changes` holds every one)' % more] if more > 0 else [])


def _both(before, now):
    return '%s → %s' % ('-' if before is None else before, '-' if now is None else now)


def markdown_lines(changes):
    """The changes as a Markdown section (``##`` and ``###`` headings); [] without a previous report."""
    if not changes:
        return []
    md = units.markdown_text
    out = ['## Changes since the previous report', '']
    if not changes.get('compared'):
        return out + ['Not compared: %s.' % md(changes.get('reason')), '']
    out += ['Compared with %s (generated %s, schema %s): %s' % (
        md(changes.get('previous_path') or 'the previous report'), md(changes.get('previous_generated_at') or '-'),
        changes['previous_schema_version'], md(headline(changes).partition(': ')[2])), '']
    if changes['classes']:
        out += ['### Per node class', '']
        out.extend(units.markdown_table(
            ('node class', 'nodes', 'verdict', 'added', 'gone', 'status changes', 'recommendations moved',
             'risk transitions', 'verdict changes'),
            [(md(entry['name']), _both(entry['nodes_before'], entry['nodes_now']),
              md(_both(entry['verdict_before'], entry['verdict_now'])))
             + tuple(str(entry['counts'][name]) for name in LISTS) for entry in changes['classes']],
            right=(3, 4, 5, 6, 7, 8)))
        out.append('')
    for name, title in (('nodes_added', 'Nodes added'), ('nodes_gone', 'Nodes gone')):
        if changes[name]:
            shown, more = _cut(changes[name])
            out += ['### %s' % title, '']
            out.extend('- %s (%s, %s)' % (md(e['host'], starts_block=True), md(e['class']), md(e['status']))
                       for e in shown)
            out += more + ['']
    if changes['recommendations_moved']:
        shown, more = _cut(changes['recommendations_moved'])
        out += ['### Recommendations moved', '']
        out.extend(units.markdown_table(
            ('host', 'node class', 'memory before', 'memory now', 'memory change', 'CPU before', 'CPU now', 'CPU change'),
            [(md(e['host']), md(e['class']), units.memory(e['memory_before_bytes']), units.memory(e['memory_now_bytes']),
              '-' if e['memory_change_bytes'] is None else units.signed_memory(e['memory_change_bytes']),
              units.cpu(e['millicores_before']), units.cpu(e['millicores_now']),
              '-' if e['millicores_change'] is None else '%+dm' % e['millicores_change']) for e in shown],
            right=(2, 3, 4, 5, 6, 7)))
        out += more + ['']
    for name, title in (('status_changes', 'Status changes'), ('risk_transitions', 'Memory risk transitions'),
                        ('verdict_changes', 'Verdict changes')):
        if changes[name]:
            shown, more = _cut(changes[name])
            out += ['### %s' % title, '']
            out.extend(units.markdown_table(('host', 'node class', 'before', 'now'), [
                (md(e['host']), md(e['class']), md(e['before'] or '-'), md(e['now'] or '-')) for e in shown],
                right=()))
            out += more + ['']
    return out


def document(changes):
    """The changes file (``reservations-changes.md``): the section alone, or a line saying no report was compared."""
    if not changes:
        return ('# Changes since the previous report\n\nNo previous report was given (nodealloc_previous_report): '
                'nothing to compare.\n')
    lines = markdown_lines(changes)
    return '\n'.join(['# Changes since the previous report'] + lines[1:]) + '\n'
