# Private to nodealloc.kubelet: not a public API, may change without notice.
"""memory.min and memory.low of kubepods and of the reserved cgroups, and what that protection costs pods.

cgroup v2 (Documentation/admin-guide/cgroup-v2.rst, "memory.min", "memory.low"): ``memory.min`` is a hard
protection: the group's memory, up to that many bytes, is never reclaimed; when nothing unprotected is left
to reclaim the kernel invokes the OOM killer instead. ``memory.low`` is the soft form: reclaimed only when no
unprotected memory is left. Both files hold a byte count (page-aligned) or ``max``; the root cgroup has
neither. cgroup v1 has no such files.

What the kubelet writes there (kubernetes/kubernetes, KEP-2570 Memory QoS, cgroup v2 only):
* pkg/kubelet/cm/node_container_manager_linux.go ``enforceExistingCgroup``: with the ``MemoryQoS`` feature
  gate on, enforcing ``system-reserved``/``kube-reserved`` (not the ``*-compressible`` keys, whose
  ``getCgroupConfigInternal`` carries CPU only) sets ``memory.min`` of ``systemReservedCgroup``/
  ``kubeReservedCgroup`` to the reservation's memory. It does not look at ``memoryReservationPolicy``.
* pkg/kubelet/cm/qos_container_manager_linux.go ``setMemoryQoS`` with ``memoryReservationPolicy:
  TieredReservation`` (KEP-2570 "Alpha v1.36", keps/sig-node/2570-memory-qos/README.md): kubepods'
  ``memory.min`` is the sum of the Guaranteed and Burstable pods' memory requests, the Burstable QoS
  group's ``memory.low`` the Burstable ones'; Guaranteed pods get ``memory.min``, Burstable ``memory.low``.
* With the gate off, the kubelet resets kubepods' ``memory.min``/``memory.low`` to 0 at start (the 1.37
  rollback, kubernetes/kubernetes#138903); the reserved cgroups keep what was written.

What it costs pods: memory.min protects, it does not set aside. Bytes a reserved group does not use stay
free for pods; but what the daemons take up to memory.min, page cache included, pods can never get back by
reclaim. So a reservation protected with memory.min costs pods, beyond the daemons' real need, up to
``memory.min - working set`` of that group: the protected bytes beyond the measured non-pod use.
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_rules, _quantity, _version_rules
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._procfs import read_text

UNLIMITED = 'max'
# (role, the config field naming the group, the reservation written to its memory.min, the enforcement key)
RESERVED = (('system-reserved', 'systemReservedCgroup', 'systemReserved', 'system-reserved'),
            ('kube-reserved', 'kubeReservedCgroup', 'kubeReserved', 'kube-reserved'))


def parse_protection(text):
    """A memory.min/memory.low file's content: bytes as an int, or 'max'. Raises ValueError otherwise."""
    value = text.strip()
    if value == UNLIMITED:
        return UNLIMITED
    number = int(value)
    if number < 0:
        raise ValueError('negative protection %r' % value)
    return number


def protected_bytes(value, cap_bytes):
    """A protection as bytes, 'max' counted as ``cap_bytes`` (no group can hold more than the node)."""
    return cap_bytes if value == UNLIMITED else min(value, cap_bytes)


def _read(directory, name, problems):
    path = os.path.join(directory, name)
    try:
        return parse_protection(read_text(path))
    except (OSError, NodeallocError, ValueError) as exc:
        problems.append('%s: %s' % (path, exc))
        return None


def targets(config, driver):
    """[(role, config field, relative path)] of the reserved cgroups the kubelet config names (deduplicated)."""
    found, seen = [], set()
    for role, field, _reservation, _key in RESERVED:
        name = (config or {}).get(field)
        if not name:
            continue
        relative = _config_rules.reserved_cgroup_path(name, driver or 'cgroupfs')
        if relative and relative not in seen:
            seen.add(relative)
            found.append((role, field, relative))
    return found


def read(layout, kubepods, config, driver):
    """memory.min/memory.low (and the working set, for the cost) of kubepods and of the reserved cgroups.

    ``config`` is the effective KubeletConfiguration (``kubeReservedCgroup``, ``systemReservedCgroup``);
    ``driver`` the cgroup driver the kubelet uses (for the systemd expansion of those names).
    """
    result = {'supported': layout.version == 'v2', 'cgroups': [], 'problems': [], 'note': None}
    if layout.version != 'v2':
        result['note'] = 'cgroup v1 has no memory.min/memory.low: the kubelet protects nothing from reclaim here'
        return result
    groups = ([('kubepods', None, kubepods)] if kubepods else []) + targets(config, driver)
    for role, field, relative in groups:
        directory = os.path.join(layout.memory_root, relative)
        entry = {'role': role, 'config_field': field, 'cgroup': '/' + relative, 'exists': os.path.isdir(directory),
                 'memory_min': None, 'memory_low': None, 'working_set_bytes': None, 'cpu_weight': None}
        if entry['exists']:
            entry['memory_min'] = _read(directory, 'memory.min', result['problems'])
            entry['memory_low'] = _read(directory, 'memory.low', result['problems'])
            # The group's CPU weight now, against which a *-compressible enforcement is weighed (_cpu_enforcement).
            entry['cpu_weight'] = _cpu_guarantee.read_weight(layout, relative)[0]
            try:
                entry['working_set_bytes'] = _cgroup.memory_working_set(layout, relative)['working_set_bytes']
            except (OSError, NodeallocError) as exc:
                result['problems'].append('%s: working set unreadable: %s' % (directory, exc))
        else:
            result['problems'].append('%s (%s) does not exist under %s'
                                      % ('/' + relative, field or role, layout.memory_root))
        result['cgroups'].append(entry)
    return result


def kubelet_writes_reserved_min(config, cgroup_version, memory_qos_enabled):
    """{role: bytes} the kubelet writes to the reserved cgroups' memory.min at its next start (enforceExistingCgroup).

    ``memory_qos_enabled`` is the MemoryQoS gate as the kubelet runs it (None: unknown, taken as off).
    """
    if cgroup_version != 'v2' or not memory_qos_enabled:
        return {}
    enforced = config.get('enforceNodeAllocatable')
    enforced = ['pods'] if enforced is None else enforced
    written = {}
    for role, field, reservation, key in RESERVED:
        memory = ((config.get(reservation) or {}).get('memory'))
        if key in enforced and config.get(field) and memory not in (None, ''):
            written[role] = _quantity.quantity_value(_quantity.parse_quantity(str(memory)))
    return written


def cost(protection, mem_total_bytes, recommended=None):
    """What the reserved cgroups' memory.min costs pods now, and would with ``recommended`` ({role: bytes}).

    Per reserved group: protected beyond use = max(0, memory.min - working set). Returns
    {'reserved_min_bytes', 'reserved_working_set_bytes', 'protected_beyond_use_bytes', 'groups': [...],
    'after_apply': {...} or None}; None when no reserved group is read (v1, or none configured).
    """
    groups = [g for g in protection.get('cgroups') or [] if g['role'] != 'kubepods' and g['exists']]
    if not groups:
        return None
    rows, total_min, total_use, total_beyond = [], 0, 0, 0
    for group in groups:
        minimum = protected_bytes(group['memory_min'] or 0, mem_total_bytes)
        used = group['working_set_bytes'] or 0
        beyond = max(0, minimum - used)
        rows.append({'role': group['role'], 'cgroup': group['cgroup'], 'memory_min_bytes': minimum,
                     'working_set_bytes': used, 'protected_beyond_use_bytes': beyond})
        total_min += minimum
        total_use += used
        total_beyond += beyond
    after = None
    if recommended:
        after_rows = []
        for group in groups:
            if group['role'] in recommended:
                used = group['working_set_bytes'] or 0
                after_rows.append({'role': group['role'], 'cgroup': group['cgroup'],
                                   'memory_min_bytes': recommended[group['role']],
                                   'protected_beyond_use_bytes': max(0, recommended[group['role']] - used)})
        after = {'groups': after_rows,
                 'protected_beyond_use_bytes': sum(r['protected_beyond_use_bytes'] for r in after_rows)}
    return {'reserved_min_bytes': total_min, 'reserved_working_set_bytes': total_use,
            'protected_beyond_use_bytes': total_beyond, 'groups': rows, 'after_apply': after}


def explain(protection, summary, memory_qos_enabled, policy):
    """Explanation lines: each protected group, its working set, and what the protection costs pods."""
    lines = []
    if not protection.get('supported'):
        return [protection['note']] if protection.get('note') else []
    for group in protection['cgroups']:
        if not group['exists']:
            continue
        lines.append('memory.min of %s (%s) = %s, memory.low = %s' % (
            group['cgroup'], group['config_field'] or 'node allocatable', _show(group['memory_min']),
            _show(group['memory_low'])))
    if summary:
        for row in summary['groups']:
            if row['memory_min_bytes']:
                lines.append('memory.min beyond use of %s = memory.min - working set = %d B - %d B = %d B: '
                             'memory pods cannot reclaim once the daemons (page cache included) grow into it'
                             % (row['cgroup'], row['memory_min_bytes'], row['working_set_bytes'],
                                row['protected_beyond_use_bytes']))
        after = summary.get('after_apply')
        if after and after['groups']:
            lines.append('with the recommendation applied the kubelet (MemoryQoS gate on, %s enforced) writes memory.min '
                         '= the reservation: %s; protected beyond use then %d B' % (
                             ', '.join(r['role'] for r in after['groups']),
                             ', '.join('%s %d B' % (r['cgroup'], r['memory_min_bytes']) for r in after['groups']),
                             after['protected_beyond_use_bytes']))
    lines.append('MemoryQoS feature gate %s, memoryReservationPolicy %s%s' % (
        {True: 'on', False: 'off', None: 'unknown'}[memory_qos_enabled], policy or 'None (default)',
        ': kubepods memory.min = Guaranteed + Burstable pods\' memory requests' if policy == 'TieredReservation' else ''))
    return lines


def _show(value):
    return '-' if value is None else str(value) if value == UNLIMITED else '%d B' % value


def assess(protection, config, reserved, cgroup_version, kubelet_version, mem_total_bytes):
    """The facts' ``memory_protection``: what was read, the gate and policy, the cost now and with ``reserved``.

    ``reserved``: {'kube_reserved': {...}, 'system_reserved': {...}} as apply would write them;
    ``kubelet_version``: _version_rules.parse's answer (None when unknown).
    """
    config = config or {}
    gate = _version_rules.memory_qos_enabled(kubelet_version, config)
    policy = config.get('memoryReservationPolicy')
    after = kubelet_writes_reserved_min(dict(config, systemReserved=reserved.get('system_reserved'),
                                             kubeReserved=reserved.get('kube_reserved')), cgroup_version, gate)
    summary = cost(protection, mem_total_bytes, after)
    result = dict(protection, memory_qos_enabled=gate, memory_reservation_policy=policy or 'None', cost=summary)
    shown = summary is not None or policy == 'TieredReservation' or bool(after)
    result['explanation'] = explain(protection, summary, gate, policy) if shown else []
    return result
