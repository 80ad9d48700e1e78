# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A class template's reservation from the class model (issue 45 item 5): what a node launched from it may need.

A template (a Karpenter NodePool, a nodeadm config, a MachineDeployment's template, a drop-in) sizes every node it
launches before that node has a reading: at its maxPods (the pods the template lets the kubelet admit), the class's
envelope (_class_model: a line above every reading the class made) plus the headroom a cold node takes when its class
lends it jumps (_headroom.jump_headroom, the class's largest burst standing for the jumps); CPU at the class's typical
line at maxPods plus the CPU headroom (CPU is compressible: a short shortfall throttles, it does not OOM).
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _class_model, _headroom

MIB = 1 << 20
DEFAULTS = _option_specs.defaults(('memory_headroom_percent', 'memory_headroom_min_bytes', 'memory_headroom_max_bytes',
                                   'cpu_headroom_percent', 'cpu_headroom_min_millicores'))


def reservation(model, max_pods, settings=None):
    """{'memory_bytes', 'millicores', 'max_pods', 'explanation'} for a template of ``model``'s class at ``max_pods``,
    or None without a model that has enough data (_class_model.fit's ``enough``)."""
    if not model or not model.get('enough'):
        return None
    options = _option_specs.with_defaults(settings, DEFAULTS)
    memory, cpu = model['memory'], model['cpu']
    peak = _class_model.at(memory['envelope'], memory['slope'], max_pods)
    jumps = {'warm': False, 'lent_jumps': True, 'memory_jump_bytes': memory['burst'], 'jump_days': 0}
    headroom, rule = _headroom.jump_headroom(peak, jumps, options['memory_headroom_percent'],
                                             options['memory_headroom_min_bytes'], options['memory_headroom_max_bytes'])
    memory_bytes = -(-(peak + headroom) // MIB) * MIB
    cpu_peak = _class_model.at(cpu['intercept'], cpu['slope'], max_pods)
    cpu_headroom, cpu_rule = _headroom.headroom(cpu_peak, options['cpu_headroom_percent'],
                                                options['cpu_headroom_min_millicores'])
    return {'memory_bytes': int(memory_bytes), 'millicores': int(cpu_peak + cpu_headroom), 'max_pods': int(max_pods),
            'explanation': ['memory at %d pods = envelope %d + %.0f x %d = %d; headroom %s; reserved %d'
                            % (max_pods, memory['envelope'], memory['slope'], max_pods, peak, rule, memory_bytes),
                            'CPU at %d pods = %d + %.2f x %d = %dm; headroom %s'
                            % (max_pods, cpu['intercept'], cpu['slope'], max_pods, cpu_peak, cpu_rule)]}


def summary(model):
    """The model as classes.json and a template header give it: intercept, slope per pod, envelope, nodes, days."""
    memory = model['memory']
    return {'intercept_bytes': memory['intercept'], 'slope_bytes_per_pod': int(round(memory['slope'])),
            'envelope_bytes': memory['envelope'], 'slope_source': memory['slope_source'],
            'slope_error_bytes': None if memory['slope_error'] is None else int(round(memory['slope_error'])),
            'cpu_intercept_millicores': model['cpu']['intercept'],
            'cpu_slope_millicores_per_pod': round(model['cpu']['slope'], 3),
            'nodes': model['nodes'], 'days': model['days'], 'node_days': model['node_days'],
            'pods_low': model['pods_low'], 'pods_high': model['pods_high'], 'enough': model['enough']}


# The most maxPods a record may give a class (Kubernetes documents 110 as its tested limit; EKS's prefix delegation
# goes to 250, OpenShift to 500): beyond this a record is refused, not followed.
MAX_TEMPLATE_PODS = 1024

# The EKS line the report draws beside the class's: 11 MiB a pod + 255 MiB (amazon-eks-ami, the kube-reserved memory).
EKS_BASE_BYTES = 255 * MIB


def from_records(records):
    """(model or None, max_pods, problems): the class model over the ``records`` (each a node's class_record,
    _headroom.class_record: its ``pods_profile`` and ``max_pods``) of one class, at the largest maxPods among them.
    A record whose profile is not one is left out and said (it came through the controller)."""
    profiles, max_pods, problems = _checked_records(records)
    return (_class_model.fit(profiles, max_pods) if profiles else None), max_pods, problems


def record_max_pods(record):
    """The maxPods a node's class_record gives (a whole number from 1 to MAX_TEMPLATE_PODS), or None: a record is a
    node's word, and a count outside that range is no maxPods a template may carry or be sized for."""
    count = (record or {}).get('max_pods') if isinstance(record, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and 0 < count <= MAX_TEMPLATE_PODS:
        return count
    return None


def record_given_max_pods(record):
    """``record_max_pods`` where the node's maxPods was given (its kubelet's, or the option's), else None: an assumed
    110 (the kubelet's default where nothing was read) is what the class model is sized at, never what a template sets."""
    if isinstance(record, dict) and record.get('max_pods_source') in ('option', 'kubelet'):
        return record_max_pods(record)
    return None


def _checked_records(records):
    """(the records' checked profiles, the largest usable maxPods or 110, problems): ``from_records``'s inputs."""
    profiles, problems, max_pods = [], [], 0
    for record in records or ():
        record = record or {}
        try:
            checked = _class_model.checked(record.get('pods_profile'))
        except _class_model.ModelError as exc:
            problems.append(str(exc))
            continue
        if checked:
            profiles.append(checked)
            # The kubelet refuses a maxPods past what a node can hold; one record's absurd value must not set the
            # class's figure: counted only up to MAX_TEMPLATE_PODS.
            count = record_max_pods(record)
            if count is not None:
                max_pods = max(max_pods, count)
            elif record.get('max_pods') is not None:
                problems.append('a record\'s max_pods %r is not a pod count from 1 to %d: not used'
                                % (record['max_pods'], MAX_TEMPLATE_PODS))
    return profiles, max_pods or 110, problems


def view(records, points=240):
    """What the report shows of a class's model (issue 45 item 5), or None without one: the summary, maxPods, the
    envelope's and EKS's figures at maxPods, and up to ``points`` [pods, bytes] points (each node's bucket medians
    and largest readings, evenly thinned) for the chart."""
    profiles, max_pods, problems = _checked_records(records)
    if not profiles:
        return None
    model = _class_model.fit(profiles, max_pods)
    scatter = []
    for profile in profiles:
        for bucket in profile['buckets']:
            scatter.append([bucket[2], bucket[3]])
            scatter.append([bucket[0], bucket[4]])
    memory = model['memory']
    if points <= 0:
        scatter = []
    elif len(scatter) > points:
        # The readings that set the envelope first (the highest above the slope), then the rest evenly thinned: an
        # even thinning alone drops the few points the reservation rests on.
        ranked = sorted(scatter, key=lambda point: point[1] - memory['slope'] * point[0], reverse=True)
        top, rest = ranked[:points // 6], scatter
        step = len(rest) / float(points - len(top))
        scatter = top + [rest[int(index * step)] for index in range(points - len(top))]
    return {'model': summary(model), 'max_pods': max_pods, 'problems': problems,
            'prior_reason': memory['prior_reason'],
            'at_max_pods_bytes': _class_model.at(memory['envelope'], memory['slope'], max_pods),
            'typical_at_max_pods_bytes': _class_model.at(memory['intercept'], memory['slope'], max_pods),
            'eks_at_max_pods_bytes': EKS_BASE_BYTES + _class_model.PRIOR_SLOPE_BYTES * max_pods,
            'points': scatter}


def header_line(shown):
    """The line a template's header and the report's text give of a class's model (``view``'s), or None."""
    if not shown:
        return None
    model = shown['model']
    if model['slope_source'] == 'fit':
        slope = '%.1f MiB a pod (fitted)' % (model['slope_bytes_per_pod'] / float(MIB))
    else:
        slope = "%.1f MiB a pod (EKS's prior: %s)" % (model['slope_bytes_per_pod'] / float(MIB), shown['prior_reason'])
    return ('Class model: non-pod memory = %.0f MiB + %s, over %d node(s), %.1f days (%.1f node-days), pods %d-%d; '
            'at maxPods %d: %.0f MiB above every reading (envelope), EKS: %.0f MiB.'
            % (model['intercept_bytes'] / float(MIB), slope, model['nodes'], model['days'], model['node_days'],
               model['pods_low'], model['pods_high'], shown['max_pods'], shown['at_max_pods_bytes'] / float(MIB),
               shown['eks_at_max_pods_bytes'] / float(MIB)))
