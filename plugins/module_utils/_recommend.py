# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Turn measured non-pod usage into kubeReserved / systemReserved, with every step explained.

reserved memory = measured non-pod working set + headroom, where
    non-pod = MemTotal - MemAvailable - working_set(kubepods)
    headroom = max(non-pod * headroom_percent / 100, headroom_min)
rounded up to whole MiB; split between kubeReserved (the kubelet's and the
container runtime's own working sets, in proportion) and systemReserved (the
rest: systemd, sshd, kernel, anything outside both). CPU likewise in
millicores. The hard eviction threshold is reported as the kubelet accounts
it (see _node_allocatable): it lowers allocatable, not the kubepods limit, so
it is not counted as room for non-pod processes.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _node_allocatable, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._eviction import DEFAULT_EVICTION_HARD

MIB = 1024 * 1024

DEFAULTS = {
    'memory_headroom_percent': 10.0,
    'memory_headroom_min_bytes': 100 * MIB,
    'cpu_headroom_percent': 10.0,
    'cpu_headroom_min_millicores': 50,
}


def ceil_to(value, step):
    return -(-int(value) // step) * step


def describe_bytes(value):
    return '%d B (%.1f MiB)' % (value, value / MIB)


def _headroom(amount, percent, minimum):
    proportional = int(-(-amount * percent // 100)) if amount > 0 else 0
    return max(proportional, minimum)


def _split(total, part, whole, step):
    """Split ``total`` into (part's share, rest), the share rounded up to ``step``."""
    if whole <= 0 or part <= 0:
        return 0, total
    share = ceil_to(total * min(part, whole) / whole, step)
    share = min(share, total)
    return share, total - share


def recommend(measured, settings=None, current=None):
    """Compute the recommendation.

    ``measured`` holds integers: mem_total_bytes, mem_available_bytes,
    kubepods_working_set_bytes, kube_components_working_set_bytes,
    capacity_millicores, non_pod_millicores, kube_components_millicores.
    ``current`` holds the kubelet's eviction_hard and enforce_node_allocatable
    (defaults apply when it is None).
    """
    options = dict(DEFAULTS)
    options.update({k: v for k, v in (settings or {}).items() if k in DEFAULTS and v is not None})
    lines = []

    total = measured['mem_total_bytes']
    available = measured['mem_available_bytes']
    pods_ws = measured['kubepods_working_set_bytes']
    non_pod = total - available - pods_ws
    lines.append('MemTotal = %s (/proc/meminfo)' % describe_bytes(total))
    lines.append('MemAvailable = %s (/proc/meminfo)' % describe_bytes(available))
    lines.append('kubepods working set = usage - inactive_file = %s' % describe_bytes(pods_ws))
    lines.append('non-pod memory = MemTotal - MemAvailable - kubepods working set = %d - %d - %d = %s'
                 % (total, available, pods_ws, describe_bytes(non_pod)))
    non_pod_used = max(0, non_pod)
    if non_pod < 0:
        lines.append('non-pod memory is negative (page cache counted in the pods working set is '
                     'also in MemAvailable); using 0')

    mem_headroom = _headroom(non_pod_used, options['memory_headroom_percent'],
                             options['memory_headroom_min_bytes'])
    lines.append('memory headroom = max(%d * %s%%, %d) = %s'
                 % (non_pod_used, options['memory_headroom_percent'], options['memory_headroom_min_bytes'],
                    describe_bytes(mem_headroom)))
    mem_needed = ceil_to(non_pod_used + mem_headroom, MIB)
    lines.append('reserved memory = ceil_MiB(%d + %d) = %s'
                 % (non_pod_used, mem_headroom, describe_bytes(mem_needed)))

    kube_ws = measured.get('kube_components_working_set_bytes') or 0
    kube_mem, system_mem = _split(mem_needed, kube_ws, non_pod_used, MIB)
    lines.append('kubelet + container runtime working set = %s, %.1f%% of non-pod memory'
                 % (describe_bytes(kube_ws), 100.0 * kube_ws / non_pod_used if non_pod_used else 0.0))
    lines.append('kubeReserved.memory = ceil_MiB(%d * %d / %d) = %s; systemReserved.memory = %d - %d = %s'
                 % (mem_needed, min(kube_ws, non_pod_used), non_pod_used or 1, _quantity.format_memory(kube_mem),
                    mem_needed, kube_mem, _quantity.format_memory(system_mem)))

    capacity_m = measured['capacity_millicores']
    non_pod_m = max(0, measured['non_pod_millicores'])
    lines.append('CPU capacity = %dm; non-pod CPU = node busy - kubepods = %dm over the sample'
                 % (capacity_m, non_pod_m))
    cpu_headroom = _headroom(non_pod_m, options['cpu_headroom_percent'],
                             options['cpu_headroom_min_millicores'])
    cpu_needed = non_pod_m + cpu_headroom
    lines.append('reserved CPU = %dm + max(%dm * %s%%, %dm) = %dm'
                 % (non_pod_m, non_pod_m, options['cpu_headroom_percent'],
                    options['cpu_headroom_min_millicores'], cpu_needed))
    kube_m_used = measured.get('kube_components_millicores') or 0
    kube_cpu, system_cpu = _split(cpu_needed, kube_m_used, non_pod_m, 1)
    lines.append('kubeReserved.cpu = %dm (kubelet + runtime used %dm); systemReserved.cpu = %dm'
                 % (kube_cpu, kube_m_used, system_cpu))

    kube_reserved = {'cpu': _quantity.format_cpu(kube_cpu), 'memory': _quantity.format_memory(kube_mem)}
    system_reserved = {'cpu': _quantity.format_cpu(system_cpu), 'memory': _quantity.format_memory(system_mem)}

    current = current or {}
    eviction_hard = current.get('eviction_hard')
    if eviction_hard is None:
        eviction_hard = DEFAULT_EVICTION_HARD
    enforce = current.get('enforce_node_allocatable') or ['pods']
    derived = _node_allocatable.compute(total, capacity_m, kube_reserved, system_reserved,
                                        eviction_hard, enforce)
    lines.append('hard eviction memory.available = %s (from %s)'
                 % (describe_bytes(derived['eviction_hard_memory_bytes']),
                    'the kubelet config' if current.get('eviction_hard_source') == 'config'
                    else 'the kubelet default, no config found'))
    lines.append('allocatable memory = capacity - kubeReserved - systemReserved - hard eviction '
                 '= %d - %d - %d - %d = %s' % (total, kube_mem, system_mem, derived['eviction_hard_memory_bytes'],
                                               describe_bytes(derived['allocatable_memory_bytes'])))
    lines.append('allocatable CPU = %dm - %dm - %dm = %dm'
                 % (capacity_m, kube_cpu, system_cpu, derived['allocatable_millicores']))
    lines.append('kubepods cgroup limit (enforceNodeAllocatable has pods: %s) = %s, cpu shares %d'
                 % ('yes' if derived['enforces_pods'] else 'no',
                    describe_bytes(derived['kubepods_memory_limit_bytes']), derived['kubepods_cpu_shares']))
    if pods_ws > derived['kubepods_memory_limit_bytes']:
        lines.append('WARNING: pods use %s now, more than the new kubepods limit; applying this would '
                     'make the kernel reclaim or OOM-kill pods' % describe_bytes(pods_ws))

    return {
        'kube_reserved': kube_reserved,
        'system_reserved': system_reserved,
        'allocatable': _node_allocatable.as_quantities(derived),
        'kubepods_memory_limit_bytes': derived['kubepods_memory_limit_bytes'],
        'kubepods_cpu_shares': derived['kubepods_cpu_shares'],
        'eviction_hard_memory_bytes': derived['eviction_hard_memory_bytes'],
        'reserved_memory_bytes': mem_needed,
        'reserved_millicores': cpu_needed,
        'memory_headroom_bytes': mem_headroom,
        'cpu_headroom_millicores': cpu_headroom,
        'settings': options,
        'explanation': lines,
    }
