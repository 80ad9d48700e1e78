# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The CPU the non-pod cgroups are guaranteed under contention, and the pressure (PSI) they feel.

Reserving CPU does not set aside millicores: it lowers the kubepods cgroup's CPU
weight, and the kernel's fair scheduler then divides a busy node between the
top-level cgroups in proportion to their weights (kubernetes/kubernetes#72881).
``system.slice``, where the kubelet, the container runtime and the daemons run,
keeps its own weight (v1 ``cpu.shares``, 1024 unless set; v2 ``cpu.weight``, 100
unless set). So under contention the daemons are guaranteed

    capacity x weight(system.slice) / (weight(system.slice) + weight(kubepods))

which can be more or less than what was reserved. The kubelet writes kubepods'
weight from the node-allocatable CPU (capacity - kubeReserved - systemReserved
when ``enforceNodeAllocatable`` holds ``pods``, else capacity):
* v1: ``cpu.shares = MilliCPUToShares(millicores)`` (pkg/kubelet/cm/helpers_linux.go:
  millicores x 1024 / 1000, within [2, 262144]);
* v2: ``cpu.weight = CpuSharesToCpuWeight(shares) = (shares - 2) x 9999 / 262142 + 1``
  (pkg/kubelet/cm/cgroup_manager_linux.go, the KEP-2254 conversion).
Only system.slice is counted on the non-pod side: other top-level groups
(user.slice, init.scope) compete with it when they are busy, so this is the
share the daemons can count on, not the most they may get.

PSI: v2 cgroups have ``cpu.pressure`` and ``memory.pressure`` (``some``/``full``
lines with avg10/avg60/avg300 in percent and a total in microseconds;
Documentation/accounting/psi.rst). cgroup v1 has no per-cgroup pressure files;
only the node-wide /proc/pressure files exist there (with CONFIG_PSI and psi=1).
"""

from __future__ import annotations

import functools
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _procfs

DEFAULT_WEIGHT = {'v1': 1024, 'v2': 100}


def shares_to_weight(shares):
    """cgroup_manager_linux.go CpuSharesToCpuWeight: v1 shares to a v2 weight."""
    return ((shares - 2) * 9999) // 262142 + 1


@functools.lru_cache(maxsize=None)
def _node_allocatable():
    """The kubelet's allocatable arithmetic, imported on first use: the sampler imports this module for PSI alone,
    and _node_allocatable brings the quantities and the eviction rules, a tenth of a sampler run's CPU. Kept after
    the first use: the reservation's search (min_reserved_for) asks for a weight a dozen times."""
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable as module

    return module


def kubepods_weight(version, kubepods_millicores):
    """The weight the kubelet gives kubepods for a node-allocatable CPU."""
    shares = _node_allocatable().milli_cpu_to_shares(max(0, kubepods_millicores))
    return shares if version == 'v1' else shares_to_weight(shares)


def guaranteed_millicores(version, capacity_millicores, system_weight, kubepods_millicores):
    """What system.slice is guaranteed of the whole node when kubepods is busy too."""
    pods = kubepods_weight(version, kubepods_millicores)
    return int(capacity_millicores * system_weight // (system_weight + pods))


def min_reserved_for(version, capacity_millicores, system_weight, needed_millicores):
    """The least reserved CPU whose kubepods weight leaves system.slice ``needed_millicores`` (capacity if none)."""
    low, high = 0, capacity_millicores
    if guaranteed_millicores(version, capacity_millicores, system_weight, capacity_millicores - high) < needed_millicores:
        return capacity_millicores
    while low < high:
        middle = (low + high) // 2
        if guaranteed_millicores(version, capacity_millicores, system_weight,
                                 capacity_millicores - middle) >= needed_millicores:
            high = middle
        else:
            low = middle + 1
    return low


def read_weight(layout, relative):
    """(value, path) of a cgroup's cpu.shares (v1) or cpu.weight (v2); (None, path-or-None) if unreadable."""
    directory = _cgroup.cpu_controller_dir(layout, relative)
    if directory is None:
        return None, None
    path = os.path.join(directory, 'cpu.shares' if layout.version == 'v1' else 'cpu.weight')
    try:
        return int(_procfs.read_file_text(path, 'strict').strip()), path
    except (OSError, ValueError):
        return None, path


def parse_pressure(text):
    """{'some': {'avg10': .., 'avg60': .., 'avg300': .., 'total_usec': ..}, 'full': {...}} from a PSI file."""
    result = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] not in ('some', 'full'):
            continue
        values = {}
        for field in fields[1:]:
            name, _sep, number = field.partition('=')
            try:
                values['total_usec' if name == 'total' else name] = int(number) if name == 'total' else float(number)
            except ValueError:
                continue
        result[fields[0]] = values
    return result


def read_pressure(path):
    try:
        return parse_pressure(_procfs.read_file_text(path, 'strict'))
    except OSError:
        return None


def pressure(layout, groups, proc_root='/proc'):
    """PSI of each cgroup in ``groups`` (v2) and of the whole node (/proc/pressure), with a note on v1."""
    result = {'node': {}, 'cgroups': {}, 'note': None}
    for resource in ('cpu', 'memory'):
        value = read_pressure(_procfs.joined(_procfs.joined(proc_root, 'pressure'), resource))
        if value is not None:
            result['node'][resource] = value
    if layout.version == 'v1':
        result['note'] = ('cgroup v1 has no per-cgroup pressure files; only the node-wide /proc/pressure is shown%s'
                          % ('' if result['node'] else ', and it is absent (kernel without PSI or psi=0)'))
        return result
    for relative in groups:
        if not relative:
            continue
        entry = {}
        for resource in ('cpu', 'memory'):
            value = read_pressure(os.path.join(layout.memory_root, relative, '%s.pressure' % resource))
            if value is not None:
                entry[resource] = value
        if entry:
            result['cgroups']['/' + relative] = entry
    return result


def describe_pressure(result):
    """One line per cgroup (and the node): the share of time some tasks stalled, over 10 s and 5 min."""
    lines = []
    items = [('node', result.get('node') or {})] + sorted((result.get('cgroups') or {}).items())
    for name, entry in items:
        parts = []
        for resource in ('cpu', 'memory'):
            if resource in entry:
                some = entry[resource].get('some', {})
                parts.append('%s some %.2f%% (10 s) %.2f%% (5 min)'
                             % (resource, some.get('avg10', 0.0), some.get('avg300', 0.0)))
        if parts:
            lines.append('pressure (PSI) %s: %s' % (name, ', '.join(parts)))
    if result.get('note'):
        lines.append(result['note'])
    return lines


def settle(version, capacity_millicores, system_weight, needed_millicores, reserved_millicores, policy='reserve'):
    """Raise the reserved CPU until system.slice's guaranteed share covers ``needed_millicores``.

    Returns (reserved_millicores, explanation lines, facts). With ``policy`` V(report) the reservation is
    left as it is and only the guarantee is reported.
    """
    weight = system_weight if system_weight else DEFAULT_WEIGHT[version]
    lines = []
    guaranteed = guaranteed_millicores(version, capacity_millicores, weight, capacity_millicores - reserved_millicores)
    minimum = min_reserved_for(version, capacity_millicores, weight, needed_millicores)
    lines.append('CPU guaranteed to system.slice under contention = capacity x w(system.slice) / (w(system.slice) + '
                 'w(kubepods)) = %dm x %d / (%d + %d) = %dm with %dm reserved (%s; w(kubepods) from %dm allocatable%s)'
                 % (capacity_millicores, weight, weight,
                    kubepods_weight(version, capacity_millicores - reserved_millicores), guaranteed,
                    reserved_millicores, 'cpu.shares' if version == 'v1' else 'cpu.weight',
                    capacity_millicores - reserved_millicores,
                    '' if system_weight else '; system.slice weight unreadable, kernel default %d' % weight))
    raised = reserved_millicores
    if guaranteed < needed_millicores:
        if policy == 'reserve':
            raised = max(reserved_millicores, minimum)
            lines.append('reserved CPU raised to %dm so that the guaranteed share covers the %dm needed'
                         % (raised, needed_millicores))
        else:
            lines.append('WARNING: the guaranteed share is below the %dm needed; %dm reserved would cover it '
                         '(cpu_guarantee report: not applied)' % (needed_millicores, minimum))
    facts = {'version': version, 'system_slice_weight': weight, 'system_slice_weight_read': bool(system_weight),
             'needed_millicores': needed_millicores, 'min_reserved_millicores': minimum,
             'guaranteed_millicores_before_raise': guaranteed}
    return raised, lines, facts
