# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Gather what a node spends outside its pods: the measuring half of node_reservation_facts."""

from __future__ import annotations

import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import (
    _cgroup, _decision, _formulas, _history, _kubelet_config_file, _kubelet_process, _option_specs, _procfs,
    _quantity, _recommend)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._eviction import DEFAULT_EVICTION_HARD

DEFAULT_KUBELET_CONFIG_PATH = _option_specs.DEFAULT_KUBELET_CONFIG_PATH
_DEFAULT = {name: option['default'] for name, option in _option_specs.OPTIONS.items()}
# Groups that hold many unrelated processes: a kubelet found there is measured by its own RSS.
_SHARED_CGROUPS = ('', 'system.slice', 'user.slice', 'init.scope')


def _kubelet_settings(options, proc_root, not_found, found):
    """Locate the kubelet and read its effective settings; returns (kubelet dict, current or None)."""
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
        candidate = options.get('kubelet_config_path') or DEFAULT_KUBELET_CONFIG_PATH
        if os.path.exists(candidate):
            kubelet['config_path'] = candidate
            kubelet['config_found_by'] = 'kubelet_config_path option'
        else:
            not_found.append('no kubelet config file at %s' % candidate)
    if not kubelet['config_dir'] and options.get('kubelet_config_dir'):
        kubelet['config_dir'] = options['kubelet_config_dir']

    if not kubelet['config_path'] and not kubelet['config_dir'] and not flag_fields:
        return kubelet, None
    config, sources = _kubelet_config_file.load_effective_config(kubelet['config_path'], kubelet['config_dir'])
    config.update(flag_fields)
    if flag_fields:
        sources.append('kubelet command line flags: %s' % ', '.join(sorted(flag_fields)))
    eviction_hard = config.get('evictionHard')
    current = {
        'kube_reserved': config.get('kubeReserved') or {},
        'system_reserved': config.get('systemReserved') or {},
        'eviction_hard': eviction_hard if eviction_hard is not None else dict(DEFAULT_EVICTION_HARD),
        'eviction_hard_source': 'config' if eviction_hard is not None else 'default',
        'eviction_soft': config.get('evictionSoft') or {},
        'eviction_soft_grace_period': config.get('evictionSoftGracePeriod') or {},
        'eviction_minimum_reclaim': config.get('evictionMinimumReclaim') or {},
        # Absent is ["pods"]; an explicit [] is no enforcement (v1beta1 SetDefaults_KubeletConfiguration).
        'enforce_node_allocatable': _option_specs.effective_enforce_node_allocatable(
            config.get('enforceNodeAllocatable')),
        'kube_reserved_cgroup': config.get('kubeReservedCgroup') or '',
        'system_reserved_cgroup': config.get('systemReservedCgroup') or '',
        'cgroup_driver': config.get('cgroupDriver'),
        'eviction_pressure_transition_period': config.get('evictionPressureTransitionPeriod'),
        'max_pods': config.get('maxPods'),
        'sources': sources,
    }
    return kubelet, current


def _component_targets(layout, found, proc_root, kubepods):
    """Where to measure the kubelet and runtime: their own cgroups, or their processes."""
    cgroups, pids, seen = [], [], []
    for process in found:
        seen.append({'pid': process.pid, 'program': _kubelet_process.program_name(process.argv)})
        relative = _cgroup.process_memory_cgroup(layout, _procfs.read_process_cgroups(process.pid, proc_root))
        dedicated = (relative is not None and relative not in _SHARED_CGROUPS
                     and not (kubepods and relative.startswith(kubepods))
                     and _cgroup.cgroup_exists(layout, relative))
        if dedicated:
            if relative not in cgroups:
                cgroups.append(relative)
        else:
            pids.append(process.pid)
    return seen, cgroups, pids


def _cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root):
    busy, total = _procfs.read_cpu_times(proc_root)
    return {
        'time': time.monotonic(),
        'busy_jiffies': busy,
        'total_jiffies': total,
        'kubepods_ns': _cgroup.cpu_usage_ns(layout, kubepods) if kubepods else 0,
        'component_cgroup_ns': sum(_cgroup.cpu_usage_ns(layout, c) for c in component_cgroups),
        'component_ticks': sum(_procfs.read_process_cpu_ticks(p, proc_root) or 0 for p in component_pids),
    }


def sample_cpu(layout, kubepods, component_cgroups, component_pids, capacity_millicores,
               sample_seconds, proc_root='/proc', sleep=time.sleep):
    """CPU use over ``sample_seconds``: node busy, kubepods, kubelet+runtime, in millicores."""
    before = _cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root)
    sleep(sample_seconds)
    after = _cpu_snapshot(layout, kubepods, component_cgroups, component_pids, proc_root)
    elapsed_ns = max(1, int((after['time'] - before['time']) * 1e9))
    total_delta = max(1, after['total_jiffies'] - before['total_jiffies'])
    node_m = int(round(capacity_millicores * (after['busy_jiffies'] - before['busy_jiffies']) / total_delta))
    pods_m = int(round(1000 * (after['kubepods_ns'] - before['kubepods_ns']) / elapsed_ns))
    ticks_per_second = os.sysconf('SC_CLK_TCK')
    component_ns = (after['component_cgroup_ns'] - before['component_cgroup_ns']
                    + (after['component_ticks'] - before['component_ticks']) * 1e9 / ticks_per_second)
    return {
        'sample_seconds': round(elapsed_ns / 1e9, 3),
        'node_busy_millicores': node_m,
        'kubepods_millicores': pods_m,
        'non_pod_millicores': max(0, node_m - pods_m),
        'kube_components_millicores': int(round(1000 * component_ns / elapsed_ns)),
    }


def _record_and_read_history(options, measured, meminfo, kubepods_memory, cpu):
    """Append this reading to the node's history (not in check mode) and summarise the window."""
    now = time.time()
    reading = {
        't': round(now, 3),
        'non_pod_bytes': max(0, meminfo['MemTotal'] - meminfo['MemAvailable'] - kubepods_memory['working_set_bytes']),
        'non_pod_millicores': cpu['non_pod_millicores'],
        'kube_components_bytes': measured['kube_components_working_set_bytes'],
        'kubepods_bytes': kubepods_memory['working_set_bytes'],
        'source': options.get('history_source') or 'module',
    }
    result = {'enabled': bool(options.get('history', True)), 'path': None, 'recorded': False, 'problems': [],
              'samples': 1, 'span_seconds': 0}
    samples = []
    if result['enabled']:
        path = options.get('history_path') or _DEFAULT['history_path']
        window = _history.parse_window(options.get('history_window') or _DEFAULT['history_window'])
        result['path'] = path
        samples, result['problems'] = _history.read(path, now, window)
        if not options.get('_check_mode'):
            try:
                _history.append(path, reading, window_seconds=window)
                result['recorded'] = True
            except (OSError, NodeallocError) as exc:
                result['problems'].append('%s: this reading was not recorded: %s' % (path, exc))
    samples.append(reading)
    samples.sort(key=lambda s: s['t'])
    percent = float(options.get('percentile') if options.get('percentile') is not None else _DEFAULT['percentile'])
    basis = _history.summarize(samples, percent)
    stabilization = _history.parse_window(options.get('stabilization_window') or _DEFAULT['stabilization_window'])
    recent = [s for s in samples if s['t'] >= now - stabilization]
    recent_peak = max(s['non_pod_bytes'] for s in recent)
    recent_peak_cpu = max(s['non_pod_millicores'] for s in recent)
    # A lower value must have held for the whole stabilization window before it can take effect.
    if recent_peak > basis['non_pod_bytes'] or recent_peak_cpu > basis['non_pod_millicores']:
        basis['non_pod_bytes'] = max(basis['non_pod_bytes'], recent_peak)
        basis['non_pod_millicores'] = max(basis['non_pod_millicores'], recent_peak_cpu)
        basis['stabilized'] = True
    basis['stabilization_seconds'] = stabilization
    result.update(samples=basis['samples'], span_seconds=basis['span_seconds'], basis=basis,
                  series=_downsample(samples, 120))
    return result


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


def gather(options, proc_root='/proc', sleep=time.sleep):
    """Measure the node. ``options`` are the module's parameters (missing ones take defaults)."""
    not_found = []
    meminfo = _procfs.read_meminfo(proc_root)
    capacity_millicores = (os.cpu_count() or 1) * 1000
    layout = _cgroup.discover_layout(options.get('cgroup_root'), proc_root)

    # One pass over /proc finds the kubelet and the container runtime: it is most of the cost of a run.
    names = tuple(options.get('kubelet_process_names') or _kubelet_process.DEFAULT_KUBELET_NAMES) \
        + tuple(options.get('runtime_process_names') or _kubelet_process.DEFAULT_RUNTIME_NAMES)
    found = _kubelet_process.find_processes(names, proc_root)
    kubelet, current = _kubelet_settings(options, proc_root, not_found, found)
    driver_hint = (current or {}).get('cgroup_driver')
    driver, kubepods = _cgroup.find_kubepods(layout, options.get('kubepods_cgroup'), driver_hint)
    if kubepods is None:
        not_found.append('no kubepods cgroup (looked for kubepods.slice and kubepods under %s); '
                         'pods working set taken as 0' % layout.memory_root)
        kubepods_memory = {'cgroup': None, 'working_set_bytes': 0}
    else:
        kubepods_memory = _cgroup.memory_working_set(layout, kubepods)

    system_slice = None
    if _cgroup.cgroup_exists(layout, 'system.slice'):
        system_slice = _cgroup.memory_working_set(layout, 'system.slice')

    components, component_cgroups, component_pids = _component_targets(layout, found, proc_root, kubepods)
    if not components:
        not_found.append('no kubelet or container runtime processes (%s): kubeReserved gets no '
                         'measured share, all non-pod memory goes to systemReserved' % ', '.join(names))
    component_memory = [_cgroup.memory_working_set(layout, c) for c in component_cgroups]
    component_rss = sum(_procfs.read_process_rss_bytes(p, proc_root) or 0 for p in component_pids)
    kube_components_ws = sum(c['working_set_bytes'] for c in component_memory) + component_rss

    cpu = sample_cpu(layout, kubepods, component_cgroups, component_pids, capacity_millicores,
                     options.get('sample_seconds', _DEFAULT['sample_seconds']), proc_root, sleep)
    cpu['capacity_millicores'] = capacity_millicores

    measured = {
        'mem_total_bytes': meminfo['MemTotal'],
        'mem_available_bytes': meminfo['MemAvailable'],
        'kubepods_working_set_bytes': kubepods_memory['working_set_bytes'],
        'kube_components_working_set_bytes': kube_components_ws,
        'capacity_millicores': capacity_millicores,
        'hugepages_bytes': _procfs.read_hugepages_bytes(),
        'non_pod_millicores': cpu['non_pod_millicores'],
        'kube_components_millicores': cpu['kube_components_millicores'],
    }
    history = _record_and_read_history(options, measured, meminfo, kubepods_memory, cpu)
    max_pods = options.get('max_pods') or (current or {}).get('max_pods') or 110
    formulas = _formulas.all_formulas(meminfo['MemTotal'], capacity_millicores // 1000, max_pods,
                                      options.get('openshift_sizing_version') or _DEFAULT['openshift_sizing_version'])
    recommendation = _recommend.recommend(measured, options, current, history['basis'], formulas)
    decision = _decision.decide(current, recommendation, options, history['basis'])

    memory = {
        'mem_total_bytes': meminfo['MemTotal'],
        'mem_available_bytes': meminfo['MemAvailable'],
        'kubepods_working_set_bytes': kubepods_memory['working_set_bytes'],
        'non_pod_bytes': meminfo['MemTotal'] - meminfo['MemAvailable'] - kubepods_memory['working_set_bytes'],
        'kube_components_working_set_bytes': kube_components_ws,
        'kubepods': kubepods_memory,
        'system_slice': system_slice,
        'kube_components': {'cgroups': component_memory, 'pids_by_rss': component_pids,
                            'rss_bytes': component_rss},
    }
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
            'memory_root': layout.memory_root,
            'cpu_root': layout.cpu_root,
        },
        'kubelet': kubelet,
        'components': components,
        'current': current,
        'recommendation': recommendation,
        'decision': decision,
        'history': {k: v for k, v in history.items() if k != 'basis'},
        'formulas': formulas,
        'not_found': not_found,
    }
