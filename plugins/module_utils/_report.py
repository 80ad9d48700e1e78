# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report: one stable JSON document, rendered as terminal lines and as Markdown.

Schema (``schema_version`` 1): ``{"schema_version", "generated_at", "summary", "nodes": [node]}``.
Nodes that could not be measured (``status`` ``failed`` or ``unreachable``) come first, then the
rest by risk, closest to a global OOM first (smallest ``margin_bytes``: memory reserved now minus
non-pod memory measured). A node is ``{"host", "status", "error", "risk", "capacity", "current",
"measured", "recommended", "allocatable", "margin_bytes", "reserved_now_millicores",
"recommended_reserved_millicores", "config_diff", "cgroup", "kubelet_config", "not_found",
"explanation", ...}``; ``config_diff`` is the unified diff of the ``kubeReserved`` and
``systemReserved`` fields that ``nodealloc.kubelet.kubelet_config`` would write, computed with the
same merge (``_kubelet_config_edit.apply_changes``).
"""

from __future__ import annotations

import datetime
import difflib
import json

from ansible_collections.nodealloc.kubelet.plugins.module_utils import (
    _cpu_guarantee, _kubelet_config_edit, _node_allocatable, _quantity, _report_html)

SCHEMA_VERSION = 1
MIB = 1024 * 1024


# Risk from the margin between memory reserved now and non-pod memory measured: below zero the
# non-pod processes already use more than is reserved for them, so pods may take memory the system
# needs and the next spike ends in a global OOM rather than an eviction.
RISK_ORDER = {'unknown': 0, 'high': 1, 'medium': 2, 'low': 3}
MEDIUM_MARGIN_FRACTION = 0.1


def risk(margin_bytes, reserved_now_bytes):
    """``high`` below zero margin, ``medium`` within 10 % of what is reserved now, else ``low``."""
    if margin_bytes is None:
        return 'unknown'
    if margin_bytes < 0:
        return 'high'
    if margin_bytes < MEDIUM_MARGIN_FRACTION * (reserved_now_bytes or 0):
        return 'medium'
    return 'low'


def config_diff(current, recommended, path=None):
    """The unified diff, as lines, of kubeReserved/systemReserved before and after the write.

    The after side comes from ``_kubelet_config_edit.apply_changes``, the merge the kubelet_config
    module makes (map keys merged one by one, an equal quantity keeps its text), so the diff shows what
    apply would write into these fields. Empty when nothing would change.
    """
    before = {}
    for field, key in (('kubeReserved', 'kube_reserved'), ('systemReserved', 'system_reserved')):
        if (current or {}).get(key):
            before[field] = dict(current[key])
    after, changed = _kubelet_config_edit.apply_changes(before, {'kube_reserved': recommended['kube_reserved'],
                                                                 'system_reserved': recommended['system_reserved']})
    if not changed:
        return []
    name = path or 'kubelet config'
    old = _kubelet_config_edit.render_document(before, 'yaml') if before else ''
    new = _kubelet_config_edit.render_document(after, 'yaml')
    return [line.rstrip('\n') for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                               name + ' (now)', name + ' (apply)', n=10)]


def _apply_diff(current, recommendation, decision, path):
    """The diff of what apply writes: nothing on keep, else the decision's per-resource maps (_decision)."""
    if decision.get('action') == 'keep':
        return []
    return config_diff(current, decision if 'kube_reserved' in decision else recommendation, path)


def _not_measured(host, result):
    if isinstance(result, dict) and result.get('unreachable'):
        status, message = 'unreachable', result.get('msg')
    elif isinstance(result, dict) and result.get('failed'):
        status, message = 'failed', result.get('msg')
    elif isinstance(result, dict) and result.get('skipped'):
        status, message = 'failed', 'skipped: %s' % (result.get('skip_reason') or 'no reason given')
    else:
        status, message = 'unreachable', None
    return {'host': host, 'status': status, 'error': message or 'no result (unreachable or not run)',
            'risk': 'unknown', 'margin_bytes': None}


def _node(host, result):
    if not isinstance(result, dict) or result.get('failed') or result.get('unreachable') or 'recommendation' not in result:
        return _not_measured(host, result)
    memory, cpu, current = result['memory'], result['cpu'], result.get('current')
    recommendation = result['recommendation']
    reserved_now = reserved_now_millicores = None
    if current:
        reserved_now = (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'memory', 0)
                        + _node_allocatable.reserved_amount(current.get('system_reserved'), 'memory', 0))
        reserved_now_millicores = (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'cpu', -3)
                                   + _node_allocatable.reserved_amount(current.get('system_reserved'), 'cpu', -3))
    margin = (reserved_now or 0) - max(0, memory['non_pod_bytes'])
    kubelet_config = (result.get('kubelet') or {}).get('config_path')
    return {
        'host': host,
        'status': 'ok',
        'error': None,
        'risk': risk(margin, reserved_now),
        'reserved_now_millicores': reserved_now_millicores,
        'recommended_reserved_millicores': recommendation['reserved_millicores'],
        'capacity_millicores': cpu.get('capacity_millicores'),
        'config_diff': _apply_diff(current, recommendation, result.get('decision') or {}, kubelet_config),
        'capacity': result['capacity'],
        'current': None if not current else {
            'kube_reserved': current.get('kube_reserved') or {},
            'system_reserved': current.get('system_reserved') or {},
            'eviction_hard': current.get('eviction_hard') or {},
            'enforce_node_allocatable': current.get('enforce_node_allocatable') or [],
            'reserved_memory_bytes': reserved_now,
        },
        'measured': {
            'non_pod_memory_bytes': memory['non_pod_bytes'],
            # Shown rounded up to whole MiB; the exact figure is non_pod_memory_bytes.
            'non_pod_memory': _quantity.format_memory(-(-max(0, memory['non_pod_bytes']) // MIB) * MIB),
            'kubepods_working_set_bytes': memory['kubepods_working_set_bytes'],
            'non_pod_millicores': cpu['non_pod_millicores'],
            'non_pod_cpu': _quantity.format_cpu(cpu['non_pod_millicores']),
            'sample_seconds': cpu['sample_seconds'],
        },
        'recommended': {
            'kube_reserved': recommendation['kube_reserved'],
            'system_reserved': recommendation['system_reserved'],
        },
        'allocatable': recommendation['allocatable'],
        'margin_bytes': margin,
        'cgroup': result['cgroup'],
        'kubelet_config': kubelet_config,
        'not_found': result.get('not_found') or [],
        'explanation': recommendation['explanation'],
        'decision': (result.get('decision') or {}).get('action'),
        'decision_reasons': (result.get('decision') or {}).get('reasons') or [],
        # Evidence of starvation (PSI); the CPU guarantee and the PoC's memory figure are in the explanation.
        'pressure': _cpu_guarantee.describe_pressure(result.get('pressure') or {}),
        'history': {k: (result.get('history') or {}).get(k) for k in ('samples', 'span_seconds', 'series')},
        'recommended_reserved_memory_bytes': recommendation['reserved_memory_bytes'],
        'memory_headroom_bytes': recommendation.get('memory_headroom_bytes'),
        # What this node tells its class, and how many of its class's nodes it decided with (0: alone).
        'class_record': result.get('class_record'),
        'class_peers_used': result.get('class_peers_used') or 0,
        'overcommit': _overcommit_summary(result.get('overcommit')),
        # The policy settings the module ran with: the same reservations_* variables as apply.yml.
        'settings': dict(recommendation.get('settings') or {}, **((result.get('decision') or {}).get('settings') or {})),
        'formulas': {name: {'reserved_memory_bytes': f['reserved_memory_bytes'],
                            'reserved_millicores': f['reserved_millicores']}
                     for name, f in (result.get('formulas') or {}).items()},
    }


def _overcommit_summary(audit):
    """The overcommit audit without its per-pod list (the figures a report shows), or None."""
    if not audit:
        return None
    return {k: audit.get(k) for k in ('pods', 'pods_by_qos', 'pods_with_memory_limit', 'pods_without_memory_limit',
                                      'memory_limits_sum_bytes', 'kubepods_memory_limit_bytes',
                                      'limits_to_kubepods_percent', 'cpu_requests_sum_millicores')}


def _overcommit_line(audit):
    if not audit or not audit['pods']:
        return None
    line = ('%d pods (%d without a memory limit); their memory limits add up to %s' % (
        audit['pods'], audit['pods_without_memory_limit'], _quantity.format_memory(audit['memory_limits_sum_bytes'])))
    if audit['limits_to_kubepods_percent'] is not None:
        line += ': if every pod used its limit, kubepods would need %.1f %% of its limit' % audit['limits_to_kubepods_percent']
    return line


def build_report(results, now=None):
    """``results``: {host: node_reservation_facts result}. Returns the report dict."""
    nodes = [_node(host, result) for host, result in sorted(results.items())]
    nodes.sort(key=sort_key)
    generated = (now or datetime.datetime.now(datetime.timezone.utc)).strftime('%Y-%m-%dT%H:%M:%SZ')
    return {'schema_version': SCHEMA_VERSION, 'generated_at': generated, 'summary': summary(nodes), 'nodes': nodes}


def sort_key(node):
    """Not measured first (someone must look at them), then closest to a global OOM."""
    return (node['margin_bytes'] is not None, node['margin_bytes'] or 0, node['host'])


def summary(nodes):
    """Counts for the fleet: by status, by decision and by risk (what AWX's set_stats shows)."""
    counts = {'nodes': len(nodes), 'status': {}, 'decision': {}, 'risk': {}}
    for node in nodes:
        for key, value in (('status', node['status']), ('decision', node.get('decision') or 'none'),
                           ('risk', node['risk'])):
            counts[key][value] = counts[key].get(value, 0) + 1
    return counts


def merge_reports(reports, now=None):
    """One report from several (one per AWX job slice): every node once, ordered as build_report orders."""
    nodes = {}
    for report in reports:
        if report.get('schema_version') != SCHEMA_VERSION:
            raise ValueError('cannot merge a report of schema_version %r (expected %d)'
                             % (report.get('schema_version'), SCHEMA_VERSION))
        for node in report['nodes']:
            if node['host'] in nodes:
                raise ValueError('host %s is in more than one slice report' % node['host'])
            nodes[node['host']] = node
    merged = sorted(nodes.values(), key=sort_key)
    generated = (now or datetime.datetime.now(datetime.timezone.utc)).strftime('%Y-%m-%dT%H:%M:%SZ')
    return {'schema_version': SCHEMA_VERSION, 'generated_at': generated, 'summary': summary(merged), 'nodes': merged}


def _pair(values, key):
    if values is None:
        return '-'
    return str(values.get(key, '-') or '-')


def _rows(node):
    current = node['current']
    rows = [
        ('capacity', node['capacity']['memory'], node['capacity']['cpu']),
        ('current kubeReserved', _pair(current and current['kube_reserved'], 'memory'),
         _pair(current and current['kube_reserved'], 'cpu')),
        ('current systemReserved', _pair(current and current['system_reserved'], 'memory'),
         _pair(current and current['system_reserved'], 'cpu')),
        ('measured non-pod usage', node['measured']['non_pod_memory'], node['measured']['non_pod_cpu']),
        ('recommended kubeReserved', node['recommended']['kube_reserved']['memory'],
         node['recommended']['kube_reserved']['cpu']),
        ('recommended systemReserved', node['recommended']['system_reserved']['memory'],
         node['recommended']['system_reserved']['cpu']),
        ('allocatable (recommended)', node['allocatable']['memory'], node['allocatable']['cpu']),
    ]
    for name, formula in sorted((node.get('formulas') or {}).items()):
        rows.append(('%s formula (total reserved)' % name,
                     _quantity.format_memory(-(-formula['reserved_memory_bytes'] // MIB) * MIB),
                     _quantity.format_cpu(formula['reserved_millicores'])))
    return rows


def render_text(report):
    return '\n'.join(render_text_lines(report))


def render_text_lines(report):
    """The text report as a list of lines: printed by ``debug`` one per line, with no escapes in AWX."""
    out = []
    for node in report['nodes']:
        out.append('== %s ==' % node['host'])
        if node['status'] != 'ok':
            out.append('  %s: %s' % (node['status'].upper(), node['error']))
            out.append('')
            continue
        cgroup = node['cgroup']
        out.append('  cgroup %s (%s), driver %s, kubepods %s; kubelet config: %s'
                   % (cgroup['version'], cgroup['mode'], cgroup['driver'] or 'none',
                      cgroup['kubepods'] or 'none', node['kubelet_config'] or 'none found'))
        out.append('  %-28s %14s %10s' % ('', 'memory', 'cpu'))
        for label, memory, cpu in _rows(node):
            out.append('  %-28s %14s %10s' % (label, memory, cpu))
        out.append('  decision: %s' % node.get('decision'))
        out.extend('    %s' % reason for reason in node.get('decision_reasons') or [])
        out.extend('  %s' % line for line in node.get('pressure') or [])
        overcommit = _overcommit_line(node.get('overcommit'))
        if overcommit:
            out.append('  overcommit: %s' % overcommit)
        if node['current'] is None:
            out.append('  no kubelet configuration found: current reservations unknown')
        for line in node['not_found']:
            out.append('  not found: %s' % line)
        if node.get('config_diff'):
            out.append('  apply would write:')
            out.extend('    ' + line for line in node['config_diff'])
        out.append('  explanation:')
        out.extend('    ' + line for line in node['explanation'])
        out.append('')
    return out


def render_markdown(report):
    out = ['# Kubelet reservation report', '',
           'Generated %s. Nodes that could not be measured come first, then those closest to a global OOM.'
           % report['generated_at'], '']
    for node in report['nodes']:
        out.append('## %s' % node['host'])
        out.append('')
        if node['status'] != 'ok':
            out.extend(['**%s:** %s' % (node['status'].capitalize(), node['error']), ''])
            continue
        out.extend(['| | memory | cpu |', '|---|---:|---:|'])
        for label, memory, cpu in _rows(node):
            out.append('| %s | %s | %s |' % (label, memory, cpu))
        out.append('')
        out.append('**Decision: %s.** %s' % (node.get('decision'), ' '.join(node.get('decision_reasons') or [])))
        out.append('')
        out.extend('- %s' % line for line in node.get('pressure') or [])
        overcommit = _overcommit_line(node.get('overcommit'))
        if overcommit:
            out.extend(['**Overcommit:** %s.' % overcommit, ''])
        if node['current'] is None:
            out.extend(['No kubelet configuration was found: current reservations are unknown.', ''])
        for line in node['not_found']:
            out.append('- not found: %s' % line)
        if node.get('config_diff'):
            out.extend(['', 'What apply would write:', '', '```diff'] + node['config_diff'] + ['```'])
        out.extend(['', '<details><summary>Explanation</summary>', '', '```'])
        out.extend(node['explanation'])
        out.extend(['```', '', '</details>', ''])
    return '\n'.join(out)


def render_html(report):
    return _report_html.render_html(report, _rows)


def renderings(report):
    """Every rendering of one report, as the filters return them."""
    return {'data': report, 'json': render_json(report), 'markdown': render_markdown(report),
            'text': render_text(report), 'text_lines': render_text_lines(report), 'html': render_html(report)}


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + '\n'
