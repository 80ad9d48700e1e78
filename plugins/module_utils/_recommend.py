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

from ansible_collections.nodealloc.kubelet.plugins.module_utils import (
    _cpu_guarantee, _headroom_policy, _node_allocatable, _option_specs, _quantity)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._eviction import DEFAULT_EVICTION_HARD

MIB = 1024 * 1024

DEFAULTS = _option_specs.defaults((
    'memory_headroom_percent', 'memory_headroom_min_bytes', 'cpu_headroom_percent', 'cpu_headroom_min_millicores',
    'single_reading_headroom_factor', 'min_reserved', 'max_reserved_fraction', 'policy', 'floor_policy'))


def ceil_to(value, step):
    return -(-int(value) // step) * step


def describe_bytes(value):
    return '%d B (%.1f MiB)' % (value, value / MIB)


def _split(total, part, whole, step):
    """Split ``total`` into (part's share, rest), the share rounded up to ``step``."""
    if whole <= 0 or part <= 0:
        return 0, total
    share = ceil_to(total * min(part, whole) / whole, step)
    share = min(share, total)
    return share, total - share


def _apply_bounds(reserved_memory, reserved_cpu, capacity_bytes, capacity_millicores, options, floor, lines):
    """Floors (min_reserved, floor_policy) and the ceiling (max_reserved_fraction of capacity)."""
    minimum = _quantity.quantity_value(_quantity.parse_quantity(str(options['min_reserved'])))
    if floor is not None:
        lines.append('floor_policy %s reserves %s and %dm'
                     % (floor['name'], describe_bytes(floor['reserved_memory_bytes']), floor['reserved_millicores']))
        minimum = max(minimum, floor['reserved_memory_bytes'])
        if reserved_cpu < floor['reserved_millicores']:
            lines.append('reserved CPU raised to the floor: %dm' % floor['reserved_millicores'])
            reserved_cpu = floor['reserved_millicores']
    if reserved_memory < minimum:
        lines.append('reserved memory raised to the floor: %s' % describe_bytes(ceil_to(minimum, MIB)))
        reserved_memory = ceil_to(minimum, MIB)
    ceiling = int(capacity_bytes * options['max_reserved_fraction']) // MIB * MIB
    if reserved_memory > ceiling:
        lines.append('WARNING: reserved memory capped at max_reserved_fraction %.2f of capacity = %s; the node '
                     'needs more than that outside its pods' % (options['max_reserved_fraction'],
                                                                describe_bytes(ceiling)))
        reserved_memory = ceiling
    # CPU too: a busy node (or a sample taken during a burst) must not reserve more than it has,
    # which the kubelet would refuse to start with.
    cpu_ceiling = int(capacity_millicores * options['max_reserved_fraction'])
    if reserved_cpu > cpu_ceiling:
        lines.append('WARNING: reserved CPU capped at max_reserved_fraction %.2f of capacity = %dm'
                     % (options['max_reserved_fraction'], cpu_ceiling))
        reserved_cpu = cpu_ceiling
    return reserved_memory, reserved_cpu


def _guarantee_now_and_after(weights, guarantee, capacity_m, current, enforce, reserved_cpu, derived, lines):
    """system.slice's guaranteed CPU with today's reservations and with the recommendation."""
    version, weight = weights['version'], guarantee['system_slice_weight']
    now_reserved = sum(_node_allocatable.reserved_amount(current.get(key), 'cpu', -3)
                       for key in ('kube_reserved', 'system_reserved'))
    now_pods = capacity_m - now_reserved if 'pods' in enforce else capacity_m
    now = _cpu_guarantee.guaranteed_millicores(version, capacity_m, weight, now_pods)
    after_pods = derived['allocatable_millicores'] if derived['enforces_pods'] else capacity_m
    after = _cpu_guarantee.guaranteed_millicores(version, capacity_m, weight, after_pods)
    lines.append('CPU guaranteed to system.slice under contention: %dm now (%dm reserved), %dm recommended '
                 '(%dm reserved), for %dm needed' % (now, now_reserved, after, reserved_cpu,
                                                     guarantee['needed_millicores']))
    if after < guarantee['needed_millicores']:
        lines.append('WARNING: even capped, the daemons are guaranteed less CPU than they need under contention; '
                     'raise system.slice\'s own weight (systemd CPUWeight=, v1 CPUShares=) instead of reserving more')
    return {'now_millicores': now, 'now_reserved_millicores': now_reserved, 'recommended_millicores': after,
            'kubepods_weight_now': _cpu_guarantee.kubepods_weight(version, now_pods),
            'kubepods_weight_recommended': _cpu_guarantee.kubepods_weight(version, after_pods)}


def recommend(measured, settings=None, current=None, basis=None, formulas=None):
    """Compute the recommendation.

    ``measured`` holds integers: mem_total_bytes, mem_available_bytes,
    kubepods_working_set_bytes, kube_components_working_set_bytes,
    capacity_millicores, non_pod_millicores, kube_components_millicores; optionally session_millicores
    and session_cgroups (the SSH sessions' CPU left out of non_pod_millicores, _measure.SESSION_CGROUPS).
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
    accounting = measured.get('non_pod_memory')
    if accounting:
        # _memory_accounting: the pods' page cache MemAvailable already counts is not subtracted again.
        lines.extend(accounting['explanation'])
        non_pod = accounting['bytes']
    else:
        lines.append('non-pod memory = MemTotal - MemAvailable - kubepods working set = %d - %d - %d = %s'
                     % (total, available, pods_ws, describe_bytes(non_pod)))
    non_pod_now = max(0, non_pod)
    if non_pod < 0:
        lines.append('non-pod memory is negative (page cache counted in the pods working set is '
                     'also in MemAvailable); using 0')
    basis = basis or {'samples': 1, 'span_seconds': 0, 'percentile': 100.0, 'non_pod_bytes': non_pod_now,
                      'non_pod_millicores': max(0, measured['non_pod_millicores'])}
    single_reading = basis['samples'] <= 1
    policy_settings = dict(_headroom_policy.DEFAULTS)
    policy_settings.update({k: v for k, v in (settings or {}).items() if k in _headroom_policy.DEFAULTS and v is not None})
    short_history = not single_reading and 'jumps' in basis and (basis['jumps'] or {}).get('memory_bytes') is None
    # One to two reaction times of history: climbs measured within half of it and scaled up (_headroom_policy).
    scaled_climbs = not single_reading and _headroom_policy.extrapolated(basis.get('jumps'))
    prior, prior_source = None, None
    if single_reading or short_history or scaled_climbs:
        # A node of the same class with history, measured in the same run, knows more than any formula.
        class_prior = basis.get('class_prior')
        if class_prior:
            prior = class_prior[:2]
            prior_source = ('the largest reservation recommended for the %d node(s) of the same class (memory size '
                            'and CPU count) with history in this run' % class_prior[2])
        else:
            prior = _headroom_policy.cold_start_floor(formulas, policy_settings['cold_start_prior'])
            prior_source = 'what the %s formula reserves' % policy_settings['cold_start_prior']
    prior_floors = prior is not None and options['policy'] == 'measured'
    prior_line = ('the cold-start prior, %s (%s, %dm), is the floor until the history shows climbs over a whole '
                  'reaction time' % (prior_source, describe_bytes(prior[0]), prior[1]) if prior_floors else None)
    if single_reading and prior_floors:
        lines.append('this rests on one reading (no history yet): %s' % prior_line)
    elif single_reading:
        factor = options['single_reading_headroom_factor']
        options['memory_headroom_percent'] *= factor
        options['memory_headroom_min_bytes'] = int(options['memory_headroom_min_bytes'] * factor)
        options['cpu_headroom_percent'] *= factor
        options['cpu_headroom_min_millicores'] = int(options['cpu_headroom_min_millicores'] * factor)
        lines.append('this rests on one reading (no history yet): headroom widened %.1fx' % factor)
    else:
        lines.append('history: %d samples over %.1f h; p%g of non-pod memory = %s, of non-pod CPU = %dm%s'
                     % (basis['samples'], basis['span_seconds'] / 3600.0, basis['percentile'],
                        describe_bytes(basis['non_pod_bytes']), basis['non_pod_millicores'],
                        ('; raised to the peak of the stabilization window' if basis.get('stabilized') else '')))
        if short_history:
            jumps_seen = basis.get('jumps') or {}
            if basis['span_seconds'] < jumps_seen.get('reaction_seconds', float('inf')):
                why = 'it spans less than one reaction time'
            elif jumps_seen.get('too_sparse'):
                why = ('its readings are too sparse to show climbs: fewer than %d per reaction time; the sampler '
                       'records one a minute' % _headroom_policy.MIN_READINGS_PER_REACTION)
            else:
                why = 'no reading lies where a climb over the reaction time can start'
            lines.append('the history shows no climb to a new peak yet (%s)' % why)
        if scaled_climbs:
            jumps_seen = basis['jumps']
            lines.append("the history spans less than two reaction times: this node's climbs to a new peak measured "
                         'within %.1f h (half the history) and scaled x%.2f to the %.1f h reaction time'
                         % (jumps_seen['horizon_seconds'] / 3600.0,
                            jumps_seen['reaction_seconds'] / float(jumps_seen['horizon_seconds']),
                            jumps_seen['reaction_seconds'] / 3600.0))
        if (short_history or scaled_climbs) and prior_floors:
            lines.append(prior_line)
        elif short_history or scaled_climbs:
            # Too short to show how far use climbs within a reaction time: the peak so far is no sure guide yet.
            factor = options['single_reading_headroom_factor']
            for key in ('memory_headroom_percent', 'cpu_headroom_percent'):
                options[key] *= factor
            for key in ('memory_headroom_min_bytes', 'cpu_headroom_min_millicores'):
                options[key] = int(options[key] * factor)
            lines.append('the percentage rule and minimum widened %.1fx until the history shows climbs over a whole '
                         'reaction time' % factor)
    non_pod_used = max(0, int(basis['non_pod_bytes']))

    jumps = basis.get('jumps') or {}
    if jumps.get('class_nodes', 1) > 1:
        raised = jumps.get('raised_by_class')
        lines.append('climbs pooled over %d nodes of the same class (memory size and CPU count)%s'
                     % (jumps['class_nodes'], ": the class's largest raises %s" % ' and '.join(raised) if raised else ''))
    mem_headroom, rule = _headroom_policy.headroom(non_pod_used, jumps.get('memory_bytes'),
                                                   options['memory_headroom_percent'],
                                                   options['memory_headroom_min_bytes'],
                                                   policy_settings['jump_headroom_factor'], jumps.get('windows') or 0)
    lines.append('memory headroom = %s' % rule)
    mem_needed = ceil_to(non_pod_used + mem_headroom, MIB)
    lines.append('reserved memory = ceil_MiB(%d + %d) = %s'
                 % (non_pod_used, mem_headroom, describe_bytes(mem_needed)))
    if prior is not None and options['policy'] == 'measured' and mem_needed < prior[0]:
        mem_needed = ceil_to(prior[0], MIB)
        lines.append('reserved memory raised to the cold-start prior: %s' % describe_bytes(mem_needed))

    capacity_m = measured['capacity_millicores']
    non_pod_m = max(0, int(basis['non_pod_millicores']))
    lines.append('CPU capacity = %dm; non-pod CPU = node busy - kubepods - SSH sessions = %dm over the sample'
                 % (capacity_m, non_pod_m))
    if measured.get('session_cgroups'):
        lines.append('SSH sessions (%s), where this role runs, used %dm over the sample: left out of non-pod CPU, '
                     'their memory stays counted' % (', '.join(measured['session_cgroups']),
                                                     measured.get('session_millicores', 0)))
    cpu_headroom, rule = _headroom_policy.headroom(non_pod_m, jumps.get('millicores'), options['cpu_headroom_percent'],
                                                   options['cpu_headroom_min_millicores'],
                                                   policy_settings['jump_headroom_factor'], jumps.get('windows') or 0)
    cpu_needed = non_pod_m + cpu_headroom
    lines.append('reserved CPU = %dm + headroom %s = %dm' % (non_pod_m, rule, cpu_needed))
    if prior is not None and options['policy'] == 'measured' and cpu_needed < prior[1]:
        cpu_needed = prior[1]
        lines.append('reserved CPU raised to the cold-start prior: %dm' % cpu_needed)

    guarantee_input = measured.get('cpu_weights')
    guarantee = None
    if guarantee_input and options['policy'] == 'measured':
        cpu_needed, guarantee_lines, guarantee = _cpu_guarantee.settle(
            guarantee_input['version'], capacity_m, guarantee_input.get('system_slice_weight'), cpu_needed, cpu_needed,
            (settings or {}).get('cpu_guarantee') or 'reserve')
        lines.extend(guarantee_lines)

    formulas = formulas or {}
    floor = formulas.get(options['floor_policy']) if options['floor_policy'] != 'none' else None
    policy = options['policy']
    if policy != 'measured':
        chosen = formulas[policy]
        lines.append('policy %s: the %s formula replaces the measurement: kubeReserved %s / %dm, systemReserved '
                     '%s / %dm' % (policy, policy, describe_bytes(chosen['kube_reserved_memory_bytes']),
                                   chosen['kube_reserved_millicores'],
                                   describe_bytes(chosen['system_reserved_memory_bytes']),
                                   chosen['system_reserved_millicores']))
        kube_mem = ceil_to(chosen['kube_reserved_memory_bytes'], MIB)
        system_mem = ceil_to(chosen['system_reserved_memory_bytes'], MIB)
        kube_cpu, system_cpu = chosen['kube_reserved_millicores'], chosen['system_reserved_millicores']
        mem_needed, cpu_needed = kube_mem + system_mem, kube_cpu + system_cpu
    else:
        mem_needed, cpu_needed = _apply_bounds(mem_needed, cpu_needed, total, capacity_m, options, floor, lines)
        # Split by the kubelet and runtime's share of non-pod use now.
        kube_ws = measured.get('kube_components_working_set_bytes') or 0
        kube_mem, system_mem = _split(mem_needed, kube_ws, non_pod_now, MIB)
        lines.append('kubelet + container runtime working set = %s, %.1f%% of non-pod memory now'
                     % (describe_bytes(kube_ws), 100.0 * min(kube_ws, non_pod_now) / non_pod_now if non_pod_now else 0.0))
        lines.append('kubeReserved.memory = ceil_MiB(%d * %d / %d) = %s; systemReserved.memory = %d - %d = %s'
                     % (mem_needed, min(kube_ws, non_pod_now), non_pod_now or 1, _quantity.format_memory(kube_mem),
                        mem_needed, kube_mem, _quantity.format_memory(system_mem)))
        kube_m_used = measured.get('kube_components_millicores') or 0
        kube_cpu, system_cpu = _split(cpu_needed, kube_m_used, max(0, measured['non_pod_millicores']), 1)
        lines.append('kubeReserved.cpu = %dm (kubelet + runtime used %dm); systemReserved.cpu = %dm'
                     % (kube_cpu, kube_m_used, system_cpu))

    kube_reserved = {'cpu': _quantity.format_cpu(kube_cpu), 'memory': _quantity.format_memory(kube_mem)}
    system_reserved = {'cpu': _quantity.format_cpu(system_cpu), 'memory': _quantity.format_memory(system_mem)}

    current = current or {}
    eviction_hard = current.get('eviction_hard')
    if eviction_hard is None:
        eviction_hard = DEFAULT_EVICTION_HARD
    enforce = _option_specs.effective_enforce_node_allocatable(current.get('enforce_node_allocatable'))
    hugepages = measured.get('hugepages_bytes') or 0
    derived = _node_allocatable.compute(total, capacity_m, kube_reserved, system_reserved,
                                        eviction_hard, enforce, hugepages)
    if hugepages:
        lines.append('pre-allocated huge pages %s are taken out of allocatable memory and the kubepods limit, '
                     'as the kubelet does' % describe_bytes(hugepages))
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
    if guarantee is not None:
        guarantee.update(_guarantee_now_and_after(guarantee_input, guarantee, capacity_m, current, enforce,
                                                  cpu_needed, derived, lines))
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
        'basis': basis,
        'single_reading': single_reading,
        'cpu_guarantee': guarantee,
        'explanation': lines,
    }
