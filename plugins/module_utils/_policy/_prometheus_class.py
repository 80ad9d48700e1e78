# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A node class's history from Prometheus: every node of the class seen in the window, gone ones included (issue 36).

Fleets that replace nodes (Karpenter, Cluster API, managed node groups, Gardener) size their reservations in a
template per pool, and a node's own history dies with it. Prometheus keeps the history of every node it scraped within
its retention: the class's history is, at each step, the largest non-pod memory of any node of the class
(``max`` over the node query of all its nodes), so a peak one of them reached is kept, as class pooling keeps it
(_headroom.pool_jumps). It feeds the same recommendation as a node's own history (_gather.class_template).

The class of a node:

* with a label (``reservations_prometheus_class_label``): the node's value of that label in kube-state-metrics'
  ``kube_node_labels`` (``label_karpenter_sh_nodepool``, or the Kubernetes name ``karpenter.sh/nodepool``, which
  kube-state-metrics exposes as ``label_`` + the name with every character outside [a-zA-Z0-9_] as ``_``; a label
  kube-state-metrics exposes only when its ``--metric-labels-allowlist`` names it);
* without one: its size class, ``<GiB>gib-<cpus>cpu`` as the templates name it (_node_templates.class_name), from
  node_exporter's ``node_memory_MemTotal_bytes`` (named by its node as the default query does) and cAdvisor's
  ``machine_cpu_cores``.

Requests: one instant query for the membership (two for the size class), then per class one ``query_range`` (in
chunks, _prometheus_history.chunks) and one instant query counting the nodes the history rests on. The HTTP is the
action plugin's ``open_url``, as for a node's history.
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlencode

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _names
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_forms import NODE_PLACEHOLDER
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (_prometheus_answer, _prometheus_history,
                                                                                _prometheus_http)

GIB = 1 << 30
# kube-prometheus-stack's names (see _option_forms.DEFAULT_QUERY for the join that names node_exporter's node).
SIZE_MEMORY_QUERY = ('max by (node) (max_over_time(node_memory_MemTotal_bytes{job="node-exporter"}[%(window)ds])'
                     ' * on (namespace, pod) group_left (node) max by (namespace, pod, node) '
                     '(max_over_time(node_namespace_pod:kube_pod_info:[%(window)ds])))')
SIZE_CPU_QUERY = 'max by (node) (max_over_time(machine_cpu_cores[%(window)ds]))'
LABEL_QUERY = 'max by (node, %(label)s) (last_over_time(kube_node_labels{%(label)s!=""}[%(window)ds]))'
_REGEX_SPECIAL = set('\\.+*?()|[]{}^$')
# A hostile server can name thousands of nodes badly: the result lists this many reasons, then counts the rest.
MAX_REFUSALS_LISTED = 20


def kube_state_label(name):
    """The label of ``kube_node_labels`` for ``name``: as given when it starts with ``label_``, else as
    kube-state-metrics writes a Kubernetes label (``label_`` + the name, each character outside [a-zA-Z0-9_] as ``_``)."""
    name = (name or '').strip()
    if name.startswith('label_'):
        return name
    return 'label_' + re.sub(r'[^a-zA-Z0-9_]', '_', name)


def size_class(mem_total_bytes, cpus):
    """'<GiB>gib-<cpus>cpu', as _node_templates.class_name names a size class (_headroom.node_class's rounding)."""
    return '%dgib-%dcpu' % (int(round(float(mem_total_bytes) / GIB)), int(round(float(cpus))))


def _regex_literal(text):
    """``text`` matched literally by an RE2 regular expression."""
    return ''.join('\\' + char if char in _REGEX_SPECIAL else char for char in text)


def _promql_string(text):
    return text.replace('\\', '\\\\').replace('"', '\\"')


def _unquote(literal):
    return re.sub(r'\\(.)', r'\1', literal)


def render_nodes(template, nodes):
    """``template`` (one node's query, ``$node`` in label values) matching every node of ``nodes``.

    Each matcher naming ``$node`` becomes a regular-expression matcher: ``node="$node"`` gives
    ``node=~"(a|b)"``, ``instance="$node:9100"`` gives ``instance=~"(a|b):9100"`` (PromQL anchors the expression).
    Raises ValueError for ``$node`` under ``!=`` or ``!~`` (the class would be every other node).
    """
    alternatives = '(%s)' % '|'.join(_regex_literal(str(node)) for node in sorted(nodes))
    matcher = re.compile(r'(=~|!=|!~|=)(\s*)"((?:[^"\\]|\\.)*)"')

    def replace(match):
        operator, space, literal = match.groups()
        if NODE_PLACEHOLDER not in literal:
            return match.group(0)
        if operator in ('!=', '!~'):
            raise ValueError('the query names $node with %s: a class cannot be matched by it' % operator)
        if operator == '=':
            parts = _unquote(literal).split(NODE_PLACEHOLDER)
            regex = alternatives.join(_regex_literal(part) for part in parts)
        else:
            regex = _unquote(literal).replace(NODE_PLACEHOLDER, alternatives)
        return '=~%s"%s"' % (space, _promql_string(regex))
    return matcher.sub(replace, template)


def instant_body(query, now, timeout_seconds):
    return urlencode({'query': query, 'time': int(now), 'timeout': '%ds' % max(1, int(timeout_seconds))})


def vector(answer):
    """[(labels, value)] of an instant query's answer (its shape checked by _prometheus_answer, which raises a
    ValueError saying why it is not one); a value that is not a finite number is left out."""
    out = []
    for metric, text in _prometheus_answer.vector(answer):
        try:
            value = float(text)
        except ValueError:
            continue
        if math.isfinite(value):
            out.append((metric, value))
    return out


def membership(label, answers, refused=None):
    """{node: class} from the membership answers: ``label``'s (LABEL_QUERY) or, without one, [memory, cpu] (SIZE_*).

    A node with two values of the label in the window (relabelled, or a name reused) takes the larger in sort order,
    so every run gives it the same class; its history counts in both classes.

    A node whose name is not a Kubernetes node name, or one of whose values is not a Kubernetes label value (a size
    class past 63 characters included), is left out of every class: a node's kubelet credentials may set most labels
    on its own Node object, and a class name becomes a directory, a template's header and a query (issue 44). Why is
    appended to ``refused`` (plain words, the values escaped and cut: ``refusal``); the rest of the class is unaffected.
    """
    refused = [] if refused is None else refused
    if label:
        classes = {}
        for metric, _value in vector(answers[0]):
            if metric.get('node') and metric.get(label):
                classes.setdefault(metric['node'], []).append(metric[label])
    else:
        memory = {metric.get('node'): value for metric, value in vector(answers[0]) if metric.get('node')}
        cpus = {metric.get('node'): value for metric, value in vector(answers[1]) if metric.get('node')}
        classes = {node: [size_class(memory[node], cpus[node])] for node in memory if node in cpus and cpus[node] > 0}
    kept = {}
    for node in sorted(classes, key=_names.printable):
        problem = refusal(node, classes[node])
        if problem:
            refused.append(problem)
        else:
            kept[node] = sorted(set(classes[node]))
    return kept


def refusal(node, class_names):
    """Why ``node`` is left out of class history (None when it is not): its name, or one of its class names."""
    if not _names.is_node_name(node):
        return 'node %s is left out of class history: its name is %s' % (_names.shown(node), _names.NODE_NAME_RULE)
    bad = [name for name in class_names if not _names.is_class_name(name)]
    if bad:
        return ('node %s is left out of class history: its class %s is %s'
                % (node, _names.shown(bad[0]), _names.CLASS_NAME_RULE))
    return None


def members(node_classes, name):
    """The nodes whose history counts in class ``name``."""
    return sorted(node for node, names in node_classes.items() if name in names)


def membership_queries(label, window_seconds):
    fields = {'label': label, 'window': int(window_seconds)}
    if label:
        return [LABEL_QUERY % fields]
    return [SIZE_MEMORY_QUERY % fields, SIZE_CPU_QUERY % fields]


def node_count_query(class_query, window_seconds, step_seconds):
    """How many series (nodes) the class's query had in the window, at the history's resolution."""
    return 'count(max_over_time((%s)[%ds:%ds]))' % (class_query, int(window_seconds), int(step_seconds))


def fetch_classes(open_url, settings, now, wanted):
    """The classes of the nodes ``wanted`` (how Prometheus names the play's hosts) and each class's history.

    ``settings``: _prometheus_history.fetch's (its ``node`` unused) and ``class_label`` (the option; '' for the size
    class). Returns {'label': the kube_node_labels label or '', 'node_classes': {wanted node: class}, 'classes':
    {class: history}, 'reason': why no class could be read, or None, 'refused': why nodes were left out of every
    class (``membership``; at most MAX_REFUSALS_LISTED, then how many more)}. Each history is what
    _prometheus_history.fetch returns for the class's query (``max`` over its nodes; a step with no node of the class
    running is no gap that refuses it), plus ``class``, ``label``, ``members`` (the nodes Prometheus knows in the class in the window),
    ``nodes`` (how many of them have a series the history rests on) and ``covered_seconds`` (the steps with a value).
    """
    label = kube_state_label(settings['class_label']) if settings.get('class_label') else ''
    result = {'label': label, 'node_classes': {}, 'classes': {}, 'reason': None, 'refused': []}
    answers = []
    for query in membership_queries(label, settings['window_seconds']):
        answer, reason = _prometheus_http.post(open_url, settings, 'query',
                                               instant_body(query, now, settings['timeout_seconds']))
        if reason:
            result['reason'] = 'the classes could not be read: %s' % reason
            return result
        answers.append(answer)
    try:
        refused = []
        node_classes = membership(label, answers, refused)
        result['refused'] = refused[:MAX_REFUSALS_LISTED] + (
            ['and %d more nodes left out of class history the same way' % (len(refused) - MAX_REFUSALS_LISTED)]
            if len(refused) > MAX_REFUSALS_LISTED else [])
    except ValueError as exc:
        result['reason'] = 'the classes could not be read: %s' % exc
        return result
    result['node_classes'] = {node: node_classes[node][-1] for node in wanted if node in node_classes}
    for name in sorted(set(result['node_classes'].values())):
        result['classes'][name] = class_history(open_url, settings, now, label, name, members(node_classes, name))
    return result


def class_history(open_url, settings, now, label, name, nodes):
    """One class's history (see fetch_classes). ``name`` and ``nodes`` are names ``membership`` let through: anything
    else is a caller's mistake, refused before it reaches a query."""
    if not _names.is_class_name(name) or not all(_names.is_node_name(node) for node in nodes):
        raise ValueError('class_history: the class %s or one of its nodes is not a Kubernetes name' % _names.shown(name))
    step = int(settings['step_seconds'])
    extra = {'class': name, 'label': label, 'members': nodes, 'nodes': 0, 'covered_seconds': 0}
    try:
        query = 'max(%s)' % render_nodes(settings['query'], nodes)
    except ValueError as exc:
        return dict(extra, source='prometheus', url=settings['url'], node='class %s' % name, query=None, samples=[],
                    span_seconds=0, problems=[], reason=str(exc), step_seconds=step,
                    window_seconds=int(settings['window_seconds']))
    history = _prometheus_history.fetch(open_url, dict(settings, node='class %s' % name), now, query=query,
                                        min_coverage=0)
    history.update(extra, covered_seconds=len(history['samples']) * step)
    if history['reason']:
        return history
    counted = render_nodes(settings['query'], nodes)
    answer, reason = _prometheus_http.post(open_url, settings, 'query', instant_body(
        node_count_query(counted, settings['window_seconds'], step), now, settings['timeout_seconds']))
    try:
        history['nodes'] = int(vector(answer)[0][1]) if not reason and vector(answer) else 0
    except ValueError as exc:
        reason = str(exc)
    if reason or not history['nodes']:
        history['problems'].append('the nodes of class %s could not be counted: %s'
                                   % (name, reason or 'no series'))
    return history
