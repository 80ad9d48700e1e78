# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What the kubelet's static CPU and memory managers require of the reservation, and what to write so they start.

Read from kubernetes/kubernetes (read only, nothing copied):

* ``reservedMemory`` shape, whatever the policy: pkg/kubelet/apis/config/validation/validation_reserved_memory.go
  ``validateReservedMemoryConfiguration`` (51c6fe12): each limit is ``memory`` or ``hugepages-<size>``, none is zero,
  no (NUMA node, resource) pair twice. ``ValidateKubeletConfiguration`` (validation.go 0ea83df1) runs it.
* The static memory manager: pkg/kubelet/cm/memorymanager/memory_manager.go (ee7f2616) ``NewManager`` ->
  ``getSystemReservedMemory`` -> ``validateReservedMemory``: ``getTotalMemoryTypeReserved`` refuses a NUMA node
  the machine does not have, then for every type named in reservedMemory or (memory, hugepages) in the Node
  Allocatable reservation the per-node sum must ``Equal`` that reservation exactly ("the total amount %q of type %q
  is not equal to the value %q determined by Node Allocatable feature"). The reservation is the container manager's
  ``GetNodeAllocatableReservation``: kubeReserved + systemReserved + the hard ``memory.available`` threshold
  (cmd/kubelet/app/server.go 001332b0 passes ``s.ReservedMemory`` beside it). kubeReserved/systemReserved cannot
  hold hugepages (server.go ``parseResourceList``), so any hugepages entry must sum to 0, which the zero rule
  forbids: a hugepages reservation is always refused (bottlerocket-core-kit#821 met it: "the total amount \\"10Mi\\"
  of type \\"hugepages-2Mi\\" is not equal to the value \\"0\\""; KEP-6252 would change it). policy_static.go
  (030880a5) ``NewPolicyStatic`` then refuses a total of 0 memory ("you should specify the system reserved memory").
  The default hard threshold (100Mi) counts: the kubernetes.io memory-manager task page says so.
* The static CPU manager: pkg/kubelet/cm/cpumanager/cpu_manager.go (01a546fe) ``NewManager``: the reservation's CPU
  (kubeReserved.cpu + systemReserved.cpu; eviction holds none) must be present and not zero ("the static policy
  requires systemreserved.cpu + kubereserved.cpu to be greater than zero"); it is then rounded *up* to whole CPUs
  (``math.Ceil``), since a fraction cannot be exclusively allocated: 1500m keeps 2 CPUs out of the exclusive pool
  while allocatable counts 1.5 taken. That is why the proposal below is whole CPUs: not a refusal, a mismatch.
  policy_static.go (62c7eac0) ``NewStaticPolicy`` takes the reserved CPUs by topology from the lowest cores, or
  ``reservedSystemCPUs`` when set; with the ``strict-cpu-reservation`` policy option (KEP-4540) those CPUs leave the
  shared pool too, so burstable and best-effort pods no longer run on them.
* ``reservedSystemCPUs``: server.go (001332b0) ``getReservedCPUs`` refuses a list that is not a subset of the online
  CPUs ("reserved-cpus: %s is not a subset of online-cpus: %s"), whatever the policy; when set, it *replaces* the cpu
  of kubeReserved and systemReserved (systemReserved.cpu = its size, kubeReserved.cpu dropped): a CPU change to those
  maps does nothing there.

``all_problems`` lists what would stop the kubelet; ``check`` raises the first (for _config_rules.validate). The
proposals say what to write for a reservation: reservedMemory per NUMA node (split below) and whole CPUs;
``reserved_memory_to_write`` decides when the reservedMemory proposal is written with the reservation.
"""

from __future__ import annotations

import decimal
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError, ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _eviction, _quantity

STATIC_MEMORY_POLICY = 'Static'   # memorymanager policy_static.go PolicyTypeStatic
STATIC_CPU_POLICY = 'static'      # cpumanager policy_static.go PolicyStatic
STRICT_CPU_RESERVATION = 'strict-cpu-reservation'
HUGEPAGES_PREFIX = 'hugepages-'
MIB = 1 << 20
_CPU_RANGE = re.compile(r'^([0-9]+)(?:-([0-9]+))?$')


def parse_cpu_list(text):
    """The kernel's and k8s.io/utils/cpuset ``Parse``'s list form ('0-3,8') as a sorted list of ids; '' is none.

    Raises ParseError for anything else (a range running backwards, a sign, spaces, an empty element)."""
    if not isinstance(text, str):
        raise ParseError('a CPU list must be text like "0-3,8", not %r' % (text,))
    text = text.strip('\n')
    cpus = set()
    if text == '':
        return []
    for element in text.split(','):
        match = _CPU_RANGE.match(element)
        if not match:
            raise ParseError('invalid CPU list element %r in %r' % (element, text))
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ParseError('invalid CPU range %r in %r (%d > %d)' % (element, text, first, last))
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpu_list(cpus):
    """Sorted ids as the shortest list form ('0-2,5')."""
    parts, ids = [], sorted(set(cpus))
    start = None
    for index, cpu in enumerate(ids):
        if start is None:
            start = cpu
        if index + 1 == len(ids) or ids[index + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else '%d-%d' % (start, cpu))
            start = None
    return ','.join(parts)


def _amount(reserved, resource):
    """The exact value of one resource of a reservation map (Decimal), 0 when absent."""
    value = (reserved or {}).get(resource)
    if value is None:
        return decimal.Decimal(0)
    return _quantity.parse_quantity(str(value) if isinstance(value, (int, float)) else value)


def node_allocatable_memory(config, capacity_memory_bytes=None, version=None):
    """kubeReserved.memory + systemReserved.memory + the hard memory.available threshold, exactly (Decimal bytes):
    what the memory manager's reservedMemory must sum to. None when a percentage threshold needs the capacity and
    none is given."""
    hard = _eviction.parse_thresholds(_defaults.effective_eviction_hard(config, version)).get('memory.available')
    if hard is None:
        eviction = decimal.Decimal(0)
    elif hard[0] == 'percentage':
        if capacity_memory_bytes is None:
            return None
        eviction = decimal.Decimal(_eviction.threshold_bytes(hard, capacity_memory_bytes))
    else:
        eviction = hard[1]
    return _amount(config.get('kubeReserved'), 'memory') + _amount(config.get('systemReserved'), 'memory') + eviction


def _shown(value):
    return _quantity.canonical_string(value, _quantity.BINARY_SI)


def reserved_memory_problems(config):
    """validateReservedMemoryConfiguration's refusals, and the entries' shape (a decoding error stops start-up too);
    returns (problems, {(numa_node, resource): Decimal})."""
    entries = config.get('reservedMemory')
    problems, seen = [], {}
    if entries is None:
        return problems, seen
    if not isinstance(entries, list):
        return ['reservedMemory must be a list of {numaNode, limits}'], seen
    for entry in entries:
        node = entry.get('numaNode', 0) if isinstance(entry, dict) else None
        limits = entry.get('limits') if isinstance(entry, dict) else None
        if isinstance(node, bool) or not isinstance(node, int) or not isinstance(limits, (dict, type(None))):
            problems.append('reservedMemory entry %r is not {numaNode: int, limits: {resource: quantity}}' % (entry,))
            continue
        for resource, text in (limits or {}).items():
            if resource != 'memory' and not str(resource).startswith(HUGEPAGES_PREFIX):
                problems.append('the limit type %r for NUMA node %d is not supported, only memory and '
                                'hugepages-<size> are accepted' % (resource, node))
                continue
            try:
                value = _quantity.parse_quantity(str(text) if isinstance(text, (int, float)) else text)
            except ValueError as exc:
                problems.append('reservedMemory NUMA node %d %s: %s' % (node, resource, exc))
                continue
            if value == 0:
                problems.append('reserved memory may not be zero for NUMA node %d and resource %r' % (node, resource))
            if (node, resource) in seen:
                problems.append('the reserved memory has a duplicate value for NUMA node %d and resource %r'
                                % (node, resource))
            seen[(node, resource)] = value
    return problems, seen


def memory_manager_problems(config, capacity_memory_bytes=None, numa_nodes=None, version=None):
    """What the static memory manager refuses in ``config`` (the effective KubeletConfiguration as a dict).

    ``numa_nodes``: the machine's NUMA node ids, or None where unknown (then that check is skipped)."""
    problems, seen = reserved_memory_problems(config)
    if config.get('memoryManagerPolicy') != STATIC_MEMORY_POLICY or problems:
        return problems
    for node in sorted({node for node, _resource in seen}):
        if numa_nodes is not None and node not in numa_nodes:
            problems.append('the reserved memory configuration references a NUMA node %d that does not exist on '
                            'this machine (NUMA nodes %s)' % (node, ', '.join(str(n) for n in sorted(numa_nodes))))
    wanted = node_allocatable_memory(config, capacity_memory_bytes, version)
    totals = {}
    for (_node, resource), value in seen.items():
        totals[resource] = totals.get(resource, decimal.Decimal(0)) + value
    for resource in sorted(set(totals) | {'memory'}):
        expected = (wanted if resource == 'memory' else decimal.Decimal(0))
        if expected is None:
            continue  # a percentage threshold and no capacity: the caller without a node cannot tell
        total = totals.get(resource, decimal.Decimal(0))
        if total != expected:
            why = ('kubeReserved + systemReserved + the hard memory.available threshold' if resource == 'memory'
                   else 'kubeReserved and systemReserved cannot hold hugepages, so none may be reserved per NUMA node')
            problems.append('the static memory manager needs reservedMemory of type %r to sum to %s (%s), not %s: '
                            'the kubelet would not start' % (resource, _shown(expected), why, _shown(total)))
    if not problems and totals.get('memory', decimal.Decimal(0)) <= 0:
        problems.append('the static memory manager needs some reserved memory ("you should specify the system '
                        'reserved memory"): the kubelet would not start')
    return problems


def reserved_cpus(config, online_cpus=None):
    """(problem or None, reserved CPU ids from reservedSystemCPUs or None, reserved millicores the managers see)."""
    text = config.get('reservedSystemCPUs') or ''
    if text:
        try:
            cpus = parse_cpu_list(text)
        except ParseError as exc:
            return 'unable to parse reservedSystemCPUs %s: %s' % (text, exc), None, 0
        if online_cpus is not None and not set(cpus) <= set(online_cpus):
            return ('reserved-cpus: %s is not a subset of online-cpus: %s: the kubelet would not start'
                    % (text, format_cpu_list(online_cpus))), cpus, len(cpus) * 1000
        return None, cpus, len(cpus) * 1000
    millicores = sum(_quantity.milli_value(_amount(config.get(field), 'cpu')) for field in ('kubeReserved',
                                                                                            'systemReserved'))
    return None, None, millicores


def cpu_manager_problems(config, online_cpus=None):
    """What the kubelet refuses about the reserved CPUs: reservedSystemCPUs outside the online CPUs (any policy), and
    the static CPU manager with no reserved CPU."""
    problem, _cpus, millicores = reserved_cpus(config, online_cpus)
    if problem:
        return [problem]
    if config.get('cpuManagerPolicy') == STATIC_CPU_POLICY and millicores <= 0:
        return ['the static CPU manager requires systemReserved.cpu + kubeReserved.cpu (or reservedSystemCPUs) to be '
                'greater than zero: the kubelet would not start']
    return []


def all_problems(config, capacity_memory_bytes=None, numa_nodes=None, online_cpus=None, version=None):
    return (memory_manager_problems(config, capacity_memory_bytes, numa_nodes, version)
            + cpu_manager_problems(config, online_cpus))


def check(config, capacity_memory_bytes=None, numa_nodes=None, online_cpus=None):
    """Raise ValidationError for the first problem (rules 'memory-manager-reserved-memory', 'cpu-manager-reserved')."""
    found = memory_manager_problems(config, capacity_memory_bytes, numa_nodes)
    if found:
        raise ValidationError('memory-manager-reserved-memory', 'reservedMemory', found[0])
    found = cpu_manager_problems(config, online_cpus)
    if found:
        raise ValidationError('cpu-manager-reserved', 'reservedSystemCPUs' if config.get('reservedSystemCPUs')
                              else 'kubeReserved.cpu + systemReserved.cpu', found[0])


def split_memory(total_bytes, weights):
    """``total_bytes`` over NUMA nodes in proportion to ``weights`` ({node: weight}), each share but the first node's
    a whole number of MiB, the first node taking the rest so the sum is exact (the kubelet compares with Equal)."""
    nodes = sorted(weights)
    weight_sum = sum(weights[node] for node in nodes)
    if not nodes or weight_sum <= 0:
        raise ValueError('no NUMA node with memory to split %d bytes over' % total_bytes)
    shares = {node: (total_bytes * weights[node] // weight_sum) // MIB * MIB for node in nodes[1:]}
    shares[nodes[0]] = total_bytes - sum(shares.values())
    return [{'numaNode': node, 'limits': {'memory': _quantity.format_memory(shares[node])}}
            for node in nodes if shares[node] > 0]


def propose_reserved_memory(config, capacity_memory_bytes, numa_memory_bytes=None, version=None):
    """{'reserved_memory': [...], 'split': str} for ``config`` (the config to be written, static memory manager on).

    The split: in proportion to each NUMA node's MemTotal where the node's sysfs was read (``numa_memory_bytes``,
    {node: bytes}): the daemons outside pods are not pinned to a NUMA node, so their pages land on every node, and
    reserving all on node 0 (the memory-manager page's single-node example) would let the manager promise node 1's
    memory to Guaranteed pods while daemons use it. Otherwise in the proportions the config's reservedMemory already
    has (the kubelet accepted those nodes at its last start); else all on node 0. Hugepages entries are dropped: the
    kubelet refuses any (see the module docstring).
    """
    wanted = node_allocatable_memory(config, capacity_memory_bytes, version)
    if wanted is None:
        return {'reserved_memory': None, 'split': 'the hard memory.available threshold is a percentage and the '
                "node's memory is not known"}
    total = int(wanted.to_integral_value(rounding=decimal.ROUND_UP))
    if total != wanted:  # a fractional byte cannot be split into whole-byte shares that sum Equal
        return {'reserved_memory': None, 'split': 'the reservation %s is not a whole number of bytes: set '
                'kubeReserved/systemReserved memory in whole bytes' % wanted}
    if numa_memory_bytes:
        return {'reserved_memory': split_memory(total, numa_memory_bytes),
                'split': 'in proportion to each NUMA node\'s MemTotal (/sys/devices/system/node/node*/meminfo)'}
    _problems, seen = reserved_memory_problems(config)
    existing = {node: int(value) for (node, resource), value in seen.items() if resource == 'memory' and value > 0}
    if existing:
        return {'reserved_memory': split_memory(total, existing),
                'split': 'in the proportions of the reservedMemory in force (its NUMA nodes the kubelet accepted)'}
    return {'reserved_memory': split_memory(total, {0: 1}), 'split': 'all on NUMA node 0 (no NUMA layout known)'}


def propose_cpu(config, reserved_millicores, online_cpus=None):
    """What the static CPU manager makes of a CPU reservation, and the whole CPUs to reserve instead.

    {'whole_cpus': n, 'reserved_system_cpus': '0-1' or None, 'reason': str}. ``reservedSystemCPUs`` is proposed only
    where the config already uses it (it then overrides kubeReserved/systemReserved cpu): the lowest online ids, as the
    kubelet itself takes the lowest cores when it picks."""
    whole = max(1, -(-int(reserved_millicores) // 1000))
    strict = str((config.get('cpuManagerPolicyOptions') or {}).get(STRICT_CPU_RESERVATION, '')).lower() == 'true'
    reason = ('the static CPU manager keeps ceil(%dm) = %d whole CPU(s) out of the exclusive pool; reserving exactly '
              '%d CPU(s) makes allocatable and the exclusive pool agree' % (reserved_millicores, whole, whole))
    reason += ('; strict-cpu-reservation is on (KEP-4540): those CPUs are also kept from burstable and best-effort pods'
               if strict else '; with the strict-cpu-reservation policy option (KEP-4540) those CPUs would also be '
               'kept from burstable and best-effort pods')
    ids = None
    if config.get('reservedSystemCPUs'):
        pool = sorted(online_cpus or [])
        if len(pool) > whole:
            ids = format_cpu_list(pool[:whole])
            reason += '; reservedSystemCPUs overrides kubeReserved/systemReserved cpu: set it to %s' % ids
        else:
            reason += ('; reservedSystemCPUs overrides kubeReserved/systemReserved cpu: set it to %d CPU id(s) (the '
                       'online CPUs are not known here)' % whole)
    return {'whole_cpus': whole, 'reserved_system_cpus': ids, 'reason': reason}


def reserved_memory_to_write(before, after, capacity_memory_bytes=None, numa_memory_bytes=None, version=None):
    """The reservedMemory to write with a reservation change, so that the static memory manager still starts.

    ``before``: the effective config in force; ``after``: the config the write would leave without touching
    reservedMemory. Returns {'reserved_memory': [...] or None, 'split': str or None, 'problems_before': [str]}.
    Written only where the manager is Static and ``after`` no longer sums while ``before`` does: a reservedMemory that
    still sums is left as it is (no needless restart), and one that did not sum before the change is the operator's
    to set right (hugepages entries among them: the kubelet refuses any, see the module docstring), so nothing is
    proposed over it. Nor where the proposal itself would not start the kubelet (a percentage threshold without
    the capacity, a NUMA node the machine lacks): the caller refuses then, as for any config that does not sum.
    """
    found = {'reserved_memory': None, 'split': None, 'problems_before': []}
    if after.get('memoryManagerPolicy') != STATIC_MEMORY_POLICY:
        return found
    numa_nodes = sorted(numa_memory_bytes) if numa_memory_bytes else None
    if not memory_manager_problems(after, capacity_memory_bytes, numa_nodes, version):
        return found
    found['problems_before'] = memory_manager_problems(before, capacity_memory_bytes, numa_nodes, version)
    if found['problems_before']:
        return found
    proposal = propose_reserved_memory(after, capacity_memory_bytes, numa_memory_bytes, version)
    found['split'] = proposal['split']
    if proposal['reserved_memory'] is not None and not memory_manager_problems(
            dict(after, reservedMemory=proposal['reserved_memory']), capacity_memory_bytes, numa_nodes, version):
        found['reserved_memory'] = proposal['reserved_memory']
    return found
