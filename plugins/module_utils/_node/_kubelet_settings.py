# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The kubelet's settings as this node runs it: where its config is, what it and its flags set, and the files a
reservation change would write (the main config and our drop-in), read so that the plan stays pure."""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _config_edit, _config_file, _config_rules, _defaults)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process, _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError, NodeallocError


def read(options, proc_root, not_found, found):
    """Locate the kubelet among ``found`` (_kubelet_process.find_processes) and read its effective settings: its
    config file, its drop-ins and its command line flags. Returns (kubelet dict, current or None, config).

    ``options``: the facts module's parameters (kubelet_process_names, kubelet_config_path, kubelet_config_dir)."""
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
        'eviction_hard': _defaults.effective_eviction_hard(config),
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


def reservation_files(kubelet, drop_in_dir, config_dir_path):
    """The main config and our drop-in wherever the plan may write it: {path: {exists, format, fields}}.

    What _node_plan needs for the exact diff the on-node step would write, read here so that the plan stays pure.
    A file that cannot be read or parsed is left out (the step itself refuses it, naming the file).
    """
    directories = (kubelet.get('config_dir'), kubelet['ownership'].get('config_dir'), drop_in_dir, config_dir_path)
    paths = [kubelet.get('config_path')] + [_defaults.drop_in_path(d) for d in directories if d]
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
