# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report: one stable JSON document, rendered as terminal lines and as Markdown.

Schema (``schema_version`` 3): ``{"schema_version", "generated_at", "summary", "classes": [class], "nodes": [node]}``.
``classes`` is the fleet per node class (``_fleet_classes.class_summaries``, with its ``name``): what its templates
carry, how many kubelet restarts apply would make, the memory it would give back or take.
Every node has ``host``, ``status``, ``status_reason`` (a sentence, None when ``ok``), ``risk``, ``memory_risk`` and
``margin_bytes``. ``status`` is ``ok`` (measured, with a kubelet), ``no_kubelet`` (measured, nothing
to apply) or any other word for a node that was not measured (``failed``, ``unreachable``, ...), which
carries only those fields. ``risk`` is the node's memory risk category (``exceeded``, ``thin``, ``not_configured``,
``unknown``, ``ok``, ``no_kubelet``) and ``memory_risk`` the figures it rests on, both from ``_memory_risk`` (what the
node reserves against its own history's peak and the headroom the policy keeps). Not measured nodes come first, then
the measured ones by risk, worst first, and within a category the least memory to spare over the peak as a share of
the node's memory, then the nodes without a kubelet. ``margin_bytes`` is memory reserved now minus non-pod memory
now. A measured node adds ``capacity``, ``current``, ``measured``,
``recommended``, ``allocatable``, ``config_diff``, ``cgroup``, ``explanation``, ... with exact
machine values in unit-suffixed names (``*_bytes``, ``*_millicores``) or Kubernetes quantity strings;
``config_diff`` is the unified diff the on-node step would write, from the node's plan (``_node_plan``): the
``kubeReserved`` and ``systemReserved`` fields of the main file, or our whole drop-in where the step writes one,
computed with the step's merge (``_config_edit.apply_changes``). Version 2 renamed ``error`` to ``status_reason``, added
``no_kubelet`` and dropped the human strings from ``measured`` (the renderers format the figures). Version 3 replaced
``risk``'s ``high``/``medium``/``low``/``none`` (margin now against 10 % of the reservation) by the history-based
categories and added ``memory_risk``. Version 4 (issue 46) added the verdict (``_verdict``): every node's ``verdict``
(action apply/observe/keep/fix, until, reason, command, severity and the change's size), every class's (with
``nodes_by_action``) and ``summary['verdicts']`` ({class: action}); each node's ``refusals`` (the plan's),
``decision_by_resource`` and ``flags`` (a recommendation above every vendor formula or above 25 % of the node,
``_memory_risk.reservation_flags``), each class's ``flags`` and ``flagged_nodes``; a young node's ``risk`` is read
against the headroom its class's warm nodes keep (``memory_risk['headroom_source']``), no longer the cold-start
maximum; a node that was not measured carries ``template_class`` where the inventory names its class. Issue 47 added
each measured node's ``resource_managers``: sentences on the static memory manager's reservedMemory apply writes with
the change and the whole CPUs the static CPU manager makes of the reservation (empty where neither is static).
"""

from __future__ import annotations

import datetime
import json
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom, _node_plan
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_classes, _fleet_summary, _html_page, _memory_risk, _node_templates, _other_resources, _report_changes,
    _verdict)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _printed  # the job output

SCHEMA_VERSION = 4
NO_KUBELET = 'no kubelet found: nothing to apply'


def node_memory_risk(result, reserved_now_bytes, capacity_memory_bytes):
    """The measured node's memory risk (``_memory_risk.memory_risk``) from its facts result.

    The peak is the node's own history's (``basis.peak_non_pod_bytes``, before any class pooling), or the largest
    reading of its chart series from a result without it; now is the non-pod memory measured at this run.
    """
    recommendation = result['recommendation']
    peak = (recommendation.get('basis') or {}).get('peak_non_pod_bytes')
    if peak is None:
        series = (result.get('history') or {}).get('series') or []
        peak = max([value for _t, value in series] or [None]) if series else None
    return _memory_risk.memory_risk(reserved_now_bytes, peak, max(0, result['memory']['non_pod_bytes']),
                                    recommendation.get('memory_headroom_bytes'), capacity_memory_bytes,
                                    recommendation.get('eviction_hard_memory_bytes'))


def config_diff(current, recommended, path=None):
    """The unified diff, as lines, of kubeReserved/systemReserved before and after a write into the main file.

    The after side comes from ``_config_edit.apply_changes``, the merge the kubelet_config module makes
    (map keys merged one by one, an equal quantity keeps its text), so the diff shows what apply would write into
    these fields (_node_plan.fields_diff). Empty when nothing would change.
    """
    return _node_plan.fields_diff(current, recommended, path or 'kubelet config')


def _plan(result):
    """The node's plan (its refusals, the diff of what apply writes, into our drop-in where it writes one); a result
    from a module without a plan is planned here with the role's defaults."""
    return result.get('plan') or _node_plan.plan(result, {})


def _not_measured(host, result, inventory_class=None):
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
    node = {'host': host, 'status': status, 'status_reason': message or 'no result (unreachable or not run)',
            'risk': _memory_risk.UNKNOWN, 'margin_bytes': None, 'flags': [],
            'memory_risk': _memory_risk.not_assessed(_memory_risk.UNKNOWN, 'not measured')}
    if inventory_class:
        # The inventory names its class: the node is counted, and fixed, with that class (one name, one count).
        node['template_class'] = _node_templates.class_name(inventory_class, {})
    return node


def _bytes(text):
    """A memory quantity string as bytes (apimachinery's Value(), rounded up)."""
    return _quantity.quantity_value(_quantity.parse_quantity(str(text)))


def _millicores(text):
    return _quantity.milli_value(_quantity.parse_quantity(str(text)))


def _no_kubelet(result):
    """True when neither a kubelet process nor a kubelet config was found: there is nothing to apply to."""
    kubelet = result.get('kubelet') or {}
    return not result.get('current') and not kubelet.get('config_path') and not kubelet.get('pid')


def _node(host, result, inventory_class=None):
    if not isinstance(result, dict) or result.get('failed') or result.get('unreachable') or 'recommendation' not in result:
        return _not_measured(host, result, inventory_class)
    memory, cpu, current = result['memory'], result['cpu'], result.get('current')
    recommendation = result['recommendation']
    no_kubelet = _no_kubelet(result)
    reserved_now, reserved_now_millicores = _reserved_now(current)
    # Without a kubelet no pod competes with the system: there is no margin to run short of.
    margin = None if no_kubelet else (reserved_now or 0) - max(0, memory['non_pod_bytes'])
    kubelet_config = (result.get('kubelet') or {}).get('config_path')
    capacity_memory_bytes = _bytes(result['capacity']['memory'])
    capacity_millicores = cpu.get('capacity_millicores')
    record = result.get('class_record') or {}
    node_class = list(record.get('node_class') or _headroom.node_class(
        memory.get('mem_total_bytes') or capacity_memory_bytes, (capacity_millicores or 0) // 1000))
    decision = result.get('decision') or {}
    planned = {'refusals': [], 'report': {'config_diff': []}} if no_kubelet else _plan(result)
    memory_risk = (_memory_risk.not_assessed(_memory_risk.NO_KUBELET, NO_KUBELET) if no_kubelet else
                   node_memory_risk(result, reserved_now, capacity_memory_bytes))
    return {
        'host': host,
        'status': 'no_kubelet' if no_kubelet else 'ok',
        # Why a node is not 'ok', as a sentence (None when it is): the one field every renderer prints for it.
        'status_reason': NO_KUBELET if no_kubelet else None,
        # The category alone (what summaries count) and the figures it rests on, from _memory_risk only.
        'risk': memory_risk['category'],
        'memory_risk': memory_risk,
        'node_class': node_class,
        # The class the fleet view and the node templates group by: the inventory's name, else the size class.
        'template_class': _node_templates.class_name(inventory_class, {'class_record': {
            'node_class': node_class, 'control_plane': record.get('control_plane') is True}}),
        # The static pods run the API server or etcd (_node/_control_plane): its own class and floor.
        'control_plane': record.get('control_plane') is True,
        # The memory rests on the cold-start floor (raised to it) rather than on the node's own P + headroom.
        'on_cold_start_prior': _memory_on_floor(recommendation.get('cold_start')),
        # Whether the kubelet's or the runtime's processes were found: without them kubeReserved is not measured.
        'components_found': _node_templates.components_found(result),
        'reserved_now_millicores': reserved_now_millicores,
        'recommended_reserved_millicores': recommendation['reserved_millicores'],
        'capacity_millicores': capacity_millicores,
        'capacity_memory_bytes': capacity_memory_bytes,
        # No kubelet, or one run by flags alone: apply refuses, so there is no diff to show.
        'config_diff': planned['report']['config_diff'] if kubelet_config else [],
        # What the static CPU and memory managers make of the change (_node_plan.resource_manager_lines): the
        # reservedMemory apply writes with it, the whole CPUs to reserve. Sentences; empty where neither is static.
        'resource_managers': [] if no_kubelet else _node_plan.resource_manager_lines(
            planned.get('resource_managers') or {}),
        # Why apply would write nothing (the plan's refusals, _node_plan.REFUSAL_SOURCES): the verdict's "fix".
        'refusals': list(planned.get('refusals') or []),
        # What to look at before writing it: above every vendor formula, or above a share of the node (_memory_risk).
        'flags': [] if no_kubelet else _memory_risk.reservation_flags(
            recommendation['reserved_memory_bytes'], capacity_memory_bytes, result.get('formulas')),
        'capacity': result['capacity'],
        'current': _current(current, reserved_now),
        'measured': _measured_figures(memory, cpu),
        'recommended': {
            'kube_reserved': recommendation['kube_reserved'],
            'system_reserved': recommendation['system_reserved'],
        },
        'allocatable': recommendation['allocatable'],
        # ephemeral-storage and pid beside memory and CPU: used outside the pods, reserved, allocatable, written or not.
        'other_resources': _other_resources.summarise(recommendation),
        'allocatable_memory_bytes': _bytes(recommendation['allocatable']['memory']),
        'allocatable_millicores': _millicores(recommendation['allocatable']['cpu']),
        'eviction_hard_memory_bytes': recommendation.get('eviction_hard_memory_bytes'),
        'margin_bytes': margin,
        'cgroup': result['cgroup'],
        'kubelet_config': kubelet_config,
        'not_found': result.get('not_found') or [],
        'explanation': recommendation['explanation'],
        'decision': None if no_kubelet else decision.get('action'),
        # Each resource's own action (_decision): a CPU-only change moves no memory.
        'decision_by_resource': None if no_kubelet else {
            resource: (decision.get(resource) or {}).get('action') for resource in ('memory', 'cpu')},
        'decision_reasons': [] if no_kubelet else decision.get('reasons') or [],
        'memory_delta_bytes': None if no_kubelet else decision.get('memory_delta_bytes'),
        'cpu_delta_millicores': None if no_kubelet else decision.get('cpu_delta_millicores'),
        # Evidence of starvation (PSI); the CPU guarantee and the uncorrected memory figure are in the explanation.
        'pressure': _cpu_guarantee.describe_pressure(result.get('pressure') or {}),
        'history': dict({k: (result.get('history') or {}).get(k) for k in ('samples', 'span_seconds', 'series',
                                                                           'source', 'since')},
                        prometheus=prometheus_read(result.get('history'))),
        # Where the figure came from while the history is short (_recommend.cold_start), None once it is not.
        'cold_start': recommendation.get('cold_start'),
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
        'formulas': _formula_reservations(result.get('formulas')),
    }


def prometheus_read(history):
    """What Prometheus gave the node (the module's ``history.prometheus``): where it was read, whether it was used and
    why not (``reason``: not reached, refused, an unusable answer); None where no Prometheus was asked."""
    read = (history or {}).get('prometheus')
    if not read:
        return None
    return {key: read.get(key) for key in ('url', 'node', 'used', 'reason', 'samples', 'span_seconds')}


def _reserved_now(current):
    """(memory bytes, millicores) kubeReserved and systemReserved hold together now; (None, None) without a config."""
    if not current:
        return None, None
    return (_node_allocatable.reserved_amount(current.get('kube_reserved'), 'memory', 0)
            + _node_allocatable.reserved_amount(current.get('system_reserved'), 'memory', 0),
            _node_allocatable.reserved_amount(current.get('kube_reserved'), 'cpu', -3)
            + _node_allocatable.reserved_amount(current.get('system_reserved'), 'cpu', -3))


def _current(current, reserved_now):
    """The reservation fields of the config in force, None without one."""
    return None if not current else {
        'kube_reserved': current.get('kube_reserved') or {},
        'system_reserved': current.get('system_reserved') or {},
        'eviction_hard': current.get('eviction_hard') or {},
        'enforce_node_allocatable': current.get('enforce_node_allocatable') or [],
        'reserved_memory_bytes': reserved_now,
    }


def _measured_figures(memory, cpu):
    return {
        'non_pod_memory_bytes': memory['non_pod_bytes'],
        'non_pod_swap_bytes': memory.get('non_pod_swap_bytes'),
        'poc_non_pod_memory_bytes': memory.get('non_pod_poc_bytes'),
        # Ansible's own module interpreters (and the sampler) present at the reading, not counted above.
        'measurement_tool_bytes': (memory.get('non_pod_accounting') or {}).get('measurement_tool_bytes'),
        'kubepods_working_set_bytes': memory['kubepods_working_set_bytes'],
        'non_pod_millicores': cpu['non_pod_millicores'],
        'sample_seconds': cpu['sample_seconds'],
    }


def _formula_reservations(formulas):
    """Each vendor formula's reserved memory and CPU, for the report's comparison."""
    return {name: {'reserved_memory_bytes': f['reserved_memory_bytes'], 'reserved_millicores': f['reserved_millicores']}
            for name, f in (formulas or {}).items()}


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


def plan_of(result):
    """The plan of a measured node's result (``_plan``)."""
    return _plan(result)


def build_node(host, result, inventory_class=None):
    """One report node from a host's facts result (what ``build_report`` makes of each), without the fleet's pass
    (young nodes' risk against their class, the verdicts): ``_class_selection`` reads it on the controller."""
    return _node(host, result, inventory_class)


def build_report(results, now=None, node_classes=None):
    """``results``: {host: node_reservation_facts result}; ``node_classes``: {host: the inventory's
    ``nodealloc_node_class``} (empty or missing: the size class). Returns the report dict."""
    nodes = [_node(host, result, (node_classes or {}).get(host) or None) for host, result in sorted(results.items())]
    return _report(nodes, now)


def _report(nodes, now):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    # A young node's risk against the headroom its class's warm nodes keep (_memory_risk), then every verdict.
    warm = _memory_risk.class_warm_headrooms(nodes)
    nodes = [dict(node, memory_risk=risk, risk=risk['category'])
             for node, risk in ((node, _memory_risk.young_node_risk(node, warm)) for node in nodes)]
    nodes = sorted(_verdict.with_verdicts(nodes, now.timestamp()), key=sort_key)
    classes = [dict(entry, name=name) for name, entry in _fleet_classes.class_summaries(nodes)]
    counts = summary(nodes)
    # AWX shows these as keys (set_stats): one word each ('not measured' as not_measured).
    counts['verdicts'] = {_summary_key(entry['name']): entry['verdict']['action'] for entry in classes}
    return {'schema_version': SCHEMA_VERSION, 'generated_at': now.strftime('%Y-%m-%dT%H:%M:%SZ'), 'summary': counts,
            'classes': classes, 'nodes': nodes}


def _summary_key(name):
    key = str(name).replace(' ', '_')
    return key if re.match(r'^[A-Za-z0-9_.-]{1,63}$', key) else 'other'


def measured(node):
    """Whether the node was measured (``ok`` or ``no_kubelet``): only those carry figures to render."""
    return 'measured' in node


def sort_key(node):
    """Not measured first (someone must look at them), then by memory risk, worst first (_memory_risk.ORDER), and
    within a category the least memory to spare over the peak as a share of the node's memory; no kubelet last."""
    group = 0 if not measured(node) else 2 if node['status'] == 'no_kubelet' else 1
    memory_risk = node.get('memory_risk') or {}
    share = memory_risk.get('spare_share')
    return (group, _memory_risk.rank(node['risk']), 0 if share is None else share,
            -(memory_risk.get('peak_bytes') or 0), node['host'])


def summary(nodes):
    """Counts for the fleet: by status, by decision and by risk (what AWX's set_stats shows), and by history source."""
    counts = {'nodes': len(nodes), 'status': {}, 'decision': {}, 'risk': {}}
    for node in nodes:
        # Keys AWX shows (set_stats): one short word each, whatever a result file carried.
        for key, value in (('status', units.word(node['status'])), ('decision', units.word(node.get('decision') or 'none')),
                           ('risk', units.word(node['risk']))):
            counts[key][value] = counts[key].get(value, 0) + 1
    counts.update(history_counts(nodes))
    return counts


# Issue 36: where every figure came from. The source of each measured node's history (_gather.HISTORY_SOURCES), and
# how many rest on the cold-start floor rather than on their measurement.
SOURCE_WORDS = {'node': 'their own history file', 'prometheus': 'Prometheus', 'none': 'no history (one reading)'}


def history_source_of(node):
    """'node', 'prometheus' or 'none' for a measured node (a report from an older module: from its sample count)."""
    history = node.get('history') or {}
    return history.get('source') or ('node' if (history.get('samples') or 0) > 1 else 'none')


def history_counts(nodes):
    """{'history_source': {source: measured nodes}, 'cold_start_floor': nodes with a kubelet whose figure is the floor,
    'cold_start_observe' and 'cold_start_apply': those of them whose verdict is observe, or apply (their readings
    already demand a change), 'cold_start_model': those of them whose floor is their class's model (_recommend: issue
    45)}. A node without a kubelet has nothing to apply or observe: counted by its source, not on the floor."""
    sources = dict.fromkeys(('node', 'prometheus', 'none'), 0)
    floor = observe = apply = model = 0
    for node in nodes:
        if measured(node):
            source = history_source_of(node)
            sources[source] = sources.get(source, 0) + 1
            if node.get('status') == 'ok' and (node.get('cold_start') or {}).get('raised'):
                floor += 1
                action = (node.get('verdict') or {}).get('action')
                observe += 1 if action == 'observe' else 0
                apply += 1 if action == 'apply' else 0
                model += 1 if node['cold_start'].get('floor') == 'class model' else 0
    return {'history_source': sources, 'cold_start_floor': floor, 'cold_start_observe': observe,
            'cold_start_apply': apply, 'cold_start_model': model}


def history_sentence(counts):
    """The report's first line and AWX's: how many nodes rest on each source, and on the floor.

    It sends to observe.yml only the nodes whose verdict is observe: a node on the floor whose reading already
    demands an increase reads apply, and no line may tell the operator both to observe and to restart the same node
    (issue 46); a node on the floor whose verdict is neither is said to keep what it reserves."""
    sources = counts.get('history_source') or {}
    line = 'History: %s.' % ', '.join('%d node(s) on %s' % (sources.get(key, 0), SOURCE_WORDS[key])
                                      for key in ('node', 'prometheus', 'none'))
    floor = counts.get('cold_start_floor') or 0
    if floor:
        observe = counts.get('cold_start_observe', floor)
        apply = counts.get('cold_start_apply', floor - observe)
        model = counts.get('cold_start_model') or 0
        line += (' %d node(s) are held at the cold-start floor%s, above what they measured, until their history spans '
                 'the reaction time' % (floor, ' (%d of them at their class\'s model: docs/arithmetic.md, "The class '
                                               'model")' % model if model else ''))
        if observe == floor:
            line += (': run playbooks/observe.yml (the sampler) or read the history from Prometheus (docs/rollout.md, '
                     '"Observe first").')
        else:
            parts = []
            if observe:
                parts.append('%d of them read observe: run playbooks/observe.yml (the sampler) or read the history '
                             'from Prometheus (docs/rollout.md, "Observe first")' % observe)
            if apply:
                parts.append('%s %d read apply, their readings already demand an increase'
                             % ('the other' if observe and observe + apply == floor else '', apply))
            if floor - observe - apply:
                parts.append('%d keep what they reserve' % (floor - observe - apply))
            line += '; ' + '; '.join(part.strip() for part in parts) + '.'
    return line


def _when(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')


def history_rows(node):
    """Rows saying where a measured node's figure came from: its history's source and span, why Prometheus' history
    was not used where one was asked, and on a cold start the floor beside the measured figure, and when the
    measurement takes over (None: nothing records)."""
    history, source = node.get('history') or {}, history_source_of(node)
    span = (history.get('span_seconds') or 0) / 3600.0
    what = {'node': 'the node\'s own history file, %d readings over %.1f h' % (history.get('samples') or 0, span),
            'prometheus': 'Prometheus, %d samples over %.1f h' % (history.get('samples') or 0, span),
            'none': 'none: this run\'s one reading; nothing records one (run playbooks/observe.yml, or read '
                    'Prometheus)'}.get(source, source)
    out = [('history source', '-', '-', what)]
    read = history.get('prometheus')
    if read and not read.get('used'):
        # Asked and not used: the node rests on its own history (or none); the reason is the operator's to fix.
        out.append(('Prometheus history', '-', '-', 'not used (%s, node %s): %s' % (
            read.get('url'), read.get('node'), read.get('reason') or "it spans no longer than the node's own history")))
    cold = node.get('cold_start')
    if cold:
        takes_over = ('the measurement takes over from %s, when the history spans %.1f h, if it keeps recording'
                      % (_when(cold['takes_over_at']), cold['warm_span_seconds'] / 3600.0)
                      if cold.get('takes_over_at') else 'no history is recorded, so the floor stays until one is: '
                      'run playbooks/observe.yml or read the history from Prometheus')
        floor_name = ("the class's warm nodes" if cold['floor'] == 'class' else 'the %s formula' % cold['floor'])
        out.append(('cold-start floor (%s)' % cold['floor'], units.memory(cold['floor_memory_bytes']),
                    units.cpu(cold['floor_millicores']),
                    '%s, the least reserved while the history spans %.1f h, less than the reaction time%s'
                    % (floor_name, (cold.get('history_span_seconds') or 0) / 3600.0,
                       ': the recommendation is raised to it' if cold['raised'] else '')))
        out.append(('measured recommendation', units.memory(cold['measured_memory_bytes']),
                    units.cpu(cold['measured_millicores']),
                    'history percentile + headroom, before the floor; %s' % takes_over))
    return out


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
    return _report(list(nodes.values()), now)


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


POC_ROW = ('uncorrected non-pod memory', '-', 'MemTotal - MemAvailable - the pods\' working set, before the '
           'page-cache correction; for comparison')


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
        # Where that figure came from, as for a node with a kubelet (a machine measured before its kubelet runs).
        return out + history_rows(node) + _total_formula_rows(node)
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
        risk_row(node),
        ('recommended kubeReserved', units.quantity_memory(node['recommended']['kube_reserved'].get('memory'), _bytes),
         _current_cpu(node['recommended']['kube_reserved']),
         'the measured share of the kubelet and runtime' if node.get('components_found', True) else
         'left as it is: no kubelet or runtime process was found, so their share is unknown'),
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
    out += history_rows(node)
    if node.get('memory_min_beyond_use_bytes'):
        # Waste the kernel enforces: reserved groups' memory.min beyond their use (_memory_protection.cost).
        out.append(('memory.min beyond use', units.memory(node['memory_min_beyond_use_bytes']), '-',
                    'the reserved groups\' memory.min minus their working set: pods cannot reclaim it once the '
                    'daemons grow into it'))
    return out + _total_formula_rows(node)


def risk_row(node):
    """The node's memory risk as a figure row: the spare over its history's peak, and the category with its reason."""
    memory_risk = node['memory_risk']
    spare = memory_risk.get('spare_bytes')
    return ('memory risk: %s' % risk_label(node['risk']), '-' if spare is None else units.memory(spare), '-',
            'reserved minus the history\'s peak; %s' % memory_risk['reason'])


def risk_label(category):
    """A risk category as a person reads it (``not_configured``: ``not configured``)."""
    return category.replace('_', ' ')


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
    """The whole text report as a list of lines: the fleet summary, then every node in full."""
    out = summary_lines(report) + ['']
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
        other = _other_resources.rows(node)
        if other:
            out.extend('  ' + line for line in units.aligned([_other_resources.HEADER] + other,
                                                             right=_other_resources.FIGURE_COLUMNS))
            out.extend('  %s' % line for line in _other_resources.warnings(node))
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
           'Generated %s. The fleet summary first; then each node: those that could not be measured, then by memory '
           'risk, worst first, then those without a kubelet. Memory in MiB/GiB, CPU in millicores (m).' % md(report['generated_at']), '',
           history_sentence(report.get('summary') or {}), '']
    # What changed since the previous report, where one was given (_report_changes), before the nodes in full.
    out += _fleet_summary.markdown_lines(report) + _report_changes.markdown_lines(report.get('changes')) + [
        '# Each node', '']
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
        other = _other_resources.rows(node)
        if other:
            out.extend(units.markdown_table(_other_resources.HEADER, [tuple(md(cell) for cell in row) for row in other],
                                            right=_other_resources.FIGURE_COLUMNS))
            out.append('')
            out.extend(['- %s' % md(line, starts_block=True) for line in _other_resources.warnings(node)]
                       + ([''] if _other_resources.warnings(node) else []))
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
    return _html_page.render_html(report, rows=rows, decision_line=decision_line, explanation=explanation,
                                  history_sentence=history_sentence(report.get('summary') or {}))


# Up to this many nodes the job output carries each node's screen (_printed: about 20 lines a node, no arithmetic).
JOB_OUTPUT_NODES = 3


def renderings(report):
    """Every rendering of one report, as the filters return them.

    ``text`` is the whole text report; ``text_lines`` what a playbook prints with ``debug`` (one per line, without
    escapes in AWX): for a fleet of at most JOB_OUTPUT_NODES nodes (make report's one machine, a canary) each node's
    screen in plain words (``_printed``: the verdict, what was measured, what is recommended; the arithmetic stays in
    the files), else only the fleet summary: at 500 nodes the per-node text runs to tens of thousands of lines and
    belongs in the report's files.
    """
    whole = render_text_lines(report)
    printed = _printed.lines(report) if len(report['nodes']) <= JOB_OUTPUT_NODES else summary_lines(report)
    return {'data': report, 'history_sentence': history_sentence(report.get('summary') or {}),
            'json': render_json(report), 'markdown': render_markdown(report),
            'text': '\n'.join(whole), 'text_lines': printed, 'html': render_html(report)}


def _memory_on_floor(cold_start):
    """Whether the cold-start floor raised the memory figure (_recommend.cold_start), not only the CPU one."""
    return bool(cold_start) and cold_start['measured_memory_bytes'] < cold_start['floor_memory_bytes']


def summary_lines(report):
    """What a playbook prints: where the figures came from (history_sentence), then the fleet summary."""
    lines = [history_sentence(report.get('summary') or {}), ''] + _fleet_summary.text_lines(report)
    return [units.plain_text(line) for line in lines]  # hosts and reasons cannot drive the terminal


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + '\n'
