# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Per node class, the class's recommendation in the forms the node-template tools take it.

Fleets that replace nodes instead of restarting kubelets size reservations in a template per pool. For each
class (the inventory's ``nodealloc_node_class``, else the size class the recommendation pools over: memory in
whole GiB and CPU count, _headroom.node_class), the class recommendation is the largest of its nodes'
recommendations, resource by resource (each already sized with its class's pooled headroom where pooling is on),
and ``evictionHard``: every hard threshold its nodes run with (their config's, or the kubelet's default for their
version), each signal the largest of the class. Never ``memory.available`` alone: a config's evictionHard replaces
the kubelet's default map whole, so a map naming one signal turns the others off (k8s.io/kubelet config/v1beta1
types.go, mergeDefaultEvictionSettings). It is written as:

* ``karpenter-ec2nodeclass-patch.yaml``: a merge patch of a Karpenter ``EC2NodeClass`` ``spec.kubelet``
  (``kubeReserved``, ``systemReserved``, ``evictionHard``; aws/karpenter-provider-aws
  pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
* ``capi-kubeadmconfigtemplate-patch.yaml``: a Cluster API ``KubeadmConfigTemplate`` (bootstrap v1beta2) whose
  ``files`` puts a kubeadm ``kubeletconfiguration`` patch on the node and whose ``joinConfiguration.patches``
  points kubeadm at it, as the Cluster API book documents (docs/book/src/tasks/bootstrap/kubeadm-bootstrap/
  kubelet-config.md, "Use kubeadm's kubeletconfiguration patch target").
* ``eks-nodeadm-nodeconfig.yaml``: an EKS nodeadm ``NodeConfig`` (node.eks.aws/v1alpha1) with ``spec.kubelet.config``,
  which nodeadm merges over its own defaults (nodeadm/crds/node.eks.aws_nodeconfigs.yaml).
* ``gardener-worker-kubelet.yaml``: the ``kubernetes.kubelet`` of a Gardener Shoot worker pool. Gardener's
  KubeletConfig has ``kubeReserved`` only (``systemReserved`` is tombstoned in pkg/apis/core/v1beta1/types_shoot.go),
  so both reservations go there, summed; ``evictionHard`` in its field names (``memoryAvailable``, ...).
* ``50-nodealloc.conf``: a plain KubeletConfiguration drop-in for a ``--config-dir``.
* Bottlerocket user data (TOML), a Talos machine config patch, an OpenShift ``KubeletConfig`` and an AKS agent
  pool's ``kubeletConfig``: _image_templates.

A control-plane node (its class record's ``control_plane``: _node/_control_plane) has a class of its own, its base
class name prefixed with ``control-plane-`` (``control-plane-8gib-4cpu``, ``control-plane-general``): no worker's
template carries a control-plane node's figures, nor a control-plane template a worker's.
"""

from __future__ import annotations

import json
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _eviction, _names, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _model_template
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _image_templates, _toml_text

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core on the controller, where this runs
    yaml = None
    HAS_YAML = False

FILES = ('karpenter-ec2nodeclass-patch.yaml', 'capi-kubeadmconfigtemplate-patch.yaml', 'eks-nodeadm-nodeconfig.yaml',
         'gardener-worker-kubelet.yaml', _defaults.DROP_IN_NAME) + _image_templates.FILES
KARPENTER = FILES[0]
CAPI_PATCH_DIRECTORY = '/etc/kubernetes/patches'
# kubeadm patch file name: target "kubeletconfiguration", suffix "0", patch type "strategic" (cmd/kubeadm/app/util/patches).
CAPI_PATCH_PATH = CAPI_PATCH_DIRECTORY + '/kubeletconfiguration0+strategic.json'
_RESOURCES = ('cpu', 'memory')
# Before the class name of a control-plane node (module doc). A size class stays a label value with it (at most 34
# characters); a named class of more than 49 characters does not, and ``placed`` puts its host under its size class.
CONTROL_PLANE_PREFIX = 'control-plane-'


def class_name(host_vars_class, facts):
    """The class a host's template belongs to: the inventory's name for it (given here, or as the facts' class_record
    carries it, _headroom.class_record: what pooling and the report use too), else the class Prometheus gave its node
    (``class_template``: the value of reservations_prometheus_class_label, or its size class there), else
    '<GiB>gib-<cpus>cpu'; on a control-plane node, that name after ``CONTROL_PLANE_PREFIX``."""
    record = (facts or {}).get('class_record') or {}
    from_prometheus = ((facts or {}).get('class_template') or {}).get('class')
    if host_vars_class:
        name = str(host_vars_class)
    elif record.get('class_name'):
        name = str(record['class_name'])
    elif from_prometheus:
        name = str(from_prometheus)
    else:
        return size_class_name(facts)
    return CONTROL_PLANE_PREFIX + name if is_control_plane(facts) else name


def is_control_plane(facts):
    """Whether the facts' class record says the node is a control-plane node (_headroom.class_record)."""
    return ((facts or {}).get('class_record') or {}).get('control_plane') is True


def size_class_name(facts):
    """'<GiB>gib-<cpus>cpu' from the facts' class_record (_headroom.node_class), after ``CONTROL_PLANE_PREFIX`` on a
    control-plane node, or None when it holds no size."""
    node_class = ((facts or {}).get('class_record') or {}).get('node_class')
    try:
        name = '%dgib-%dcpu' % (int(node_class[0]), int(node_class[1]))
    except (TypeError, ValueError, OverflowError, IndexError, KeyError):
        return None  # no size, or not one: facts are a node's word, not trusted to be well formed
    return CONTROL_PLANE_PREFIX + name if is_control_plane(facts) else name


def _amount(resource, text):
    """Bytes for memory, millicores for cpu."""
    value = _quantity.parse_quantity(str(text))
    return _quantity.milli_value(value) if resource == 'cpu' else _quantity.quantity_value(value)


def _format(resource, amount):
    return _quantity.format_cpu(amount) if resource == 'cpu' else _quantity.format_memory(amount)


def _effective_eviction_hard(facts):
    """The hard thresholds the node's kubelet runs with, every signal: what its facts read (its config's map, the
    kubelet's default, or both merged: _defaults.effective_eviction_hard), or the kubelet's default for its version
    when no config was found. A template that wrote only memory.available would turn the others off: a config's
    evictionHard replaces the default whole (k8s.io/kubelet config/v1beta1 types.go, mergeDefaultEvictionSettings:
    "other signals that are not specified in this configuration will be set to 0")."""
    current = (facts or {}).get('current') or {}
    hard = current.get('eviction_hard')
    if hard is None:
        return _defaults.default_eviction_hard((facts.get('kubelet') or {}).get('version'))
    return dict(hard)


def _threshold_rank(signal, text, capacity_bytes):
    """(kind, amount) to compare two values of one signal (a higher one evicts earlier); None for no threshold."""
    try:
        parsed = _eviction.parse_threshold(signal, text)
    except ValueError:
        return None
    if parsed is None:
        return None  # '0%' and '100%' turn the signal off
    if signal == 'memory.available':
        return 'bytes', _eviction.threshold_bytes(parsed, capacity_bytes)
    return parsed


def _larger_threshold(rank, held):
    """Whether ``rank`` is a stricter threshold than ``held``: only values of one kind compare (a disk percentage and
    a disk quantity do not without the disk's size: the first node's value is kept)."""
    if rank is None:
        return False
    if held is None:
        return True
    return rank[0] == held[0] and rank[1] > held[1]


def facts_of_report_node(node):
    """The parts of a facts result templates read, from a fleet report node (``_fleet_report``): the report's
    per-class view and the templates aggregate the same figures with the same function (``class_recommendations``)."""
    if node.get('status') != 'ok':
        return {}  # not measured, or no kubelet: nothing a template could take
    return {'recommendation': node.get('recommended') or {},
            'kubelet': {'config_path': node.get('kubelet_config'), 'found': True},
            'components': [True] if node.get('components_found', True) else [],
            'class_record': {'node_class': node.get('node_class'), 'control_plane': node.get('control_plane') is True,
                             # The class model's inputs (issue 45): the template's header gives the model.
                             'pods_profile': (node.get('class_record') or {}).get('pods_profile'),
                             'max_pods': (node.get('class_record') or {}).get('max_pods')},
            'current': {'eviction_hard': (node.get('current') or {}).get('eviction_hard')},
            'memory': {'mem_total_bytes': node.get('capacity_memory_bytes')}}


def class_recommendations(hosts):
    """{class: summary} from ``hosts``: {host: {'node_class': inventory name or None, 'facts': facts}}.

    The summary: ``hosts`` (sorted), ``kube_reserved`` and ``system_reserved`` ({cpu, memory} quantities, each the
    largest of the class), ``eviction_hard`` (every hard threshold the class's nodes run with, each signal the
    largest of the class: memory.available in bytes of each node's memory), and ``from``, for each value the host
    it came from. Hosts without a recommendation (not measured) are left out.
    """
    classes = {}
    for host in sorted(hosts):
        entry = hosts[host] or {}
        facts = entry.get('facts') or {}
        recommendation = facts.get('recommendation') or {}
        if not recommendation.get('kube_reserved') and not recommendation.get('system_reserved'):
            continue
        name = class_name(entry.get('node_class'), facts)
        if name is None:
            continue
        summary = classes.setdefault(name, {'hosts': [], 'not_used': [], 'kube_reserved': {}, 'system_reserved': {},
                                            'eviction_hard': {}, 'from': {}, 'class_history': None,
                                            '_amounts': {}, '_ranks': {}, '_max_pods': {},
                                            '_sizes': {}})
        if not has_kubelet(facts):
            # A machine without a kubelet has no reservation to tell a pool's template: listed, not used.
            summary['not_used'].append(host)
            continue
        summary['hosts'].append(host)
        summary['_max_pods'][host] = _model_template.record_given_max_pods(facts.get('class_record'))
        summary['_sizes'].setdefault(size_class_name(facts), []).append(host)
        template = facts.get('class_template') or {}
        if template.get('used'):
            # The class's history from Prometheus (every node of the class in the window, gone ones included) with
            # this node's measurement: the same for every host of the class but for its own measured figures.
            recommendation = template['recommendation']
            summary['class_history'] = {key: template.get(key) for key in (
                'label', 'nodes', 'members', 'span_seconds', 'covered_seconds', 'window_seconds')}
        elif template.get('reason') and not summary['class_history']:
            summary['class_history'] = {'reason': template['reason']}
        for field in ('kube_reserved', 'system_reserved'):
            if field == 'kube_reserved' and not components_found(facts):
                continue  # its kubeReserved share is 0 because no kubelet or runtime process was found, not measured
            for resource in _RESOURCES:
                text = (recommendation.get(field) or {}).get(resource)
                if text is None:
                    continue
                key = '%s.%s' % (field, resource)
                amount = _amount(resource, text)
                if amount > summary['_amounts'].get(key, -1):
                    summary['_amounts'][key] = amount
                    summary[field][resource] = _format(resource, amount)
                    summary['from'][key] = host
        capacity = ((facts.get('memory') or {}).get('mem_total_bytes')) or 0
        for signal, text in sorted(_effective_eviction_hard(facts).items()):
            rank = _threshold_rank(signal, text, capacity)
            held = summary['_ranks'].get(signal)
            if signal not in summary['eviction_hard'] or _larger_threshold(rank, held):
                summary['_ranks'][signal] = rank
                summary['eviction_hard'][signal] = text
                summary['from']['eviction_hard.' + signal] = host
    for summary in classes.values():
        by_host = summary.pop('_max_pods')
        summary['max_pods'], summary['max_pods_seen'] = class_max_pods(by_host)
        summary['max_pods_unknown'] = sum(1 for count in by_host.values() if count is None)
        sizes = summary.pop('_sizes')
        # {size class: hosts} where the class's nodes are of more than one size (karpenter_by_size), else {}; a node
        # with no size in its record stays in the class's file only.
        # A size from a malformed record (no label value: an absurd GiB count) names no file (issue 44's rule).
        sized = {size: names for size, names in sizes.items() if size and _names.is_class_name(size)}
        summary['sizes'] = sized if len(sized) > 1 else {}
        del summary['_amounts'], summary['_ranks']
    return {name: summary for name, summary in classes.items() if summary['hosts']}


def class_max_pods(by_host):
    """(maxPods to write, {maxPods: nodes}) from {host: the maxPods its class_record gives (given, not assumed:
    _model_template.record_given_max_pods), or None}: the one maxPods every node of the class runs with, else None
    (issue 45 item 5). Each node's recommendation is sized at its own maxPods (_gather.node_max_pods); writing the
    value they share keeps the kubelet from admitting more pods than the reservation is sized for. Where the nodes
    differ (a pool of several instance sizes, each with its own ENI limit) or one gave none (its kubelet's maxPods was
    not read, and 110 was assumed), no value is written: one maxPods would cut the larger nodes' pods or raise the
    smaller ones' past what their reservation and their network hold."""
    seen = {}
    for count in by_host.values():
        if count is not None:
            seen[count] = seen.get(count, 0) + 1
    agreed = next(iter(seen)) if len(seen) == 1 and None not in by_host.values() else None
    return agreed, dict(sorted(seen.items()))


def max_pods_header(file_name, summary):
    """The header lines saying whether the file sets maxPods, and why (``class_max_pods``)."""
    if file_name in MAX_PODS_NOT_WRITABLE:
        return ['# maxPods is not set here: %s; the values are sized for the maxPods its nodes run with: %s.'
                % (MAX_PODS_NOT_WRITABLE[file_name], _max_pods_seen_text(summary))]
    if summary.get('max_pods'):
        line = ['# maxPods %d, as each of these nodes runs with: set here with the reservation sized for it, so '
                'the kubelet admits no more pods than that.' % summary['max_pods']]
        return line + MAX_PODS_PRECEDENCE.get(file_name, [])
    return ['# maxPods is not set here: its nodes run with %s; each value is the largest of its nodes\', each sized '
            'at its own maxPods (110 where none was read).' % _max_pods_seen_text(summary)]


def _max_pods_seen_text(summary):
    seen = summary.get('max_pods_seen') or {}
    parts = ['maxPods %d (%d node%s)' % (count, nodes, '' if nodes == 1 else 's') for count, nodes in seen.items()]
    unknown = summary.get('max_pods_unknown') or 0
    if unknown:
        parts.append('%d node%s whose maxPods was not read (the kubelet\'s 110 assumed)' % (unknown, '' if unknown == 1 else 's'))
    return ', '.join(parts) if parts else 'each node\'s own maxPods'


def classes_without_template(hosts):
    """{class: why it gets no template}: the classes whose measured nodes all run without a kubelet."""
    out = {}
    for host in sorted(hosts):
        entry = hosts[host] or {}
        facts = entry.get('facts') or {}
        name = class_name(entry.get('node_class'), facts)
        if name is None or not facts.get('recommendation'):
            continue
        out.setdefault(name, []).append(has_kubelet(facts))
    return {name: 'no node of the class runs a kubelet (%d measured without one): no template' % len(found)
            for name, found in sorted(out.items()) if not any(found)}


def has_kubelet(facts):
    """A kubelet process or a kubelet config was found (as the report's ``no_kubelet`` reads it)."""
    kubelet = facts.get('kubelet') or {}
    return bool(facts.get('current') or kubelet.get('config_path') or kubelet.get('pid') or kubelet.get('found'))


def components_found(facts):
    """Whether the module found the kubelet's or the runtime's processes (``components``): without them its
    kubeReserved share is 0 by default, not by measurement (a k3s or RKE2 kubelet embedded in another binary)."""
    return bool(facts.get('components', True))


def _kubelet_fields(summary):
    fields = {}
    for field, key in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved'),
                       ('eviction_hard', 'evictionHard')):
        if summary[field]:
            fields[key] = dict(sorted(summary[field].items()))
    if summary.get('max_pods'):
        fields['maxPods'] = summary['max_pods']
    return fields


def _summed_reserved(summary):
    """kubeReserved + systemReserved per resource (Gardener has one reservation)."""
    total = {}
    for resource in _RESOURCES:
        amounts = [_amount(resource, summary[field][resource]) for field in ('kube_reserved', 'system_reserved')
                   if resource in summary[field]]
        if amounts:
            total[resource] = _format(resource, sum(amounts))
    return total


def dns_label(name):
    """A Kubernetes object name from a class name (lower case, [a-z0-9-], at most 63 characters)."""
    label = re.sub(r'[^a-z0-9-]+', '-', name.lower()).strip('-')[:63].strip('-')
    return label or 'nodealloc'


# The evictionHard signals each tool takes. Karpenter: its EC2NodeClass CRD's CEL key rule (the schema's
# propertyNames); Gardener: KubeletConfigEviction's fields (pkg/apis/core/v1beta1/types_shoot.go). The kubelet
# files (drop-in, Cluster API patch, nodeadm's config) take every signal.
KARPENTER_EVICTION_SIGNALS = ('memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available',
                              'imagefs.inodesFree', 'pid.available')
GARDENER_EVICTION_FIELDS = {'memory.available': 'memoryAvailable', 'nodefs.available': 'nodeFSAvailable',
                            'nodefs.inodesFree': 'nodeFSInodesFree', 'imagefs.available': 'imageFSAvailable',
                            'imagefs.inodesFree': 'imageFSInodesFree'}


def left_out_signals(file_name, summary):
    """The class's thresholds ``file_name``'s tool has no field for (its own default applies there)."""
    if file_name in _image_templates.FILES:
        return _image_templates.left_out_signals(file_name, summary)
    allowed = {'karpenter-ec2nodeclass-patch.yaml': KARPENTER_EVICTION_SIGNALS,
               'gardener-worker-kubelet.yaml': tuple(GARDENER_EVICTION_FIELDS)}.get(file_name)
    if allowed is None:
        return []
    return sorted(signal for signal in summary['eviction_hard'] if signal not in allowed)


def documents(name, summary):
    """{file name: document (dict)} for one class."""
    kubelet = _kubelet_fields(summary)
    drop_in = dict({'apiVersion': _defaults.API_VERSION, 'kind': _defaults.KIND}, **kubelet)
    karpenter = dict(kubelet)
    if 'evictionHard' in karpenter:
        karpenter['evictionHard'] = {signal: text for signal, text in kubelet['evictionHard'].items()
                                     if signal in KARPENTER_EVICTION_SIGNALS}
    gardener = {}
    if _summed_reserved(summary):
        gardener['kubeReserved'] = _summed_reserved(summary)
    gardener_eviction = {GARDENER_EVICTION_FIELDS[signal]: text for signal, text in sorted(
        summary['eviction_hard'].items()) if signal in GARDENER_EVICTION_FIELDS}
    if gardener_eviction:
        gardener['evictionHard'] = gardener_eviction
    if summary.get('max_pods'):
        gardener['maxPods'] = summary['max_pods']
    return dict({
        'karpenter-ec2nodeclass-patch.yaml': {'spec': {'kubelet': karpenter}},
        'capi-kubeadmconfigtemplate-patch.yaml': {
            'apiVersion': 'bootstrap.cluster.x-k8s.io/v1beta2', 'kind': 'KubeadmConfigTemplate',
            'metadata': {'name': dns_label(name) + '-nodealloc'},
            'spec': {'template': {'spec': {
                'files': [{'path': CAPI_PATCH_PATH, 'owner': 'root:root', 'permissions': '0644',
                           'content': json.dumps(drop_in, indent=2, sort_keys=True) + '\n'}],
                'joinConfiguration': {'patches': {'directory': CAPI_PATCH_DIRECTORY}}}}}},
        'eks-nodeadm-nodeconfig.yaml': {'apiVersion': 'node.eks.aws/v1alpha1', 'kind': 'NodeConfig',
                                        'spec': {'kubelet': {'config': kubelet}}},
        'gardener-worker-kubelet.yaml': {'kubernetes': {'kubelet': gardener}},
        _defaults.DROP_IN_NAME: drop_in,
    }, **_image_templates.documents(name, dns_label(name), summary))


HOW_TO_USE = {
    'karpenter-ec2nodeclass-patch.yaml': 'kubectl patch ec2nodeclass <name> --type merge --patch-file this file',
    'capi-kubeadmconfigtemplate-patch.yaml': ('merge files[] and joinConfiguration.patches into the pool\'s '
                                              'KubeadmConfigTemplate (a new template name rolls its MachineDeployment)'),
    'eks-nodeadm-nodeconfig.yaml': 'a NodeConfig part of the node\'s user data; nodeadm merges it over its defaults',
    'gardener-worker-kubelet.yaml': ('under .spec.provider.workers[<pool>] of the Shoot; merge into an existing '
                                     'kubernetes.kubelet (the pool\'s kubelet replaces the Shoot\'s, no merge). '
                                     'Gardener has no systemReserved: kubeReserved here is kube + system'),
    _defaults.DROP_IN_NAME: 'a KubeletConfiguration drop-in for the kubelet\'s --config-dir',
}
HOW_TO_USE.update(_image_templates.HOW_TO_USE)


# Where a template cannot carry maxPods, and why (class_max_pods).
MAX_PODS_NOT_WRITABLE = {
    _image_templates.AKS: ('AKS takes it as the agent pool\'s properties.maxPods, set when the pool is created (a new '
                           'pool changes it), not in kubeletConfig'),
}
# What the maxPods written here overrides, where a user may have set it another way.
MAX_PODS_PRECEDENCE = {
    'eks-nodeadm-nodeconfig.yaml': ['# nodeadm takes kubelet.config.maxPods over a kubelet.maxPodsExpression and over '
                                    'its ENI formula: remove it here only if your expression gives the same number.'],
    'karpenter-ec2nodeclass-patch.yaml': ['# Karpenter schedules against this maxPods (spec.kubelet.maxPods) in place of '
                                          'its per-instance-type default, on every instance type the NodePool may '
                                          'launch: where it may launch sizes not measured here, remove maxPods (and '
                                          'the reservation is then sized for this count only).'],
    _image_templates.BOTTLEROCKET: ['# max-pods belongs in your user data\'s own [settings.kubernetes] table (with '
                                    'cluster-name, api-server): move it there; TOML refuses a table defined twice.'],
}

# What overrides the file: said in its header, where a user merges it.
PRECEDENCE = {
    'capi-kubeadmconfigtemplate-patch.yaml': [
        '# Precedence: kubelet flags win over this patch. kubeletExtraArgs in the pool\'s KubeadmConfigTemplate',
        '# (joinConfiguration.nodeRegistration.kubeletExtraArgs: --kube-reserved, --system-reserved, --eviction-hard,',
        '# as the Cluster API quick-start template passes --eviction-hard) override these fields: remove them there.'],
}


if HAS_YAML:
    class _TemplateDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """SafeDumper that writes the controller's subclasses of str, int, float, dict and list as their base type
        (as _config_edit's dumper does: a filter's input carries AnsibleUnicode or tagged types at any depth) and a
        string of several lines as a literal block, where the emitter allows one (it falls back to a quoted scalar
        for text a block cannot hold)."""

        def represent_text(self, data):
            if '\n' in data:
                return self.represent_scalar('tag:yaml.org,2002:str', str(data), style='|')
            return self.represent_str(str(data))

    for _base, _represent in ((str, _TemplateDumper.represent_text), (int, yaml.SafeDumper.represent_int),
                              (float, yaml.SafeDumper.represent_float), (dict, yaml.SafeDumper.represent_dict),
                              (list, yaml.SafeDumper.represent_list)):
        _TemplateDumper.add_multi_representer(_base, _represent)
    _TemplateDumper.add_representer(str, _TemplateDumper.represent_text)


def yaml_text(document):
    """``document`` as block YAML, through PyYAML's serializer: keys in the document's order, every key and value
    quoted where YAML needs it, so no text in it can become a key of its own (issue 44)."""
    if not HAS_YAML:  # pragma: no cover - see the import
        raise MissingLibraryError('PyYAML', 'on the controller to write the node templates')
    return yaml.dump(document, Dumper=_TemplateDumper, default_flow_style=False, sort_keys=False, width=10 ** 6,
                     allow_unicode=False)


def comment_line(line):
    """One line of a template's header comment (``line`` starts with '#') with every character that could end the
    line, or that a YAML reader refuses, escaped (_names.printable): host names, reasons and signals a node or a
    server gave cannot leave the comment."""
    return _names.printable(line)


def history_header(name, class_history):
    """The header lines saying what the class's figures rest on: how many nodes and days of its Prometheus history,
    or each node's own history (and why not the class's)."""
    if not class_history:
        return ["# History: each node's own (no class history from Prometheus)."]
    if class_history.get('reason'):
        return ["# History: each node's own; the class history from Prometheus is not used: %s."
                % class_history['reason']]
    selector = '%s="%s"' % (class_history['label'], name) if class_history.get('label') else 'size class %s' % name
    return ['# History: Prometheus, %d nodes of %s over %.1f days (%.1f days with a reading; window %.1f days), '
            'gone nodes included.'
            % (class_history.get('nodes') or len(class_history.get('members') or ()), selector,
               (class_history.get('span_seconds') or 0) / 86400.0, (class_history.get('covered_seconds') or 0) / 86400.0,
               (class_history.get('window_seconds') or 0) / 86400.0)]


def model_header(hosts, names):
    """The header lines giving the class model its nodes' records rest on (issue 45: intercept, slope, nodes, days),
    and the maxPods the figures are sized for; [] where no node of the class recorded pods."""
    shown = _model_template.view([((hosts.get(host) or {}).get('facts') or {}).get('class_record') for host in names],
                                 points=0)
    if not shown:
        return []
    return ['# ' + _model_template.header_line(shown),
            '# Sized for maxPods %d: a template that lets the kubelet admit more pods needs %.1f MiB more memory '
            'reserved for each pod beyond it.' % (shown['max_pods'], shown['model']['slope_bytes_per_pod'] / 1048576.0)]


def placed(hosts):
    """(hosts, moved): ``hosts`` with each host under a class name the templates may use, and {host: why it is not
    under its own class}.

    A class name becomes a directory, a template's name and its header: it must be a Kubernetes label value
    (_names.is_class_name; issue 44: a label a node sets on itself held a newline that turned the drop-in into
    ``authentication.anonymous.enabled: true``). A host whose class is not one, or whose class differs from another
    class only in letter case (one directory on a file system that does not tell case apart), goes to its size class
    (``<GiB>gib-<cpus>cpu``), and that class's header says so; a host without a usable size class either is left out.
    Grouping elsewhere (pooling, the report's fleet view) keeps the class as given: only the files change.
    """
    names = {host: class_name((hosts[host] or {}).get('node_class'), (hosts[host] or {}).get('facts') or {})
             for host in hosts}
    by_case = {}
    for name in set(names.values()):
        if _names.is_class_name(name):
            by_case.setdefault(name.lower(), set()).add(name)
    out, moved = {}, {}
    for host in sorted(hosts):
        entry, name = hosts[host] or {}, names[host]
        size = size_class_name(entry.get('facts'))
        if name is None or name == size:
            out[host] = entry
            continue
        if not _names.is_class_name(name):
            why = 'its class %s is %s' % (_names.shown(name), _names.CLASS_NAME_RULE)
        elif len(by_case[name.lower()]) > 1:
            why = 'its class %s differs from %s only in letter case' % (name, ' and '.join(
                sorted(other for other in by_case[name.lower()] if other != name)))
        else:
            out[host] = entry
            continue
        if _names.is_class_name(size):
            out[host] = dict(entry, node_class=size)
            moved[host] = why
        else:
            moved[host] = why + ', and it has no size class: left out'
    return out, moved


def render(hosts):
    """[{'path': '<class>/<file>', 'class': class, 'content': text}] for every class of ``hosts`` (see
    class_recommendations and ``placed``). The directory is the class name itself (a label value: no '/', never '.'
    or '..'); the content is a header of comment lines (``comment_line``) and the document through ``yaml_text``."""
    rendered = []
    hosts, moved = placed(hosts)
    for name, summary in sorted(class_recommendations(hosts).items()):
        here = [host for host in summary['hosts'] + summary['not_used'] if host in moved]
        per_size = karpenter_by_size(name, summary, hosts)
        for file_name, document in documents(name, summary).items():
            header = ['# nodealloc.kubelet node template for class %s (%d nodes: %s).'
                      % (name, len(summary['hosts']), ', '.join(summary['hosts']))]
            header += ['# Here by its size class: %s (%s).' % (host, moved[host]) for host in here]
            if summary['not_used']:
                header.append('# Not used (no kubelet found): %s.' % ', '.join(summary['not_used']))
            header += history_header(name, summary.get('class_history'))
            header += model_header(hosts, summary['hosts'])
            header += max_pods_header(file_name, summary)
            header += ['# Each value is the largest its class recommended; from: %s.'
                       % ', '.join('%s %s' % (key, host) for key, host in sorted(summary['from'].items())),
                       '# Use: %s.' % HOW_TO_USE[file_name]] + PRECEDENCE.get(file_name, [])
            header += _image_templates.notes(file_name, summary)
            left_out = left_out_signals(file_name, summary)
            if len(left_out) < len(summary['eviction_hard']):
                header.append('# evictionHard is every hard threshold the class runs with, not memory.available '
                              'alone: a map that names some signals turns the others off.')
            if left_out:
                header.append('# Not expressible here (the tool\'s default applies): evictionHard %s.'
                              % ', '.join(left_out))
            # Bottlerocket reads TOML: its tables through _toml_text, which quotes and escapes as PyYAML does here.
            body = _toml_text.toml_text(document) if file_name in _image_templates.TOML_FILES else yaml_text(document)
            if file_name == KARPENTER and per_size:
                header += ['# The class mixes sizes (%s): this file carries the largest of them. Karpenter applies one '
                           'kubeReserved to every instance type of an EC2NodeClass; the files beside it give each size '
                           'its own: %s.' % (', '.join(item['size'] for item in per_size), ', '.join(
                               item['path'].split('/', 1)[1] for item in per_size))]
            rendered.append({'path': '%s/%s' % (name, file_name), 'class': name, 'form': file_name,
                             'content': '\n'.join(comment_line(line) for line in header) + '\n' + body})
        rendered += per_size
    return rendered


def karpenter_per_size_name(size):
    """The file of one size of a class that mixes sizes: ``karpenter-ec2nodeclass-patch-<size>.yaml``."""
    return KARPENTER.replace('.yaml', '-%s.yaml' % size)


def karpenter_by_size(name, summary, hosts):
    """Issue 45 item 5: in a class whose nodes are of several sizes (a Karpenter NodePool of several instance types),
    one Karpenter patch per size, each the largest recommendation and the maxPods (class_max_pods) of that size's
    nodes alone: Karpenter takes a static kubeReserved per EC2NodeClass, so sizes that need different figures need a
    NodePool and an EC2NodeClass each. [] for a class of one size.

    Each size's figures are its nodes' own recommendations: a class history from Prometheus (``class_template``) is
    the largest of every size of the class, so it is left out here (the class's own file carries it)."""
    rendered = []
    for size, size_hosts in sorted((summary.get('sizes') or {}).items()):
        own_hosts = {}
        for host in size_hosts:
            entry = hosts[host] or {}
            facts = dict(entry.get('facts') or {}, class_template=None)
            # The size class as the name: class_name adds the control-plane prefix the size already carries.
            own_hosts[host] = dict(entry, facts=facts, node_class=size[len(CONTROL_PLANE_PREFIX):]
                                   if size.startswith(CONTROL_PLANE_PREFIX) else size)
        found = list(class_recommendations(own_hosts).values())
        if len(found) != 1:
            continue
        own = found[0]
        header = ['# nodealloc.kubelet node template for the %s nodes of class %s (%d nodes: %s).'
                  % (size, name, len(own['hosts']), ', '.join(own['hosts'])),
                  '# For a NodePool of class %s split by size: one NodePool per size (requirements on '
                  'karpenter.k8s.aws/instance-cpu and karpenter.k8s.aws/instance-memory selecting this size), each '
                  'with an EC2NodeClass of its own, patched with its file.' % name]
        if summary.get('class_history') and not summary['class_history'].get('reason'):
            header.append('# History: each node\'s own; the class history from Prometheus mixes every size of the '
                          'class (the class\'s own file rests on it).')
        header += model_header(hosts, own['hosts'])
        header += max_pods_header(KARPENTER, own)
        header += ['# Each value is the largest its nodes recommended; from: %s.'
                   % ', '.join('%s %s' % (key, host) for key, host in sorted(own['from'].items())),
                   '# Use: %s.' % HOW_TO_USE[KARPENTER]]
        left_out = left_out_signals(KARPENTER, own)
        if left_out:
            header.append('# Not expressible here (the tool\'s default applies): evictionHard %s.' % ', '.join(left_out))
        body = yaml_text(documents(name, own)[KARPENTER])
        rendered.append({'path': '%s/%s' % (name, karpenter_per_size_name(size)), 'class': name, 'form': KARPENTER,
                         'size': size, 'content': '\n'.join(comment_line(line) for line in header) + '\n' + body})
    return rendered
