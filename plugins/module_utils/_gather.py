# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Gather what a node spends outside its pods: measure, record, recommend, kept apart."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _config_file, _duration, _quantity, _vendor_formulas)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _cpu_guarantee, _kubelet_process, _measure, _overcommit, _procfs)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _headroom, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_edit, _config_rules, _defaults, _version_rules
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_ownership, _probe, _swap
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _node_plan, _requests_fit
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _memory_protection
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_enforcement
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError, NodeallocError

_DEFAULT = {name: option['default'] for name, option in _option_specs.OPTIONS.items()}


def _with_defaults(options):
    """The module's parameters with every documented default filled in once (_option_specs.with_defaults); the
    functions below are also called on their own (tests, benchmarks), so each entry point applies it."""
    return dict(options, **_option_specs.with_defaults(options, _DEFAULT))


VERSION_TIMEOUT_SECONDS = 30  # a kubelet under emulation (the VM tests) takes seconds just to start


def run_version_command(command):
    """What ``command`` (``[kubelet, '--version']``) prints, or raises OSError/ValueError."""
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                              timeout=VERSION_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise ValueError('no answer within %d s' % VERSION_TIMEOUT_SECONDS)
    if done.returncode != 0:
        raise ValueError('exit status %d' % done.returncode)
    return done.stdout.decode('utf-8', 'replace')


def kubelet_version(kubelet, config, cgroup_version, not_found, proc_root='/proc'):
    """The kubelet binary's version, and what it refuses with this config on this node (_version_rules)."""
    command = _kubelet_process.version_command(kubelet['argv'], kubelet['pid'], proc_root, shutil.which)
    result = {'command': command, 'text': None, 'version': None, 'git_version': None}
    parsed = None
    if command is None:
        not_found.append('no kubelet binary to ask its version (no running kubelet, no kubelet on the PATH)')
    else:
        try:
            result['text'] = run_version_command(command).strip()
            parsed = _version_rules.parse(result['text'])
        except (OSError, ValueError) as exc:
            not_found.append('%s failed: %s' % (' '.join(command), exc))
        if result['text'] is not None and parsed is None:
            not_found.append('%s named no version: %r' % (' '.join(command), result['text'][:200]))
    if parsed:
        result.update(version=parsed['version'], git_version=parsed['git_version'])
    environment = _kubelet_process.environment_names(kubelet['pid'], proc_root) if kubelet['pid'] else None
    config_dir_in_use = bool(kubelet['argv'] and _kubelet_process.config_paths(kubelet['argv'])[1])
    verdict = _version_rules.check(parsed, cgroup_version, config, config_dir_in_use,
                                     dict.fromkeys(environment or ()))
    result.update(features=_version_rules.features(parsed),
                  fail_cgroup_v1=_version_rules.fail_cgroup_v1(parsed, config),
                  refusals=verdict['refusals'], warnings=verdict['warnings'])
    return result


def _kubelet_settings(options, proc_root, not_found, found):
    """Locate the kubelet and read its effective settings; returns (kubelet dict, current or None, config)."""
    kubelet_names = options.get('kubelet_process_names') or _kubelet_process.DEFAULT_KUBELET_NAMES
    processes = [p for p in found if _kubelet_process.program_name(p.argv) in kubelet_names]
    kubelet = {'pid': None, 'argv': None, 'config_path': None, 'config_dir': None, 'config_found_by': None,
               'unit': None}
    flag_fields = {}
    if processes:
        process = processes[0]
        kubelet['pid'] = process.pid
        kubelet['argv'] = process.argv
        kubelet['config_path'], kubelet['config_dir'] = _kubelet_process.config_paths(process.argv)
        kubelet['config_found_by'] = 'running kubelet command line' if kubelet['config_path'] else None
        kubelet['unit'] = _kubelet_process.systemd_unit(_procfs.read_process_cgroups(process.pid, proc_root))
        flag_fields = _kubelet_process.config_from_flags(process.argv)
    else:
        not_found.append('no running kubelet process (looked for %s in %s/*/cmdline)'
                         % (', '.join(options.get('kubelet_process_names')
                                      or _kubelet_process.DEFAULT_KUBELET_NAMES), proc_root))
    if not kubelet['config_path']:
        candidate = options['kubelet_config_path']
        if os.path.exists(candidate):
            kubelet['config_path'] = candidate
            kubelet['config_found_by'] = 'kubelet_config_path option'
        else:
            not_found.append('no kubelet config file at %s' % candidate)
    if not kubelet['config_dir'] and options.get('kubelet_config_dir'):
        kubelet['config_dir'] = options['kubelet_config_dir']

    if not kubelet['config_path'] and not kubelet['config_dir'] and not flag_fields:
        return kubelet, None, {}
    config, sources = _config_file.load_effective_config(kubelet['config_path'], kubelet['config_dir'])
    config.update(flag_fields)
    if flag_fields:
        sources.append('kubelet command line flags: %s' % ', '.join(sorted(flag_fields)))
    # The policy and the plan compute with the reservations in force: ones the kubelet would refuse stop here, named,
    # rather than as an AttributeError in the arithmetic (issue 35: kubeReserved: '5').
    for field in ('kubeReserved', 'systemReserved'):
        try:
            _config_rules.check_reserved(config, field)
        except ValueError as exc:
            raise ConfigError(', '.join(sources), 'the kubelet would refuse this configuration: %s' % exc)
    eviction_hard = config.get('evictionHard')
    current = {
        'kube_reserved': config.get('kubeReserved') or {},
        'system_reserved': config.get('systemReserved') or {},
        'eviction_hard': eviction_hard if eviction_hard is not None else dict(_defaults.EVICTION_HARD),
        'eviction_hard_source': 'config' if eviction_hard is not None else 'default',
        'eviction_soft': config.get('evictionSoft') or {},
        'eviction_soft_grace_period': config.get('evictionSoftGracePeriod') or {},
        'eviction_minimum_reclaim': config.get('evictionMinimumReclaim') or {},
        # Absent is ["pods"]; an explicit [] is no enforcement (v1beta1 SetDefaults_KubeletConfiguration).
        'enforce_node_allocatable': _defaults.effective_enforce_node_allocatable(
            config.get('enforceNodeAllocatable')),
        'kube_reserved_cgroup': config.get('kubeReservedCgroup') or '',
        'system_reserved_cgroup': config.get('systemReservedCgroup') or '',
        'cgroup_driver': config.get('cgroupDriver'),
        'eviction_pressure_transition_period': config.get('evictionPressureTransitionPeriod'),
        'max_pods': config.get('maxPods'),
        'sources': sources,
    }
    return kubelet, current, config


def reservation_files(kubelet, options):
    """The main config and our drop-in wherever the plan may write it: {path: {exists, format, fields}}.

    What _node_plan needs for the exact diff the on-node step would write, read here so that the plan stays pure.
    A file that cannot be read or parsed is left out (the step itself refuses it, naming the file).
    """
    options = _with_defaults(options)
    directories = (kubelet.get('config_dir'), kubelet['ownership'].get('config_dir'), options.get('drop_in_dir'),
                   options['config_dir_path'])
    paths = [kubelet.get('config_path')] + [_node_plan.path_of_drop_in({'drop_in_dir': d}) for d in directories if d]
    found = {}
    for path in paths:
        if not path or path in found:
            continue
        if not os.path.exists(path):
            found[path] = {'exists': False, 'format': None, 'fields': {}}
            continue
        try:
            data, fmt, _text = _config_file.load_config(path)
        except (OSError, NodeallocError):
            continue
        kept = ('apiVersion', 'kind') + _config_edit.MANAGED_KEYS  # what the step keeps of our drop-in
        found[path] = {'exists': True, 'format': fmt, 'fields': {k: data[k] for k in kept if k in data}}
    return found


def reading_from(measurement, source, now):
    """The one history sample a measurement makes (_history_store.reading, what the sampler records too)."""
    return _history_store.reading(measurement['memory'], measurement['cpu']['non_pod_millicores'], source, now)


def record(options, reading):
    """Append ``reading`` to the history when recording is on and this is not check mode.

    Returns (recorded, problems). Recording is opt-in (option ``record``): the module changes the
    node only when asked to, and says so with ``changed``.
    """
    options = _with_defaults(options)
    if not options.get('record') or options.get('_check_mode') or not options.get('history', True):
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
    options = _with_defaults(options)
    result = {'enabled': bool(options.get('history', True)), 'path': None, 'recorded': False, 'problems': [],
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


def history_basis(options, history, samples, reading, now):
    """Summarise the window with this reading in it: percentile, stabilization, a chart series."""
    options = _with_defaults(options)
    samples = sorted(samples + [reading], key=lambda s: s['t'])
    percent = float(options['percentile'])
    stabilization = _duration.parse_window(options['stabilization_window'])
    reaction = _duration.parse_window(options['reaction_time'])
    window = _duration.parse_window(options['history_window'])
    basis = _headroom.basis(samples, now, percent, stabilization, reaction, window)
    history.update(samples=basis['samples'], span_seconds=basis['span_seconds'], basis=basis,
                   series=_downsample(samples, 120))
    return history


def pool_with_class(options, node_class, history):
    """Raise the basis's climbs to its class's largest and add the class prior, from ``class_peers``.

    Returns the peers of this node's class that were used ([] without ``class_peers``: the node alone).
    """
    peers = _headroom.same_class(node_class, options.get('class_peers'))
    if peers:
        basis = history['basis']
        basis['jumps'] = _headroom.pool_jumps(basis['jumps'], [peer['jumps'] for peer in peers])
        basis['class_prior'] = _headroom.class_prior(peers)
    return peers


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
    """Raw readings of the node: memory, CPU, cgroups, the kubelet and its settings; nothing derived."""
    options = _with_defaults(options)
    not_found = []

    # One pass over /proc finds the kubelet and the container runtime: it is most of the cost of a run.
    names = tuple(options.get('kubelet_process_names') or _kubelet_process.DEFAULT_KUBELET_NAMES) \
        + tuple(options.get('runtime_process_names') or _kubelet_process.DEFAULT_RUNTIME_NAMES)
    cmdlines = _procfs.read_cmdlines(proc_root)  # one pass for the kubelet search and _tool_processes
    found = _kubelet_process.find_processes(names, proc_root, cmdlines)
    kubelet, current, config = _kubelet_settings(options, proc_root, not_found, found)
    kubelet['ownership'] = _kubelet_ownership.detect(kubelet['argv'], kubelet['unit'])
    node = _probe.read_node(options.get('cgroup_root'), options.get('kubepods_cgroup'),
                                 (current or {}).get('cgroup_driver'), proc_root)
    meminfo, capacity_millicores, layout, driver, kubepods = node[:5]
    kubelet['version'] = kubelet_version(kubelet, config, layout.version, not_found, proc_root)
    kubelet['reservation_files'] = reservation_files(kubelet, options)
    if kubepods is None:
        not_found.append('no kubepods cgroup (looked for kubepods.slice and kubepods under %s); '
                         'pods working set taken as 0' % layout.memory_root)
    components, component_cgroups, component_pids = _measure.component_targets(layout, found, proc_root, kubepods)
    if not components:
        not_found.append('no kubelet or container runtime processes (%s): kubeReserved gets no '
                         'measured share, all non-pod memory goes to systemReserved' % ', '.join(names))
    memory = _measure.memory(layout, kubepods, meminfo, component_cgroups, component_pids, proc_root, cmdlines=cmdlines)
    cpu = _measure.sample_cpu(layout, kubepods, component_cgroups, component_pids, capacity_millicores,
                              options.get('sample_seconds', _DEFAULT['sample_seconds']), proc_root, sleep)
    cpu['capacity_millicores'] = capacity_millicores
    return {
        'capacity': {'memory': _quantity.format_memory(meminfo['MemTotal']),
                     'cpu': _quantity.format_cpu(capacity_millicores)},
        'memory': memory,
        'cpu': cpu,
        'cgroup': {
            'version': layout.version,
            'mode': layout.mode,
            'driver': driver,
            'kubepods': ('/' + kubepods) if kubepods else None,
            # The file the kubelet writes kubepods' memory limit to: where the rollout reads it back.
            'kubepods_limit_file': _cgroup.memory_limit_path(layout, kubepods) if kubepods else None,
            'memory_root': layout.memory_root,
            'cpu_root': layout.cpu_root,
            'end_of_life': _version_rules.END_OF_LIFE if layout.version == 'v1' else None,
        },
        'overcommit': _overcommit.audit(layout, kubepods) if kubepods else None,
        'kubelet': kubelet,
        'components': components,
        'current': current,
        'hugepages_bytes': _procfs.read_hugepages_bytes(),
        # Evidence of starvation (PSI) of the non-pod groups, and system.slice's CPU weight for the guarantee.
        'pressure': _cpu_guarantee.pressure(layout, ['system.slice'] + component_cgroups, proc_root),
        'cpu_weights': {'version': layout.version,
                        'system_slice_weight': _cpu_guarantee.read_weight(layout, 'system.slice')[0]},
        # May the daemons swap, what the kubelet says about swap, the drop-in that stops it (_swap).
        'swap_control': _swap.control(layout, memory['swap']['groups'], _swap.read_swaps(proc_root), config),
        # memory.min/memory.low of kubepods and of the reserved groups the config names (_memory_protection).
        'memory_protection': _memory_protection.read(layout, kubepods, config, driver),
        'kubelet_config': config,  # the effective config, for the protection's cost and the enforcement proposal
        'not_found': not_found,
    }


def recommend(options, measurement, history):
    """The policy: vendor formulas, the recommendation from the history's basis, and the decision."""
    options = _with_defaults(options)
    memory, cpu, current = measurement['memory'], measurement['cpu'], measurement['current']
    measured = {
        'mem_total_bytes': memory['mem_total_bytes'],
        'mem_available_bytes': memory['mem_available_bytes'],
        'kubepods_working_set_bytes': memory['kubepods_working_set_bytes'],
        'kube_components_working_set_bytes': memory['kube_components_working_set_bytes'],
        'capacity_millicores': cpu['capacity_millicores'],
        'hugepages_bytes': measurement['hugepages_bytes'],
        'non_pod_millicores': cpu['non_pod_millicores'],
        'kube_components_millicores': cpu['kube_components_millicores'],
        'session_millicores': cpu.get('session_millicores', 0),
        'session_cgroups': cpu.get('session_cgroups', []),
        'non_pod_memory': memory['non_pod_accounting'],
        'cpu_weights': measurement['cpu_weights'],
    }
    max_pods = options.get('max_pods') or (current or {}).get('max_pods') or _defaults.MAX_PODS
    formulas = _vendor_formulas.all_formulas(memory['mem_total_bytes'], cpu['capacity_millicores'] // 1000, max_pods,
                                      options['openshift_sizing_version'])
    recommendation = _recommend.recommend(measured, options, current, history['basis'], formulas)
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


def gather(options, proc_root='/proc', sleep=time.sleep):
    """Measure the node, record the reading (when asked), recommend, plan. ``options`` are the module's parameters.

    Three steps kept apart: ``measure`` reads the node, ``record`` appends to the history (only with
    ``record`` true and outside check mode), ``recommend`` applies the policy to the history read back.
    With ``basis`` (what an earlier call returned as ``basis``) nothing is measured, read or recorded: the class
    decision re-decides from the same measurement and history with ``class_peers``.
    """
    options = _with_defaults(options)
    if options.get('basis'):
        measurement = copy.deepcopy(options['basis']['measurement'])
        history = copy.deepcopy(options['basis']['history'])
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
        history_basis(options, history, samples, reading, now)
    # Before pooling, which changes the basis's jumps: a second call pools this node's own basis again.
    basis = {'measurement': copy.deepcopy(measurement), 'history': copy.deepcopy(history)}
    mem_total, cpus = measurement['memory']['mem_total_bytes'], measurement['cpu']['capacity_millicores'] // 1000
    own_jumps = history['basis']['jumps']  # pooling replaces the basis's jumps; the class hears the node's own
    pooled_with = pool_with_class(options, _headroom.node_class(mem_total, cpus), history)
    formulas, recommendation, decision = recommend(options, measurement, history)
    result = {k: v for k, v in measurement.items() if k not in ('hugepages_bytes', 'cpu_weights', 'kubelet_config')}
    result['memory_protection'], result['enforcement_proposal'] = protection_and_enforcement(measurement, recommendation)
    result.update(recommendation=recommendation, decision=decision, formulas=formulas,
                  history={k: v for k, v in history.items() if k != 'basis'},
                  class_record=_headroom.class_record(mem_total, cpus, own_jumps, recommendation),
                  class_peers_used=len(pooled_with), basis=basis)
    # Issue 30 item 4: the pods bound to the node (read from the API server by the role) against the new allocatable.
    result['requests_fit'] = _requests_fit.for_change(options.get('pod_requests'), measurement, decision)
    result['plan'] = _node_plan.plan(result, options)
    return result
