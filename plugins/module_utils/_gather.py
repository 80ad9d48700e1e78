# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Gather what a node spends outside its pods: measure, record, recommend, kept apart."""

from __future__ import annotations

import copy
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _defaults, _duration, _vendor_formulas, _version_rules)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _facts_measure, _memory_protection
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _class_model, _cpu_enforcement, _decision, _ephemeral_storage, _headroom, _node_plan, _pids, _recommend, _requests_fit)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _history_stats, _prometheus_history
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

_DEFAULT = {name: option['default'] for name, option in _option_specs.OPTIONS.items()}


def with_defaults(options):
    """The module's parameters with every documented default filled in (_option_specs.with_defaults): done once, by
    ``gather``, the entry; the functions below take options so filled."""
    return dict(options, **_option_specs.with_defaults(options, _DEFAULT))


def reading_from(measurement, source, now):
    """The one history sample a measurement makes (_history_store.reading, what the sampler records too)."""
    return _history_store.reading(measurement['memory'], measurement['cpu']['non_pod_millicores'], source, now,
                                  pods=measurement.get('pods'),
                                  non_pod_pids=(measurement.get('pids') or {}).get('non_pod_tasks'))


def record(options, reading):
    """Append ``reading`` to the history when recording is on and this is not check mode.

    Returns (recorded, problems). Recording is opt-in (option ``record``, else where no sampler records:
    _node_plan.records): the module changes the node only when asked to, and says so with ``changed``.
    """
    if not _node_plan.records(options) or options.get('_check_mode') or not options['history']:
        return False, []
    path = options['history_path']
    try:
        cut = _history_store.append(path, reading)
    except (OSError, NodeallocError) as exc:
        return False, ['%s: this reading (t=%s, non-pod memory %d bytes, non-pod CPU %s millicores) was not recorded: %s'
                       % (path, reading['t'], reading['non_pod_bytes'], reading['non_pod_millicores'], exc)]
    if cut:
        return True, ['%s: cut a torn last line (%d bytes, a writer killed mid-append) before appending' % (path, cut)]
    return True, []


def read_history(options, measurement, now):
    """Valid samples of the window (each checked against this node's capacity) and the problems found."""
    result = {'enabled': bool(options['history']), 'path': None, 'recorded': False, 'problems': [],
              'samples': 1, 'span_seconds': 0}
    samples = []
    if result['enabled']:
        path = options['history_path']
        window = _duration.parse_window(options['history_window'])
        result['path'] = path
        samples, result['problems'] = _history_store.read(
            path, now, window, mem_total_bytes=measurement['memory']['mem_total_bytes'],
            capacity_millicores=measurement['cpu']['capacity_millicores'])
    result['rejected'] = sum(1 for p in result['problems'] if ' skipped: ' in p)
    return result, samples


# Where a history came from, in the basis, the facts' history and the report: the node's own history file (the
# sampler's, or the module's record), Prometheus (read on the controller), or none (this run's one reading).
HISTORY_SOURCES = ('node', 'prometheus', 'none')


def history_source(samples, source='node'):
    """``source`` when it gave any sample besides this run's reading, else 'none' (a cold start with no history)."""
    return source if samples else 'none'


def choose_history(options, history, samples, reading, mem_total_bytes):
    """The samples the recommendation rests on: the node's own (``samples``) or Prometheus' (option
    ``prometheus_history``, read on the controller), whichever spans longer (_prometheus_history.choose).

    Records in ``history`` which one (``source``) and, when Prometheus was asked, what it gave and why it was not
    used (``history['prometheus']``); returns the chosen samples.
    """
    prometheus = options.get('prometheus_history')
    if prometheus:
        prometheus = _prometheus_history.not_above(prometheus, mem_total_bytes)
    own_cpu = [s['non_pod_millicores'] for s in samples + [reading]]
    chosen, history['source'] = _prometheus_history.choose(
        samples, prometheus, _history_stats.percentile(own_cpu, float(options['percentile'])))
    if history['source'] == 'prometheus':
        # Its samples carry one CPU figure each (the node's percentile): whether a CPU need is sustained is judged on
        # the node's own readings (_cpu_sustained), which history_basis puts in the basis.
        history['cpu_sustained'] = _headroom.cpu_sustained(samples + [reading], reading['t'],
                                                           _duration.parse_window(options['reaction_time']))
    if prometheus:
        history['prometheus'] = {key: prometheus.get(key) for key in (
            'url', 'node', 'query', 'step_seconds', 'span_seconds', 'reason', 'problems')}
        history['prometheus'].update(samples=len(prometheus.get('samples') or ()),
                                     used=history['source'] == 'prometheus')
        where = 'Prometheus %s, node %s' % (prometheus.get('url'), prometheus.get('node'))
        history['problems'].extend('%s: %s' % (where, p) for p in prometheus.get('problems') or ())
        if prometheus.get('reason'):
            history['problems'].append('%s: its history is not used: %s' % (where, prometheus['reason']))
    return chosen


def history_basis(options, history, samples, reading, now, source='node'):
    """Summarise the window with this reading in it: percentile, stabilization, a chart series.

    ``samples`` came from ``source`` (HISTORY_SOURCES); the basis and the history say so (``history_source``,
    ``history_since``: the oldest sample's time, from which the span grows while the source keeps recording).
    """
    origin = history_source(samples, source)
    samples = sorted(samples + [reading], key=lambda s: s['t'])
    percent = float(options['percentile'])
    stabilization = _duration.parse_window(options['stabilization_window'])
    reaction = _duration.parse_window(options['reaction_time'])
    window = _duration.parse_window(options['history_window'])
    basis = _headroom.basis(samples, now, percent, stabilization, reaction, window)
    basis.update(history_source=origin, history_since=samples[0]['t'] if origin != 'none' else None)
    if history.get('cpu_sustained'):
        basis['cpu_sustained'] = history.pop('cpu_sustained')
    basis['history_span_seconds'] = basis['span_seconds']
    if history.get('prometheus'):
        basis['prometheus'] = {key: history['prometheus'][key] for key in ('url', 'node', 'reason', 'used')}
    history.update(samples=basis['samples'], span_seconds=basis['span_seconds'], basis=basis,
                   source=origin, since=basis['history_since'], series=_downsample(samples, 120))
    return history


def pool_with_class(options, node_class, history, max_pods):
    """Raise the basis's climbs to its class's largest and add the class prior, from ``class_peers``; and the class
    model (_class_model.fit over this node's pods profile and its peers', at ``max_pods``: the node's alone without
    peers). ``node_class``: this node's class (_headroom.class_key: its inventory name, else its size).

    Returns the peers of this node's class that were used ([] without ``class_peers``: the node alone).
    """
    peers = _headroom.same_class(node_class, options['class_peers'])
    basis = history['basis']
    if peers:
        basis['jumps'] = _headroom.pool_jumps(basis['jumps'], [peer['jumps'] for peer in peers])
        basis['class_prior'] = _headroom.class_prior(peers)
    profiles, problems = _headroom.class_profiles({'pods_profile': basis.get('pods_profile')}, peers)
    history['problems'].extend(problems)
    if basis.get('pods_profile') and profiles:
        basis['class_model'] = {'model': _class_model.fit(profiles, max_pods), 'max_pods': max_pods}
    return peers


def node_max_pods(options, current):
    """The node's maxPods: the option, else its kubelet's (config file, drop-ins or --max-pods), else the kubelet's
    default (110)."""
    return options['max_pods'] or (current or {}).get('max_pods') or _defaults.MAX_PODS


def node_max_pods_source(options, current):
    """Where ``node_max_pods`` took it: 'option', 'kubelet' or 'default' (none given: 110 assumed). A template sets
    maxPods only from a given one (_report/_node_templates.class_max_pods): an assumed 110 on a node whose kubelet
    runs with another count (a flag this module did not see) would raise its pods past its network's addresses."""
    if options['max_pods']:
        return 'option'
    return 'kubelet' if (current or {}).get('max_pods') else 'default'


# What a node template takes from the recommendation the class's history gives (_report/_node_templates).
CLASS_TEMPLATE_FIELDS = ('kube_reserved', 'system_reserved', 'reserved_memory_bytes', 'reserved_millicores',
                         'cold_start', 'explanation')


def class_template(options, measurement, history, reading, now):
    """The recommendation for this node's class template from the class's history (option ``class_history``, read
    on the controller by _policy/_prometheus_class: every node of the class Prometheus saw in the window, gone ones
    included), or None when none was given.

    The same path as the node's own history (``history_basis``, ``recommend``) with this node's measurement, this
    run's reading and its own CPU figure (Prometheus gives memory): one recommendation, two sources. The node's own
    decision is not changed; only the class's templates rest on it. A value above this node's MemTotal refuses the
    class's history here (_prometheus_history.not_above, as for the node's own series; issue 44: a server's 1e30 raised
    the template to its cap): no recommendation for this node can rest on more memory than it has. In a class that
    mixes sizes, the template still takes the largest of its nodes' (_node_templates), each sized on its own MemTotal.
    Returns {class, label, members, nodes, span_seconds, covered_seconds, window_seconds, reason, problems, used,
    recommendation: CLASS_TEMPLATE_FIELDS of it, or None when the class's history cannot be used}.
    """
    given = options.get('class_history')
    if not given:
        return None
    given = _prometheus_history.not_above(given, measurement['memory']['mem_total_bytes'])
    out = {key: given.get(key) for key in ('class', 'label', 'members', 'nodes', 'span_seconds', 'covered_seconds',
                                           'window_seconds', 'reason', 'url')}
    out.update(problems=list(given.get('problems') or ()), used=False, recommendation=None)
    if is_control_plane(measurement) and not out['reason']:
        # Prometheus groups by a label or a size that workers share: a control-plane node's own class has no such
        # history, and its template rests on its nodes' own (_node_templates).
        out['reason'] = ('a control-plane node: the class history Prometheus gave is of class %s, which holds workers; '
                         'not used for the control-plane class' % given.get('class'))
    if out['reason'] or not given.get('samples'):
        out['reason'] = out['reason'] or 'no sample in the class history'
        return out
    cpu = history['basis']['non_pod_millicores']
    samples = [{'t': t, 'non_pod_bytes': int(value), 'non_pod_millicores': cpu} for t, value in given['samples']]
    from_class = {'problems': []}
    history_basis(options, from_class, samples, reading, now, 'prometheus')
    recommendation = recommend(options, measurement, from_class)[1]
    out.update(used=True, recommendation={key: recommendation[key] for key in CLASS_TEMPLATE_FIELDS},
               non_pod_bytes=from_class['basis']['non_pod_bytes'])
    return out


def _downsample(samples, points):
    """At most ``points`` [t, non_pod_bytes] pairs for a chart, keeping each bucket's peak."""
    if len(samples) <= points:
        return [[s['t'], s['non_pod_bytes']] for s in samples]
    size = len(samples) / float(points)
    series = []
    for index in range(points):
        bucket = samples[int(index * size):int((index + 1) * size)] or [samples[-1]]
        peak = max(bucket, key=lambda s: s['non_pod_bytes'])
        series.append([peak['t'], peak['non_pod_bytes']])
    return series


def measure(options, proc_root='/proc', sleep=time.sleep):
    """Raw readings of the node: memory, CPU, cgroups, the kubelet and its settings; nothing derived
    (_facts_measure.measure)."""
    return _facts_measure.measure(options, proc_root, sleep)


def recommend(options, measurement, history):
    """The policy: vendor formulas, the recommendation from the history's basis, and the decision."""
    memory, cpu, current = measurement['memory'], measurement['cpu'], measurement['current']
    measured = {
        'mem_total_bytes': memory['mem_total_bytes'],
        'mem_available_bytes': memory['mem_available_bytes'],
        'kubepods_working_set_bytes': memory['kubepods_working_set_bytes'],
        'kube_components_working_set_bytes': memory['kube_components_working_set_bytes'],
        # An older basis has no list: taken as found, as before.
        'components_found': bool(measurement.get('components', True)),
        'capacity_millicores': cpu['capacity_millicores'],
        'hugepages_bytes': measurement['hugepages_bytes'],
        'non_pod_millicores': cpu['non_pod_millicores'],
        'kube_components_millicores': cpu['kube_components_millicores'],
        'session_millicores': cpu.get('session_millicores', 0),
        'session_cgroups': cpu.get('session_cgroups', []),
        'non_pod_memory': memory['non_pod_accounting'],
        'cpu_weights': measurement['cpu_weights'],
        # A basis from before control-plane detection has none: taken as not a control-plane node.
        'control_plane': measurement.get('control_plane'),
    }
    max_pods = node_max_pods(options, current)
    formulas = _vendor_formulas.all_formulas(memory['mem_total_bytes'], cpu['capacity_millicores'] // 1000, max_pods,
                                             options['openshift_sizing_version'])
    recommendation = _recommend.recommend(measured, options, current, history['basis'], formulas)
    # Beside memory and CPU, written only with reserve_ephemeral_storage (_policy/_ephemeral_storage says why).
    eviction_hard = (current or {}).get('eviction_hard')
    ephemeral = _ephemeral_storage.recommend(measurement.get('ephemeral_storage'), current,
                                             _defaults.EVICTION_HARD if eviction_hard is None else eviction_hard,
                                             options['reserve_ephemeral_storage'])
    recommendation['ephemeral_storage'] = ephemeral
    recommendation['explanation'].extend(ephemeral['explanation'])
    if options['reserve_ephemeral_storage'] and ephemeral['recommended_bytes'] is not None:
        _ephemeral_storage.carry_into(recommendation, ephemeral)
    # PIDs likewise, written only with reserve_pids (_policy/_pids says why).
    pids = _pids.recommend(measurement.get('pids'), history.get('pids'), current,
                           _defaults.EVICTION_HARD if eviction_hard is None else eviction_hard,
                           measurement.get('kubelet_config'), max_pods, options['reserve_pids'])
    recommendation['pids'] = pids
    recommendation['explanation'].extend(pids['explanation'])
    if options['reserve_pids'] and pids['recommended'] is not None:
        _pids.carry_into(recommendation, pids)
    decision = _decision.decide(current, recommendation, options, history['basis'])
    return formulas, recommendation, decision


def protection_and_enforcement(measurement, recommendation):
    """memory.min's cost to pods with the recommendation (its lines join the explanation), and the
    ``enforceNodeAllocatable`` *-compressible proposal with its validation (``enforcement_proposal.validation``:
    {'refusal': str or None, ...}; None when nothing was proposed)."""
    config = measurement.get('kubelet_config') or {}
    version = _version_rules.parse((measurement['kubelet'].get('version') or {}).get('git_version'))
    reserved = {'kube_reserved': recommendation['kube_reserved'], 'system_reserved': recommendation['system_reserved']}
    protection = _memory_protection.assess(measurement['memory_protection'], config, reserved,
                                           measurement['cgroup']['version'], version,
                                           measurement['memory']['mem_total_bytes'])
    recommendation['explanation'].extend(protection['explanation'])
    return protection, _cpu_enforcement.assess(measurement, config, reserved, version)


def is_control_plane(measurement):
    """Whether the measurement found the node's static pods running the API server or etcd (_node/_control_plane)."""
    return bool((measurement.get('control_plane') or {}).get('detected'))


def _copied(value):
    """A deep copy of the history: dicts and lists copied level by level, anything else by copy.deepcopy (whose
    generic walk cost a sixth of a run when the measurement's pod list was copied too)."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)


def gather(options, proc_root='/proc', sleep=time.sleep):
    """Measure the node, record the reading (when asked), recommend, plan. ``options`` are the module's parameters.

    Three steps kept apart: ``measure`` reads the node, ``record`` appends to the history (only with
    ``record`` true and outside check mode), ``recommend`` applies the policy to the history read back.
    With ``basis`` (what an earlier call returned as ``basis``) nothing is measured, read or recorded: the class
    decision re-decides from the same measurement and history with ``class_peers``.
    """
    options = with_defaults(options)
    if options['basis']:
        measurement = copy.deepcopy(options['basis']['measurement'])
        history = copy.deepcopy(options['basis']['history'])
        template = copy.deepcopy(options['basis'].get('class_template'))
    else:
        measurement = measure(options, proc_root, sleep)
        now = time.time()
        reading = reading_from(measurement, 'module', now)
        history, samples = read_history(options, measurement, now)
        history['recorded'], problems = record(options, reading)
        history['problems'].extend(problems)
        # Asked to record and could not: the module turns this into an Ansible warning, so a run that meant to build
        # the history does not pass as ok with the reading silently lost.
        history['not_recorded'] = problems[0] if problems and not history['recorded'] else None
        # The node's own lines that carry its tasks outside the pods (whichever history memory rests on): _policy/_pids.
        history['pids'] = _pids.history_peak(samples)
        samples = choose_history(options, history, samples, reading, measurement['memory']['mem_total_bytes'])
        history_basis(options, history, samples, reading, now, history['source'])
        template = class_template(options, measurement, history, reading, now)
    # Before pooling, which changes the basis's jumps: a second call pools this node's own basis again. The history is
    # copied for that; the measurement and the template are not changed after this point (test__gather says so for
    # every path it takes): the basis holds them as they are, and goes to the controller as JSON.
    basis = {'measurement': measurement, 'history': _copied(history), 'class_template': template}
    mem_total, cpus = measurement['memory']['mem_total_bytes'], measurement['cpu']['capacity_millicores'] // 1000
    own_jumps = history['basis']['jumps']  # pooling replaces the basis's jumps; the class hears the node's own
    control_plane = is_control_plane(measurement)
    own_class = _headroom.class_key({'class_name': options['node_class'], 'control_plane': control_plane,
                                     'node_class': _headroom.node_class(mem_total, cpus)})
    max_pods = node_max_pods(options, measurement['current'])
    pooled_with = pool_with_class(options, own_class, history, max_pods)
    formulas, recommendation, decision = recommend(options, measurement, history)
    result = {k: v for k, v in measurement.items() if k not in ('hugepages_bytes', 'cpu_weights', 'kubelet_config')}
    result['memory_protection'], result['enforcement_proposal'] = protection_and_enforcement(measurement, recommendation)
    result.update(recommendation=recommendation, decision=decision, formulas=formulas,
                  history={k: v for k, v in history.items() if k != 'basis'},
                  class_record=_headroom.class_record(mem_total, cpus, own_jumps, recommendation,
                                                      options['node_class'], control_plane,
                                                      history['basis'].get('pods_profile'), max_pods,
                                                      node_max_pods_source(options, measurement['current'])),
                  class_peers_used=len(pooled_with), basis=basis, class_template=template)
    # Issue 30 item 4: the pods bound to the node (read from the API server by the role) against the new allocatable.
    result['requests_fit'] = _requests_fit.for_change(options['pod_requests'], measurement, decision)
    result['plan'] = _node_plan.plan(result, options)
    return result
