# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Turn measured non-pod usage into kubeReserved / systemReserved, with every step explained.

reserved memory = P + headroom, where
    non-pod = MemTotal - MemAvailable - working_set(kubepods)
    P = the history's percentile (100: its peak) of non-pod memory
    headroom = max(memory_headroom_min_bytes, min(memory_headroom_max_bytes, the largest jump above the
               preceding peak)) (_headroom.jump_headroom), or with memory_headroom_rule percent
               max(P * memory_headroom_percent / 100, memory_headroom_min_bytes)
rounded up to whole MiB, never below the cold-start prior while the history is short; split between kubeReserved (the kubelet's and the
container runtime's own working sets, in proportion) and systemReserved (the
rest: systemd, sshd, kernel, anything outside both). CPU likewise in
millicores. The hard eviction threshold is reported as the kubelet accounts
it (see _node_allocatable): it lowers allocatable, not the kubepods limit, so
it is not counted as room for non-pod processes.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _defaults, _duration, _node_allocatable, _quantity)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _class_model, _control_plane_floor, _headroom)

MIB = 1024 * 1024

DEFAULTS = _option_specs.defaults((
    'memory_headroom_rule', 'memory_headroom_percent', 'memory_headroom_min_bytes', 'memory_headroom_max_bytes',
    'cpu_headroom_percent', 'cpu_headroom_min_millicores',
    'min_reserved', 'max_reserved_fraction', 'policy', 'floor_policy'))


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


def _non_pod_memory(measured, lines):
    """Non-pod memory now (clipped at 0), explained: what the node spends outside its pods."""
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
    if non_pod < 0:
        lines.append('non-pod memory is negative (page cache counted in the pods working set is '
                     'also in MemAvailable); using 0')
    return max(0, non_pod)


def _describe_history(basis, lines):
    """The history line: how many readings over how long, and P of memory and CPU, and where they came from."""
    prometheus = basis.get('prometheus') or {}
    if basis.get('history_source') == 'prometheus':
        lines.append('history read from Prometheus (%s, node %s; its non-pod memory, the node\'s own readings for CPU), '
                     'which spans longer than the node\'s own' % (prometheus.get('url'), prometheus.get('node')))
    elif prometheus.get('reason'):
        lines.append('Prometheus (%s, node %s) gave no usable history: %s; the node\'s own history is used'
                     % (prometheus.get('url'), prometheus.get('node'), prometheus['reason']))
    elif prometheus:
        lines.append('Prometheus (%s, node %s) spans no longer than the node\'s own history, which is used'
                     % (prometheus.get('url'), prometheus.get('node')))
    if basis['samples'] <= 1:
        lines.append('this rests on one reading (no history yet)')
        return
    lines.append('history: %d samples over %.1f h; p%g of non-pod memory = %s, of non-pod CPU = %dm%s'
                 % (basis['samples'], basis['span_seconds'] / 3600.0, basis['percentile'],
                    describe_bytes(basis['non_pod_bytes']), basis['non_pod_millicores'],
                    ('; raised to the peak of the stabilization window' if basis.get('stabilized') else '')))


def _pooled_peaks(basis, lines):
    """(P memory bytes, P millicores): the node's own P; a young node's jumps lent by its class are said here."""
    jumps = basis.get('jumps') or {}  # the facts module pools under this key (_headroom)
    memory = max(int(basis['non_pod_bytes']), 0)
    cpu = max(int(basis['non_pod_millicores']), 0)
    if jumps.get('class_nodes', 1) > 1:
        lent = 'memory_jump_bytes' in (jumps.get('raised_by_class') or ())
        lines.append('%d nodes of the same class (the inventory\'s nodealloc_node_class, else memory size and CPU '
                     'count) in this run%s'
                     % (jumps['class_nodes'], ": this node has fewer than %d days of jumps of its own, its class "
                        "lends it its largest jump, %s" % (_headroom.OWN_JUMP_DAYS,
                                                           describe_bytes(int(jumps['memory_jump_bytes'])))
                        if lent else ''))
    return memory, cpu


def _is_cold(basis, settings):
    """One reading, or a history not yet spanning (nearly) one reaction time (_headroom.WARM_SHARE)."""
    reaction = _duration.parse_window(_option_specs.with_defaults(settings, _headroom.DEFAULTS)['reaction_time'])
    return not (basis['samples'] > 1 and _headroom.warm(basis['span_seconds'], reaction))


def _class_model_part(basis, cold, lines):
    """The class model's figure for this node, or None where it does not apply: what its non-pod memory may reach at
    the pods it may hold before the next run (_class_model.raised_peak), which the reservation may not go below.

    It is not P: P + headroom covers what the node's own history and jumps say; the model's figure covers pods the
    node has not held yet, and already lies above every reading its class (a cold node) or the node (a warm one)
    made, bursts included, so no headroom is added on top of it. ``basis['class_model']`` is {'model':
    _class_model.fit's, 'max_pods': the node's}, set where the class's pods profiles are (_gather.pool_with_class,
    benchmarks/quality.py's fleet replay)."""
    view = basis.get('class_model') or {}
    model, own, max_pods = view.get('model'), basis.get('pods_profile'), view.get('max_pods') or 110
    young = _headroom.young(basis.get('jumps'))
    value, model_lines = _class_model.raised_peak(model, own, max_pods, cold, young)
    lines.extend(model_lines)
    if value is None:
        return None
    return {'model': model, 'max_pods': max_pods, 'cold': cold, 'memory_bytes': value,
            'target_pods': _class_model.target_pods(model, own, max_pods)[0], 'raised': False}


def _cold_start_prior(basis, formulas, settings, lines, modelled=None):
    """(memory bytes, millicores, floor name) the reservation may not go below while the history is short, or None.

    Short: one reading, or a history not yet spanning (nearly) one reaction time (_headroom.WARM_SHARE).
    A warm node of its class measured in the same run knows more than any formula (``class_prior``).
    ``modelled``: the class model's figure for this node (``_class_model_part``), or None: where given, it is the
    memory floor in place of the class's warm reservation or the formula ('class model'); CPU keeps its prior.
    """
    policy_settings = _option_specs.with_defaults(settings, _headroom.DEFAULTS)
    reaction = _duration.parse_window(policy_settings['reaction_time'])
    if not _is_cold(basis, settings):
        return None
    class_prior = basis.get('class_prior')
    if class_prior:
        prior = tuple(class_prior[:2]) + ('class',)
        source = ('the largest reservation recommended for the %d node(s) of the same class (the inventory\'s '
                  'nodealloc_node_class, else memory size and CPU count) with a reaction time of history in this run'
                  % class_prior[2])
    else:
        prior = _headroom.cold_start_floor(formulas, policy_settings['cold_start_prior'])
        prior = None if prior is None else tuple(prior) + (policy_settings['cold_start_prior'],)
        source = 'what the %s formula reserves' % policy_settings['cold_start_prior']
    if prior is None and modelled is not None:
        prior, source = (0, 0, 'none'), 'no prior (cold_start_prior none, no warm node of its class)'
    if prior is None:
        lines.append('the history spans %.1f h, less than the %.1f h reaction time, and no cold-start prior applies '
                     '(cold_start_prior none, no warm node of its class)'
                     % (basis['span_seconds'] / 3600.0, reaction / 3600.0))
        return None
    if modelled is not None:
        lines.append('the history spans %.1f h, less than the %.1f h reaction time: the cold-start prior is the class '
                     'model for memory (%s), and %s for CPU (%dm)'
                     % (basis['span_seconds'] / 3600.0, reaction / 3600.0, describe_bytes(modelled), source, prior[1]))
        return (modelled, prior[1], 'class model')
    lines.append('the history spans %.1f h, less than the %.1f h reaction time: the cold-start prior, %s (%s, %dm), '
                 'is the floor' % (basis['span_seconds'] / 3600.0, reaction / 3600.0, source,
                                   describe_bytes(prior[0]), prior[1]))
    return prior


def cold_start(basis, prior, measured_memory_bytes, measured_millicores, settings):
    """Where the figure came from while the history is short, or None when no cold-start prior applies.

    The floor (``floor``: the formula's name, or 'class' for the class prior) beside the measured recommendation
    (P + headroom, before the floor), whether the floor raised it (``raised``), and when the measurement takes over:
    ``takes_over_at`` (Unix time), once the history spans ``_headroom.WARM_SHARE`` of the reaction time counted
    from its oldest sample, if its source keeps recording; None with no history at all (``history_source`` 'none':
    nothing records, so the floor stays until something does: playbooks/observe.yml, or Prometheus).
    """
    if prior is None:
        return None
    reaction = _duration.parse_window(_option_specs.with_defaults(settings, _headroom.DEFAULTS)['reaction_time'])
    source = basis.get('history_source') or ('node' if basis['samples'] > 1 else 'none')
    since = basis.get('history_since')
    floor_memory = ceil_to(prior[0], MIB)
    return {'floor': prior[2], 'floor_memory_bytes': floor_memory, 'floor_millicores': prior[1],
            'measured_memory_bytes': measured_memory_bytes, 'measured_millicores': measured_millicores,
            'raised': measured_memory_bytes < floor_memory or measured_millicores < prior[1],
            'history_source': source, 'history_span_seconds': basis['span_seconds'],
            'warm_span_seconds': _headroom.WARM_SHARE * reaction,
            'takes_over_at': None if source == 'none' or since is None else since + _headroom.WARM_SHARE * reaction}


def _measured_reservation(peak_bytes, peak_millicores, prior, options, lines, jumps=None):
    """(memory bytes, millicores, memory headroom, CPU headroom): P + headroom, each at least the prior."""
    if options['memory_headroom_rule'] == 'percent':
        mem_headroom, rule = _headroom.headroom(peak_bytes, options['memory_headroom_percent'],
                                                options['memory_headroom_min_bytes'])
    else:
        mem_headroom, rule = _headroom.jump_headroom(peak_bytes, jumps, options['memory_headroom_percent'],
                                                     options['memory_headroom_min_bytes'],
                                                     options['memory_headroom_max_bytes'])
    lines.append('memory headroom = %s' % rule)
    memory = ceil_to(peak_bytes + mem_headroom, MIB)
    lines.append('reserved memory = ceil_MiB(%d + %d) = %s' % (peak_bytes, mem_headroom, describe_bytes(memory)))
    if prior is not None and memory < prior[0]:
        memory = ceil_to(prior[0], MIB)
        lines.append('reserved memory raised to the cold-start prior: %s' % describe_bytes(memory))
    cpu_headroom, rule = _headroom.headroom(peak_millicores, options['cpu_headroom_percent'],
                                            options['cpu_headroom_min_millicores'])
    cpu = peak_millicores + cpu_headroom
    lines.append('reserved CPU = %dm + headroom %s = %dm' % (peak_millicores, rule, cpu))
    if prior is not None and cpu < prior[1]:
        cpu = prior[1]
        lines.append('reserved CPU raised to the cold-start prior: %dm' % cpu)
    return memory, cpu, mem_headroom, cpu_headroom


def _describe_cpu(measured, lines):
    lines.append('CPU capacity = %dm; non-pod CPU = node busy - kubepods - SSH sessions = %dm over the sample'
                 % (measured['capacity_millicores'], max(0, int(measured['non_pod_millicores']))))
    if measured.get('session_cgroups'):
        lines.append('SSH sessions (%s), where this role runs, used %dm over the sample: left out of non-pod CPU, '
                     'their memory stays counted' % (', '.join(measured['session_cgroups']),
                                                     measured.get('session_millicores', 0)))


def _vendor_split(policy, formulas, lines):
    """(kube memory, system memory, kube millicores, system millicores) of a vendor formula that replaces the measurement."""
    chosen = formulas[policy]
    lines.append('policy %s: the %s formula replaces the measurement: kubeReserved %s / %dm, systemReserved '
                 '%s / %dm' % (policy, policy, describe_bytes(chosen['kube_reserved_memory_bytes']),
                               chosen['kube_reserved_millicores'],
                               describe_bytes(chosen['system_reserved_memory_bytes']),
                               chosen['system_reserved_millicores']))
    return (ceil_to(chosen['kube_reserved_memory_bytes'], MIB), ceil_to(chosen['system_reserved_memory_bytes'], MIB),
            chosen['kube_reserved_millicores'], chosen['system_reserved_millicores'])


def _measured_split(measured, mem_needed, cpu_needed, non_pod_now, lines):
    """Split by the kubelet and runtime's share of non-pod use now: (kube memory, system memory, kube m, system m)."""
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
    return kube_mem, system_mem, kube_cpu, system_cpu


def _system_only_split(current, mem_needed, cpu_needed, lines):
    """No kubelet or runtime process was found (a k3s or RKE2 kubelet inside another binary, unless
    kubelet_process_names names it): their share is unknown, not 0. The reservation goes to systemReserved, less what
    kubeReserved holds today, and kubeReserved is left as it is: (kube map, kube memory, system memory, kube m,
    system m)."""
    kept = {resource: value for resource, value in ((current or {}).get('kube_reserved') or {}).items()
            if resource in ('cpu', 'memory')}
    kube_mem = _node_allocatable.reserved_amount(kept, 'memory', 0)
    kube_cpu = _node_allocatable.reserved_amount(kept, 'cpu', -3)
    system_mem, system_cpu = max(0, mem_needed - kube_mem), max(0, cpu_needed - kube_cpu)
    lines.append('no kubelet or container runtime process was found on this node (an embedded kubelet, as on k3s or '
                 'RKE2, unless kubelet_process_names names its program), so their share of the reservation is '
                 'unknown: kubeReserved is left as it is (%s) and the rest of the reservation goes to systemReserved: '
                 'memory %d - %d = %s, CPU %dm - %dm = %dm'
                 % ('memory %s, CPU %s' % (kept.get('memory', 'unset'), kept.get('cpu', 'unset')),
                    mem_needed, kube_mem, _quantity.format_memory(system_mem), cpu_needed, kube_cpu, system_cpu))
    return kept, kube_mem, system_mem, kube_cpu, system_cpu


def _allocatable(measured, current, kube_reserved, system_reserved, amounts, lines):
    """What the kubelet derives from the reservations (_node_allocatable), explained; and the enforced list.

    ``amounts``: (kube memory, system memory, kube millicores, system millicores) as the maps hold them.
    """
    kube_mem, system_mem, kube_cpu, system_cpu = amounts
    total, capacity_m = measured['mem_total_bytes'], measured['capacity_millicores']
    eviction_hard = current.get('eviction_hard')
    if eviction_hard is None:
        eviction_hard = _defaults.EVICTION_HARD
    enforce = _defaults.effective_enforce_node_allocatable(current.get('enforce_node_allocatable'))
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
    return derived, enforce


def recommend(measured, settings=None, current=None, basis=None, formulas=None):
    """Compute the recommendation.

    ``measured`` holds integers: mem_total_bytes, mem_available_bytes,
    kubepods_working_set_bytes, kube_components_working_set_bytes,
    capacity_millicores, non_pod_millicores, kube_components_millicores; optionally session_millicores
    and session_cgroups (the SSH sessions' CPU left out of non_pod_millicores, _measure.SESSION_CGROUPS), and
    components_found (False: no kubelet or runtime process was found; kubeReserved is then left as it is), and
    control_plane (_node/_control_plane.detect's dict: a detected one puts _control_plane_floor under the reservation).
    ``current`` holds the kubelet's eviction_hard and enforce_node_allocatable
    (defaults apply when it is None). The steps: non-pod memory now, the history's P pooled over the class,
    the cold-start prior, P + headroom (or a vendor formula), floors and ceiling, the split, allocatable.
    """
    options = _option_specs.with_defaults(settings, DEFAULTS)
    formulas = formulas or {}
    current = current or {}
    lines = []
    non_pod_now = _non_pod_memory(measured, lines)
    basis = basis or {'samples': 1, 'span_seconds': 0, 'percentile': 100.0, 'non_pod_bytes': non_pod_now,
                      'non_pod_millicores': max(0, measured['non_pod_millicores'])}
    single_reading = basis['samples'] <= 1
    _describe_history(basis, lines)
    peak_bytes, peak_millicores = _pooled_peaks(basis, lines)
    _describe_cpu(measured, lines)
    measuring = options['policy'] == 'measured'
    cold_node = _is_cold(basis, settings)
    class_model, jumps = None, basis.get('jumps')
    if measuring:
        class_model = _class_model_part(basis, cold_node, lines)
    if class_model and cold_node:
        # A cold node has shown no jumps of its own: its class's largest burst above a median stands for them.
        burst = class_model['model']['memory']['burst']
        lines.append('the class\'s largest burst above its median, %s, stands for the jumps this node has not shown'
                     % describe_bytes(burst))
        jumps = dict(jumps or {}, lent_jumps=True,
                     memory_jump_bytes=max(int((jumps or {}).get('memory_jump_bytes') or 0), burst))
    modelled = class_model['memory_bytes'] if class_model and cold_node else None
    prior = _cold_start_prior(basis, formulas, settings, lines, modelled) if measuring else None
    mem_needed, cpu_needed, mem_headroom, cpu_headroom = _measured_reservation(
        peak_bytes, peak_millicores, prior, options, lines, jumps)
    if class_model:
        # Raised: the model's figure, not P + headroom, is the memory (a cold node's through its prior, above).
        class_model['raised'] = ceil_to(class_model['memory_bytes'], MIB) > ceil_to(peak_bytes + mem_headroom, MIB)
    if class_model and class_model['memory_bytes'] > mem_needed:
        mem_needed = ceil_to(class_model['memory_bytes'], MIB)
        lines.append('reserved memory raised to the class model at %d pods: %s'
                     % (class_model['target_pods'], describe_bytes(mem_needed)))
    cold = cold_start(basis, prior, ceil_to(peak_bytes + mem_headroom, MIB), peak_millicores + cpu_headroom, settings)
    capacity_m = measured['capacity_millicores']
    guarantee_input = measured.get('cpu_weights')
    guarantee = None
    if guarantee_input and measuring:
        cpu_needed, guarantee_lines, guarantee = _cpu_guarantee.settle(
            guarantee_input['version'], capacity_m, guarantee_input.get('system_slice_weight'), cpu_needed, cpu_needed,
            (settings or {}).get('cpu_guarantee') or 'reserve')
        lines.extend(guarantee_lines)
    # Without a kubelet or runtime process found, their share is unknown, not measured as 0.
    system_only = measuring and measured.get('components_found') is False
    control_plane_floor = None
    if not measuring:
        kube_mem, system_mem, kube_cpu, system_cpu = _vendor_split(options['policy'], formulas, lines)
        mem_needed, cpu_needed = kube_mem + system_mem, kube_cpu + system_cpu
    else:
        # Before floor_policy and the ceiling: the ceiling still caps what the control-plane floor raised.
        mem_needed, cpu_needed, control_plane_floor = _control_plane_floor.apply(
            mem_needed, cpu_needed, measured.get('control_plane'), lines)
        floor = formulas.get(options['floor_policy']) if options['floor_policy'] != 'none' else None
        mem_needed, cpu_needed = _apply_bounds(mem_needed, cpu_needed, measured['mem_total_bytes'], capacity_m,
                                               options, floor, lines)
        if system_only:
            kube_reserved, kube_mem, system_mem, kube_cpu, system_cpu = _system_only_split(current, mem_needed,
                                                                                           cpu_needed, lines)
        else:
            kube_mem, system_mem, kube_cpu, system_cpu = _measured_split(measured, mem_needed, cpu_needed,
                                                                         non_pod_now, lines)
    if not system_only:
        kube_reserved = {'cpu': _quantity.format_cpu(kube_cpu), 'memory': _quantity.format_memory(kube_mem)}
    system_reserved = {'cpu': _quantity.format_cpu(system_cpu), 'memory': _quantity.format_memory(system_mem)}
    derived, enforce = _allocatable(measured, current, kube_reserved, system_reserved,
                                    (kube_mem, system_mem, kube_cpu, system_cpu), lines)
    if guarantee is not None:
        guarantee.update(_guarantee_now_and_after(guarantee_input, guarantee, capacity_m, current, enforce,
                                                  cpu_needed, derived, lines))
    pods_ws = measured['kubepods_working_set_bytes']
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
        'cold_start': cold,
        # The class model (_class_model) where it applied: the model, maxPods, the pods targeted, its figure, raised.
        'class_model': class_model,
        'cpu_guarantee': guarantee,
        # The control-plane floor (_control_plane_floor) on a control-plane node, None on another.
        'control_plane_floor': control_plane_floor,
        'explanation': lines,
    }
