# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet per node class: what to do (issue 37).

For each class (the inventory's ``nodealloc_node_class`` where set, else the size class: the name the node
templates use, ``_node_templates.class_name``): the recommended reservation, which is exactly what the class's
templates carry (the same ``_node_templates.class_recommendations`` makes both), how many of its nodes apply
would increase, decrease or keep (increase + decrease = the kubelet restarts apply would make), the memory apply
would give back to the pods or take from them, how many nodes rest on the cold-start floor (their history is
still short), their memory risk (``_memory_risk``), and how many were not measured or run no kubelet.

Issue 46: each class's ``verdict`` (``_verdict.class_verdict``: one action, its reason and command, with
``nodes_by_action``), its template's ``flags`` (``_memory_risk.reservation_flags``: the templates' kubeReserved +
systemReserved memory against the largest vendor formula and ``MAX_RESERVED_SHARE`` of its smallest measured node) and
``flagged_nodes`` ({flag: nodes whose own recommendation is flagged}). Issue 45: its ``model``
(``_model_template.view``: the class model over its measured nodes' pods profiles, its line and EKS's at maxPods, and
the points the report draws), None where no node recorded pods. ``nodes`` counts every node of the class, the
not measured ones the inventory names a class for included: the one count every rendering shows.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _model_template
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk, _node_templates, _verdict

NOT_MEASURED = 'not measured'


def _entry():
    return {'nodes': 0, 'not_measured': 0, 'no_kubelet': 0, 'increase': 0, 'decrease': 0, 'keep': 0,
            'kubelet_restarts': 0, 'memory_given_back_bytes': 0, 'memory_taken_bytes': 0, 'on_cold_start_prior': 0,
            'risk': {}, 'recommended': None, 'size_classes': [], 'flags': [], 'flagged_nodes': {}}


def class_order(name, entry):
    """Classes by memory then CPUs (the largest size class of their nodes), the not measured last."""
    sizes = entry.get('size_classes') or []
    return (name == NOT_MEASURED, max(tuple(size) for size in sizes) if sizes else (0, 0), name)


def class_summaries(nodes):
    """[(class name, summary)] of a fleet report's ``nodes``, in ``class_order``; see the module's docstring.

    ``recommended`` is ``{'kube_reserved', 'system_reserved', 'eviction_hard'}`` as the templates carry it, or None
    for a class with no node that has a kubelet (it gets no template).
    """
    classes, members = {}, {}
    for node in nodes:
        name = node.get('template_class') or NOT_MEASURED
        entry = classes.setdefault(name, _entry())
        members.setdefault(name, []).append(node)
        entry['nodes'] += 1
        for flag in node.get('flags') or []:
            entry['flagged_nodes'][flag['flag']] = entry['flagged_nodes'].get(flag['flag'], 0) + 1
        entry['risk'][node['risk']] = entry['risk'].get(node['risk'], 0) + 1
        if 'measured' not in node:
            entry['not_measured'] += 1
            continue
        if node.get('node_class') and list(node['node_class']) not in entry['size_classes']:
            entry['size_classes'].append(list(node['node_class']))
        if node['status'] == 'no_kubelet':
            entry['no_kubelet'] += 1
            continue
        decision = node.get('decision')
        if decision in ('increase', 'decrease', 'keep'):
            entry[decision] += 1
        reserved = (node.get('current') or {}).get('reserved_memory_bytes')
        # Apply writes only where a config file was found (it refuses elsewhere): only there a kubelet restarts.
        if decision in ('increase', 'decrease') and node.get('kubelet_config') and reserved is not None:
            entry['kubelet_restarts'] += 1
            change = node['recommended_reserved_memory_bytes'] - reserved
            entry['memory_taken_bytes' if change > 0 else 'memory_given_back_bytes'] += abs(change)
        if node.get('on_cold_start_prior'):
            entry['on_cold_start_prior'] += 1
    hosts = {node['host']: {'facts': _node_templates.facts_of_report_node(node),
                            'node_class': node.get('template_class')} for node in nodes if node.get('template_class')}
    for name, recommendation in _node_templates.class_recommendations(hosts).items():
        if name in classes:
            classes[name]['recommended'] = {key: recommendation[key]
                                            for key in ('kube_reserved', 'system_reserved', 'eviction_hard')}
    for name, entry in classes.items():
        entry['verdict'] = _verdict.class_verdict(name, members[name])
        # Issue 45: non-pod memory against pods over the class's measured nodes (their class records' profiles).
        entry['model'] = _model_template.view([node.get('class_record') for node in members[name]
                                               if node.get('status') == 'ok'])
        entry['flags'] = template_flags(entry.get('recommended'), members[name], entry['model'])
        entry['size_classes'].sort()
        entry['risk'] = {name: entry['risk'][name] for name in sorted(entry['risk'], key=_memory_risk.rank)}
    return sorted(classes.items(), key=lambda item: class_order(*item))


def _template_memory_bytes(recommended):
    """kubeReserved + systemReserved memory the class's templates carry, in bytes (None without a template)."""
    if not recommended:
        return None
    return sum(_quantity.quantity_value(_quantity.parse_quantity(str(value)))
               for value in ((recommended.get(field) or {}).get('memory') for field in ('kube_reserved', 'system_reserved'))
               if value not in (None, ''))


def template_flags(recommended, nodes, model=None):
    """The template's flags (``_memory_risk.reservation_flags``) on the class's smallest measured node with a kubelet,
    each with the reason the class model gives for its figure beside it where there is one (issue 45: no template
    above the vendor formulas without the reason)."""
    sized = [node for node in nodes if node.get('status') == 'ok' and node.get('capacity_memory_bytes')]
    if not sized or not recommended:
        return []
    smallest = min(sized, key=lambda node: (node['capacity_memory_bytes'], node['host']))
    flags = _memory_risk.reservation_flags(_template_memory_bytes(recommended), smallest['capacity_memory_bytes'],
                                           smallest.get('formulas'))
    if model:
        why = ('; why: its nodes\' non-pod memory, every reading moved to maxPods %d along %.1f MiB a pod (%s), '
               'reaches %s' % (model['max_pods'], model['model']['slope_bytes_per_pod'] / float(1 << 20),
                               'fitted' if model['model']['slope_source'] == 'fit' else "EKS's prior",
                               units.memory(model['at_max_pods_bytes'])))
        flags = [dict(flag, reason=flag['reason'] + why) for flag in flags]
    return flags
