# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What node_reservation_facts reads of a node: the measurement pass (_pipeline) the sampler makes too, and beside it
the kubelet (where it is, its settings, its version, the files a change would write), the cgroup layout's
details, the overcommit audit, pressure, swap and memory protection. Raw readings, nothing derived: the policy is
_gather's (the orchestrator), which calls ``measure``.
"""

from __future__ import annotations

import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _quantity, _version_rules
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _containerd_config, _control_plane, _cpu_guarantee, _disk_use, _kubelet_ownership, _kubelet_process, _kubelet_settings, _kubelet_version,
    _memory_protection, _numa, _overcommit, _pipeline, _probe, _procfs, _swap, _task_count)


def _numa_layout(not_found, sys_root):
    """The NUMA nodes and online CPUs (_numa.read), for the static memory and CPU managers' checks in the plan; a
    sysfs file not in the kernel's form leaves them unknown (said in not_found) rather than failing the measurement:
    they matter only where a static manager is on, and the plan then checks the sums without them."""
    try:
        return _numa.read(sys_root)
    except NodeallocError as exc:
        not_found.append('NUMA layout not read (%s): the static memory manager\'s NUMA nodes are not checked' % exc)
        return None


def _runtime_root(not_found, config_path=_containerd_config.CONFIG_PATH):
    """containerd's root (_containerd_config), its default where the node has no config file; None (said in
    not_found) where the file is refused or not in the form read: the image filesystem is then not measured."""
    try:
        return _containerd_config.root(_safe_open.read_bytes(config_path).decode('utf-8'))
    except FileNotFoundError:
        return _containerd_config.DEFAULT_ROOT
    except (OSError, UnicodeDecodeError, NodeallocError) as exc:
        not_found.append('containerd root not read from %s (%s): the image filesystem is not measured'
                         % (config_path, exc))
        return None


def ephemeral_storage(kubelet, not_found):
    """The kubelet's filesystem and its non-pod use (_disk_use.measure), the root dir from the running
    kubelet's ``--root-dir`` (its default otherwise)."""
    flags = _kubelet_process.flag_values(kubelet.get('argv') or [])
    root_dir = flags.get('--root-dir') or _disk_use.DEFAULT_KUBELET_ROOT_DIR
    return _disk_use.measure(root_dir, runtime_root=_runtime_root(not_found))


def measure(options, proc_root='/proc', sleep=time.sleep, sys_root='/sys'):
    """Raw readings of the node for the facts module: memory, CPU, cgroups, the kubelet and its settings; nothing
    derived. ``options``: the module's parameters with their defaults filled in (_gather)."""
    not_found = []
    # One pass over /proc finds the kubelet and the container runtime: it is most of the cost of a run.
    names = tuple(options.get('kubelet_process_names') or _kubelet_process.DEFAULT_KUBELET_NAMES) \
        + tuple(options.get('runtime_process_names') or _kubelet_process.DEFAULT_RUNTIME_NAMES)
    cmdlines, found = _pipeline.scan_processes(names, proc_root, _kubelet_process.units_for(options.get('kubelet_unit')),
                                               not_found)
    kubelet, current, config = _kubelet_settings.read(options, proc_root, not_found, found)
    kubelet['ownership'] = _kubelet_ownership.detect(kubelet['argv'], kubelet['unit'])
    node = _probe.read_node(options['cgroup_root'], options['kubepods_cgroup'], (current or {}).get('cgroup_driver'),
                            proc_root)
    meminfo, capacity_millicores, layout, driver, kubepods = node[:5]
    kubelet['version'] = _kubelet_version.kubelet_version(kubelet, config, layout.version, not_found, proc_root)
    if current is not None:  # the default thresholds, and whether they merge, depend on the version
        current['eviction_hard'] = _defaults.effective_eviction_hard(config, kubelet['version'])
    kubelet['reservation_files'] = _kubelet_settings.reservation_files(kubelet, options['drop_in_dir'],
                                                                       options['config_dir_path'])
    if kubepods is None:
        not_found.append('no kubepods cgroup (looked for kubepods.slice and kubepods under %s); '
                         'pods working set taken as 0' % layout.memory_root)
    components, memory = _pipeline.read_memory(node, cmdlines, found, proc_root, own_pids=(os.getpid(),))
    if not components.seen:
        not_found.append('no kubelet or container runtime processes (%s): their share is unknown, so kubeReserved '
                         'is left as it is and the reservation goes to systemReserved' % ', '.join(names))
    cpu = _pipeline.sample_cpu(node, components, options['sample_seconds'], proc_root, sleep)
    cpu['capacity_millicores'] = capacity_millicores
    audit = _overcommit.audit(layout, kubepods) if kubepods else None
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
        'overcommit': audit,
        # The pod groups under kubepods at this reading, the audit's count (None without kubepods): the history line's
        # ``pods`` (_history_store.reading).
        'pods': audit['pods'] if audit else None,
        'kubelet': kubelet,
        'components': components.seen,
        'current': current,
        'hugepages_bytes': _procfs.read_hugepages_bytes(),
        # Evidence of starvation (PSI) of the non-pod groups, and system.slice's CPU weight for the guarantee.
        'pressure': _cpu_guarantee.pressure(layout, ['system.slice'] + components.cgroups, proc_root),
        'cpu_weights': {'version': layout.version,
                        'system_slice_weight': _cpu_guarantee.read_weight(layout, 'system.slice')[0]},
        # May the daemons swap, what the kubelet says about swap, the drop-in that stops it (_swap).
        'swap_control': _swap.control(layout, memory['swap']['groups'], _swap.read_swaps(proc_root), config),
        # memory.min/memory.low of kubepods and of the reserved groups the config names (_memory_protection).
        'memory_protection': _memory_protection.read(layout, kubepods, config, driver),
        'kubelet_config': config,  # the effective config, for the protection's cost and the enforcement proposal
        'numa': _numa_layout(not_found, sys_root),
        # The kubelet's filesystem, its use outside the pods and the image filesystem (_disk_use).
        'ephemeral_storage': ephemeral_storage(kubelet, not_found),
        # Whether the static pods run the API server or etcd (_control_plane): its own class and floor.
        'control_plane': _control_plane.detect(kubelet['argv'], config if current is not None else None),
        # The tasks outside the pods and the kernel's PID limits, this module's own threads left out (_task_count).
        'pids': _task_count.measure(layout, kubepods, proc_root, own_pids=(os.getpid(),)),
        'not_found': not_found,
    }
