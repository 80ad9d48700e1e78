# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report: one stable JSON document, rendered as terminal lines and as Markdown.

Schema (``schema_version`` 2): ``{"schema_version", "generated_at", "summary", "nodes": [node]}``.
Every node has ``host``, ``status``, ``status_reason`` (a sentence, None when ``ok``), ``risk`` and
``margin_bytes``. ``status`` is ``ok`` (measured, with a kubelet), ``no_kubelet`` (measured, nothing
to apply) or any other word for a node that was not measured (``failed``, ``unreachable``, ...), which
carries only those five fields. Not measured nodes come first, then the measured ones closest to a
global OOM (smallest ``margin_bytes``: memory reserved now minus non-pod memory measured), then the
nodes without a kubelet. A measured node adds ``capacity``, ``current``, ``measured``,
``recommended``, ``allocatable``, ``config_diff``, ``cgroup``, ``explanation``, ... with exact
machine values in unit-suffixed names (``*_bytes``, ``*_millicores``) or Kubernetes quantity strings;
``config_diff`` is the unified diff the on-node step would write, from the node's plan (``_node_plan``): the
``kubeReserved`` and ``systemReserved`` fields of the main file, or our whole drop-in where the step writes one,
computed with the step's merge (``_config_edit.apply_changes``). Version 2 renamed ``error`` to ``status_reason``, added
``no_kubelet`` and dropped the human strings from ``measured`` (the renderers format the figures).
"""

from __future__ import annotations

import datetime
import json

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom, _node_plan
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _html_page

SCHEMA_VERSION = 2
NO_KUBELET = 'no kubelet found: nothing to apply'


# Risk from the margin between memory reserved now and non-pod memory measured: below zero the
# non-pod processes already use more than is reserved for them, so pods may take memory the system
# needs and the next spike ends in a global OOM rather than an eviction.
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
    """The unified diff, as lines, of kubeReserved/systemReserved before and after a write into the main file.

    The after side comes from ``_config_edit.apply_changes``, the merge the kubelet_config module makes
    (map keys merged one by one, an equal quantity keeps its text), so the diff shows what apply would write into
    these fields (_node_plan.fields_diff). Empty when nothing would change.
    """
    return _node_plan.fields_diff(current, recommended, path or 'kubelet config')


def _apply_diff(result):
    """The plan's diff of what apply writes (into our drop-in where it writes one); a result from a module without a
    plan is planned here with the role's defaults."""
    return (result.get('plan') or _node_plan.plan(result, {}))['report']['config_diff']


def _not_measured(host, result):
    # A row a playbook made itself for a host it could not measure: any status word, with its reason.
    if isinstance(result, dict) and isinstance(result.get('status'), str) and result['status'] not in ('ok', 'no_kubelet'):
        status, message = result['status'], result.get('status_reason') or result.get('msg')
    elif isinstance(result, dict) and result.get('unreachable'):
        status, message = 'unreachable', result.get('msg')
    elif isinstance(result, dict) and result.get('failed'):
        status, message = 'failed', result.get('msg')
    elif isinstance(result, dict) and result.get('skipped'):
        status, message = 'failed', 'skipped: %s' % (result.get('skip_reason') or 'no reason given')
    else:
        status, message = 'unreachable', None
    return {'host': host, 'status': status, 'status_reason': message or 'no result (unreachable or not run)',
            'risk': 'unknown', 'margin_bytes': None}


def _bytes(text):
    """A memory quantity string as bytes (apimachinery's Value(), rounded up)."""
    return _quantity.quantity_value(_quantity.parse_quantity(str(text)))


def _millicores(text):
    return _quantity.milli_value(_quantity.parse_quantity(str(text)))


def _no_kubelet(result):
    """True when neither a kubelet process nor a kubelet config was found: there is nothing to apply to."""
    kubelet = result.get('kubelet') or {}
    return not result.get('current') and not kubelet.get('config_path') and not kubelet.get('pid')


def _node(host, result):
    if not isinstance(result, dict) or result.get('failed') or result.get('unreachable') or 'recommendation' not in result:
        return _not_measured(host, result)
    memory, cpu, current = result['memory'], result['cpu'], result.get('current')
    recommendation = result['recommendation']
    no_kubelet = _no_kubelet(result)
    reserved_now = reserved_now_millicores = None
    if current:
        reserved_now = (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'memory', 0)
                        + _node_allocatable.reserved_amount(current.get('system_reserved'), 'memory', 0))
        reserved_now_millicores = (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'cpu', -3)
                                   + _node_allocatable.reserved_amount(current.get('system_reserved'), 'cpu', -3))
    # Without a kubelet no pod competes with the system: there is no margin to run short of.
    margin = None if no_kubelet else (reserved_now or 0) - max(0, memory['non_pod_bytes'])
    kubelet_config = (result.get('kubelet') or {}).get('config_path')
    capacity_memory_bytes = _bytes(result['capacity']['memory'])
    capacity_millicores = cpu.get('capacity_millicores')
    record = result.get('class_record') or {}
    node_class = list(record.get('node_class') or _headroom.node_class(
        memory.get('mem_total_bytes') or capacity_memory_bytes, (capacity_millicores or 0) // 1000))
    decision = result.get('decision') or {}
    return {
        'host': host,
        'status': 'no_kubelet' if no_kubelet else 'ok',
        # Why a node is not 'ok', as a sentence (None when it is): the one field every renderer prints for it.
        'status_reason': NO_KUBELET if no_kubelet else None,
        'risk': 'none' if no_kubelet else risk(margin, reserved_now),
        'node_class': node_class,
        'reserved_now_millicores': reserved_now_millicores,
        'recommended_reserved_millicores': recommendation['reserved_millicores'],
        'capacity_millicores': capacity_millicores,
        'capacity_memory_bytes': capacity_memory_bytes,
        # No kubelet, or one run by flags alone: apply refuses, so there is no diff to show.
        'config_diff': [] if no_kubelet or not kubelet_config else _apply_diff(result),
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
            'non_pod_swap_bytes': memory.get('non_pod_swap_bytes'),
            'poc_non_pod_memory_bytes': memory.get('non_pod_poc_bytes'),
            # Ansible's own module interpreters (and the sampler) present at the reading, not counted above.
            'measurement_tool_bytes': (memory.get('non_pod_accounting') or {}).get('measurement_tool_bytes'),
            'kubepods_working_set_bytes': memory['kubepods_working_set_bytes'],
            'non_pod_millicores': cpu['non_pod_millicores'],
            'sample_seconds': cpu['sample_seconds'],
        },
        'recommended': {
            'kube_reserved': recommendation['kube_reserved'],
            'system_reserved': recommendation['system_reserved'],
        },
        'allocatable': recommendation['allocatable'],
        'allocatable_memory_bytes': _bytes(recommendation['allocatable']['memory']),
        'allocatable_millicores': _millicores(recommendation['allocatable']['cpu']),
        'eviction_hard_memory_bytes': recommendation.get('eviction_hard_memory_bytes'),
        'margin_bytes': margin,
        'cgroup': result['cgroup'],
        'kubelet_config': kubelet_config,
        'not_found': result.get('not_found') or [],
        'explanation': recommendation['explanation'],
        'decision': None if no_kubelet else decision.get('action'),
        'decision_reasons': [] if no_kubelet else decision.get('reasons') or [],
        'memory_delta_bytes': None if no_kubelet else decision.get('memory_delta_bytes'),
        'cpu_delta_millicores': None if no_kubelet else decision.get('cpu_delta_millicores'),
        # Evidence of starvation (PSI); the CPU guarantee and the PoC's memory figure are in the explanation.
        'pressure': _cpu_guarantee.describe_pressure(result.get('pressure') or {}),
        'history': {k: (result.get('history') or {}).get(k) for k in ('samples', 'span_seconds', 'series')},
        'recommended_reserved_memory_bytes': recommendation['reserved_memory_bytes'],
        'memory_headroom_bytes': recommendation.get('memory_headroom_bytes'),
        # What this node tells its class, and how many of its class's nodes it decided with (0: alone).
        'class_record': result.get('class_record'),
        'class_peers_used': result.get('class_peers_used') or 0,
        'overcommit': _overcommit_summary(result.get('overcommit')),
        # memory.min's cost to pods and the *-compressible proposal, as sentences (_memory_protection, _cpu_enforcement).
        'protection': protection_lines(result.get('memory_protection'), result.get('enforcement_proposal')),
        'memory_min_beyond_use_bytes': ((result.get('memory_protection') or {}).get('cost') or {}).get(
            'protected_beyond_use_bytes'),
        # The pods bound to the node against the allocatable the change gives, or why that was not checked.
        'requests_fit': result.get('requests_fit'),
        # The policy settings the module ran with: the same reservations_* variables as apply.yml.
        'settings': dict(recommendation.get('settings') or {}, **(decision.get('settings') or {})),
        # Whether the daemons may swap and the drop-in that stops it (_swap.control), None from an older module.
        'swap_control': result.get('swap_control'),
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


def protection_lines(protection, proposal):
    """What memory.min costs pods (reserved groups' protection beyond their working sets, now and with the
    recommendation), and the enforcement proposal where the daemons were found starved; [] when neither applies."""
    lines = []
    cost = (protection or {}).get('cost')
    if cost and cost['reserved_min_bytes']:
        line = ('memory.min protects %s on the reserved groups (%s), %s beyond what they use: memory pods cannot '
                'reclaim once the daemons grow into it' % (
                    units.memory(cost['reserved_min_bytes']), ', '.join(g['cgroup'] for g in cost['groups']),
                    units.memory(cost['protected_beyond_use_bytes'])))
        if cost.get('after_apply') and cost['after_apply']['groups']:
            line += '; with the recommendation written, %s beyond use' % units.memory(
                cost['after_apply']['protected_beyond_use_bytes'])
        lines.append(line)
    if proposal and proposal.get('starved'):
        if proposal.get('proposed'):
            changes = proposal['changes']
            lines.append('proposed: enforceNodeAllocatable %s%s (validated: the kubelet would start with it); %s' % (
                changes['enforceNodeAllocatable'],
                ''.join(', %s %s' % (k, v) for k, v in sorted(changes.items()) if k != 'enforceNodeAllocatable'),
                '; '.join(proposal['reasons'])))
        else:
            lines.append('daemons starved for CPU, no enforcement proposed: %s' % '; '.join(proposal['reasons']))
    return lines


def _overcommit_line(audit):
    if not audit or not audit['pods']:
        return None
    line = ('%d pods (%d without a memory limit); their memory limits add up to %s' % (
        audit['pods'], audit['pods_without_memory_limit'], units.memory(audit['memory_limits_sum_bytes'])))
    if audit['limits_to_kubepods_percent'] is not None:
        line += ': if every pod used its limit, kubepods would need %.1f %% of its limit' % audit['limits_to_kubepods_percent']
    return line


def build_report(results, now=None):
    """``results``: {host: node_reservation_facts result}. Returns the report dict."""
    nodes = [_node(host, result) for host, result in sorted(results.items())]
    nodes.sort(key=sort_key)
    generated = (now or datetime.datetime.now(datetime.timezone.utc)).strftime('%Y-%m-%dT%H:%M:%SZ')
    return {'schema_version': SCHEMA_VERSION, 'generated_at': generated, 'summary': summary(nodes), 'nodes': nodes}


def measured(node):
    """Whether the node was measured (``ok`` or ``no_kubelet``): only those carry figures to render."""
    return 'measured' in node


def sort_key(node):
    """Not measured first (someone must look at them), then closest to a global OOM, then no kubelet."""
    group = 0 if not measured(node) else 2 if node['status'] == 'no_kubelet' else 1
    return (group, node['margin_bytes'] or 0, node['host'])


def summary(nodes):
    """Counts for the fleet: by status, by decision and by risk (what AWX's set_stats shows)."""
    counts = {'nodes': len(nodes), 'status': {}, 'decision': {}, 'risk': {}}
    for node in nodes:
        # Keys AWX shows (set_stats): one short word each, whatever a result file carried.
        for key, value in (('status', units.word(node['status'])), ('decision', units.word(node.get('decision') or 'none')),
                           ('risk', units.word(node['risk']))):
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


def _current_memory(reservation):
    return units.quantity_memory((reservation or {}).get('memory'), _bytes)


def _current_cpu(reservation):
    text = (reservation or {}).get('cpu')
    return '-' if text in (None, '') else units.cpu(_millicores(text))


def _total_formula_rows(node):
    return [('%s formula (total reserved)' % name, units.memory(formula['reserved_memory_bytes']),
             units.cpu(formula['reserved_millicores']),
             'vendor formula, for comparison' if index else
             'what %s\'s published formula would reserve for this node\'s size; the rows below likewise' % name)
            for index, (name, formula) in enumerate(sorted((node.get('formulas') or {}).items()))]


def _swap_rows(node):
    """Non-pod memory in swap (counted in the non-pod usage) and whether system.slice may swap, where swap is on."""
    swapped, control = node['measured'].get('non_pod_swap_bytes'), node.get('swap_control') or {}
    if not swapped and not control.get('swap_on'):
        return []
    out = [('of which swapped out', units.memory(swapped or 0), '-',
            'non-pod memory in swap, counted in the usage above: it comes back into RAM when touched')]
    if control.get('system_slice_may_swap'):
        drop_in = control.get('proposed_drop_in')
        out.append(('system.slice may swap', 'memory.swap.max %s' % control.get('system_slice_swap_max'), '-',
                    'daemons (the kubelet too) may be swapped out; kubelet swapBehavior %s. Proposed: %s'
                    % (control.get('kubelet_swap_behavior'),
                       'a drop-in %s with [Slice] MemorySwapMax=0, then systemctl daemon-reload' % drop_in['path']
                       if drop_in else control.get('note'))))
    return out


POC_ROW = ('PoC non-pod memory', '-', 'the proof of concept\'s figure, before the page-cache correction; '
           'for comparison')


def rows(node):
    """The figures of one measured node as (label, memory, cpu, what it is), in the report's units.

    Shared by the text, Markdown and HTML renderings, so the three say the same thing; every row carries
    its meaning, since a figure without one is a figure nobody can act on.
    """
    measured_figures = node['measured']
    sample = 'CPU over a %g s sample' % measured_figures['sample_seconds']
    out = [('capacity', units.memory(node['capacity_memory_bytes']), units.cpu(node['capacity_millicores']),
            'the node\'s memory (MemTotal) and CPUs')]
    poc = measured_figures.get('poc_non_pod_memory_bytes')
    measured_row = ('measured non-pod usage', units.memory(max(0, measured_figures['non_pod_memory_bytes'])),
                    units.cpu(measured_figures['non_pod_millicores']),
                    'in use outside the pods now: kubelet, runtime, system daemons, kernel (%s)' % sample)
    if node['status'] == 'no_kubelet':
        out.append(measured_row)
        out += _swap_rows(node)
        if poc is not None:
            out.append(POC_ROW[:1] + (units.memory(poc),) + POC_ROW[1:])
        out.append(('reservation a kubelet would need', units.memory(node['recommended_reserved_memory_bytes']),
                    units.cpu(node['recommended_reserved_millicores']),
                    'kubeReserved + systemReserved if a kubelet ran here; %s' % NO_KUBELET))
        return out + _total_formula_rows(node)
    current = node['current']
    source = 'from %s' % node['kubelet_config'] if current else 'no kubelet config found: unknown'
    eviction = (current or {}).get('eviction_hard') or {}
    out += [
        ('current kubeReserved', _current_memory(current and current['kube_reserved']),
         _current_cpu(current and current['kube_reserved']), 'set aside for Kubernetes\' daemons, ' + source),
        ('current systemReserved', _current_memory(current and current['system_reserved']),
         _current_cpu(current and current['system_reserved']), 'set aside for the operating system, ' + source),
        ('current hard eviction', units.quantity_memory(eviction.get('memory.available'), _bytes), '-',
         'pods are evicted when free memory falls below this'),
        measured_row,
    ] + _swap_rows(node)
    if poc is not None:
        out.append(POC_ROW[:1] + (units.memory(poc),) + POC_ROW[1:])
    out += [
        ('margin now', units.memory(node['margin_bytes']), '-',
         'reserved now minus non-pod usage; below zero a spike ends in a kernel OOM kill'),
        ('recommended kubeReserved', units.quantity_memory(node['recommended']['kube_reserved'].get('memory'), _bytes),
         _current_cpu(node['recommended']['kube_reserved']), 'the measured share of the kubelet and runtime'),
        ('recommended systemReserved',
         units.quantity_memory(node['recommended']['system_reserved'].get('memory'), _bytes),
         _current_cpu(node['recommended']['system_reserved']), 'the rest of the non-pod usage'),
        ('recommended total reserved', units.memory(node['recommended_reserved_memory_bytes']),
         units.cpu(node['recommended_reserved_millicores']),
         'non-pod usage (history percentile) + headroom %s' % units.memory(node.get('memory_headroom_bytes'))),
        ('allocatable (recommended)', units.memory(node['allocatable_memory_bytes']),
         units.cpu(node['allocatable_millicores']),
         'capacity - reserved - hard eviction: what pods may be given'),
    ]
    if node.get('memory_min_beyond_use_bytes'):
        # Waste the kernel enforces: reserved groups' memory.min beyond their use (_memory_protection.cost).
        out.append(('memory.min beyond use', units.memory(node['memory_min_beyond_use_bytes']), '-',
                    'the reserved groups\' memory.min minus their working set: pods cannot reclaim it once the '
                    'daemons grow into it'))
    return out + _total_formula_rows(node)


def decision_line(node):
    """The decision and its reasons in the report's units; for a node without a kubelet, that there is none."""
    if node['status'] == 'no_kubelet':
        return NO_KUBELET
    reasons = '; '.join(units.humanize(reason) for reason in node.get('decision_reasons') or [])
    return '%s%s' % (node.get('decision'), ': ' + reasons if reasons else '')


def explanation(node):
    """The module's arithmetic in the report's units (the JSON keeps the exact lines)."""
    return [units.humanize(line) for line in node['explanation']]


def render_text(report):
    return '\n'.join(render_text_lines(report))


def render_text_lines(report):
    """The text report as a list of lines: printed by ``debug`` one per line, with no escapes in AWX."""
    out = []
    for node in report['nodes']:
        out.append('== %s ==' % node['host'])
        if not measured(node):
            out.append('  %s: %s' % (node['status'].upper(), node['status_reason']))
            out.append('')
            continue
        cgroup = node['cgroup']
        out.append('  cgroup %s (%s), driver %s, kubepods %s; kubelet config: %s'
                   % (cgroup['version'], cgroup['mode'], cgroup['driver'] or 'none',
                      cgroup['kubepods'] or 'none', node['kubelet_config'] or 'none found'))
        if node['status'] == 'no_kubelet':
            out.append('  ' + NO_KUBELET)
        table = [('', 'memory', 'cpu', 'what it is')] + rows(node)
        out.extend('  ' + line for line in units.aligned(table))
        if node['status'] == 'no_kubelet':
            out.append('  decision: none, ' + NO_KUBELET)
        else:
            out.append('  decision: %s' % node.get('decision'))
            out.extend('    %s' % units.humanize(reason) for reason in node.get('decision_reasons') or [])
        out.extend('  %s' % line for line in node.get('pressure') or [])
        out.extend('  %s' % line for line in node.get('protection') or [])
        overcommit = _overcommit_line(node.get('overcommit'))
        if overcommit:
            out.append('  overcommit: %s' % overcommit)
        if _requests_fit.describe(node.get('requests_fit')):
            out.append('  requests fit: %s' % _requests_fit.describe(node.get('requests_fit')))
        if node['current'] is None and node['status'] == 'ok':
            out.append('  no kubelet configuration found: current reservations unknown, apply refuses')
        for line in node['not_found']:
            out.append('  not found: %s' % line)
        if node.get('config_diff'):
            out.append('  apply would write:')
            out.extend('    ' + line for line in node['config_diff'])
        out.append('  explanation:')
        for line, terms in zip(explanation(node), units.terms_in(node['explanation'])):
            out.append('    ' + line)
            out.extend('      (%s: %s)' % term for term in terms)
        out.append('')
    # Values from nodes and result files stay on their line and cannot drive the terminal (units.plain_text).
    return [units.plain_text(line) for line in out]


def render_markdown(report):
    md = units.markdown_text
    out = ['# Kubelet reservation report', '',
           'Generated %s. Nodes that could not be measured come first, then those closest to a global OOM, '
           'then those without a kubelet. Memory in MiB/GiB, CPU in millicores (m).' % md(report['generated_at']), '']
    for node in report['nodes']:
        out.append('## %s' % md(node['host']))
        out.append('')
        if not measured(node):
            out.extend(['**%s:** %s' % (md(str(node['status']).capitalize()), md(node['status_reason'])), ''])
            continue
        if node['status'] == 'no_kubelet':
            out.extend(['**%s.**' % NO_KUBELET.capitalize(), ''])
        out.extend(units.markdown_table(('', 'memory', 'cpu', 'what it is'),
                                        [tuple(md(cell) for cell in row) for row in rows(node)]))
        out.append('')
        if node['status'] == 'ok':
            action, _sep, reasons = decision_line(node).partition(': ')
            out.append('**Decision: %s.** %s' % (md(action), md(reasons)))
            out.append('')
        out.extend('- %s' % md(line, starts_block=True) for line in node.get('pressure') or [])
        out.extend('- %s' % md(line, starts_block=True) for line in node.get('protection') or [])
        if out[-1]:
            out.append('')  # a paragraph straight after a list would join its last item (CommonMark lazy continuation)
        overcommit = _overcommit_line(node.get('overcommit'))
        if overcommit:
            out.extend(['**Overcommit:** %s.' % md(overcommit), ''])
        if _requests_fit.describe(node.get('requests_fit')):
            out.extend(['**Requests fit:** %s.' % md(_requests_fit.describe(node.get('requests_fit'))), ''])
        if node['current'] is None and node['status'] == 'ok':
            out.extend(['No kubelet configuration was found: current reservations are unknown and apply refuses.',
                        ''])
        for line in node['not_found']:
            out.append('- not found: %s' % md(line))
        if node.get('config_diff'):
            diff = [units.plain_text(line) for line in node['config_diff']]
            fence = units.markdown_fence(diff)
            out.extend(['', 'What apply would write:', '', fence + 'diff'] + diff + [fence])
        out.extend(['', '<details><summary>Explanation</summary>', ''])
        for line, terms in zip(explanation(node), units.terms_in(node['explanation'])):
            out.append('- `%s`' % units.markdown_code(line))
            out.extend('  - *%s*: %s' % (md(term), md(meaning)) for term, meaning in terms)
        out.extend(['', '</details>', ''])
    return '\n'.join(out)


def render_html(report):
    return _html_page.render_html(report, rows=rows, decision_line=decision_line, explanation=explanation)


def renderings(report):
    """Every rendering of one report, as the filters return them."""
    return {'data': report, 'json': render_json(report), 'markdown': render_markdown(report),
            'text': render_text(report), 'text_lines': render_text_lines(report), 'html': render_html(report)}


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + '\n'
