# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report: one stable JSON document, rendered as a terminal table and as Markdown.

Schema (``schema_version`` 1): ``{"schema_version", "generated_at", "nodes": [node]}``, nodes
sorted by risk, closest to a global OOM first (smallest ``margin_bytes``: memory reserved now
minus non-pod memory measured). A node is ``{"host", "status": "ok"|"failed", "error",
"capacity", "current", "measured", "recommended", "allocatable", "margin_bytes", "cgroup",
"kubelet_config", "not_found", "explanation"}``.
"""

from __future__ import annotations

import datetime
import json

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _cpu_guarantee, _node_allocatable, _quantity, _report_html

SCHEMA_VERSION = 1
MIB = 1024 * 1024


def _node(host, result):
    if not isinstance(result, dict) or result.get('failed') or 'recommendation' not in result:
        message = (result or {}).get('msg') if isinstance(result, dict) else None
        return {'host': host, 'status': 'failed', 'error': message or 'no result (unreachable or skipped)',
                'margin_bytes': None}
    memory, cpu, current = result['memory'], result['cpu'], result.get('current')
    recommendation = result['recommendation']
    reserved_now = None
    if current:
        reserved_now = (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'memory', 0)
                        + _node_allocatable.reserved_amount(current.get('system_reserved'), 'memory', 0))
    margin = (reserved_now or 0) - max(0, memory['non_pod_bytes'])
    return {
        'host': host,
        'status': 'ok',
        'error': None,
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
        'kubelet_config': (result.get('kubelet') or {}).get('config_path'),
        'not_found': result.get('not_found') or [],
        'explanation': recommendation['explanation'],
        'decision': (result.get('decision') or {}).get('action'),
        'decision_reasons': (result.get('decision') or {}).get('reasons') or [],
        # Evidence of starvation (PSI); the CPU guarantee and the PoC's memory figure are in the explanation.
        'pressure': _cpu_guarantee.describe_pressure(result.get('pressure') or {}),
        'history': {k: (result.get('history') or {}).get(k) for k in ('samples', 'span_seconds', 'series')},
        'recommended_reserved_memory_bytes': recommendation['reserved_memory_bytes'],
        'overcommit': _overcommit_summary(result.get('overcommit')),
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
    nodes.sort(key=lambda n: (n['margin_bytes'] is None, n['margin_bytes'] or 0, n['host']))
    generated = (now or datetime.datetime.now(datetime.timezone.utc)).strftime('%Y-%m-%dT%H:%M:%SZ')
    return {'schema_version': SCHEMA_VERSION, 'generated_at': generated, 'nodes': nodes}


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
    out = []
    for node in report['nodes']:
        out.append('== %s ==' % node['host'])
        if node['status'] != 'ok':
            out.append('  FAILED: %s' % node['error'])
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
        out.append('  explanation:')
        out.extend('    ' + line for line in node['explanation'])
        out.append('')
    return '\n'.join(out)


def render_markdown(report):
    out = ['# Kubelet reservation report', '',
           'Generated %s. Nodes closest to a global OOM come first.' % report['generated_at'], '']
    for node in report['nodes']:
        out.append('## %s' % node['host'])
        out.append('')
        if node['status'] != 'ok':
            out.extend(['**Failed:** %s' % node['error'], ''])
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
        out.extend(['', '<details><summary>Explanation</summary>', '', '```'])
        out.extend(node['explanation'])
        out.extend(['```', '', '</details>', ''])
    return '\n'.join(out)


def render_html(report):
    return _report_html.render_html(report, _rows)


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + '\n'
