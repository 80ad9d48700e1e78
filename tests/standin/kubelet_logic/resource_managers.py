"""The CPU and memory managers' start-up refusals, in the order NewContainerManager meets them.

Upstream (kubernetes/kubernetes), read for the stand-in on its own:
* pkg/kubelet/apis/config/validation/validation_reserved_memory.go ``validateReservedMemoryConfiguration``, part of
  ``ValidateKubeletConfiguration`` whatever the policy: limits named ``memory`` or ``hugepages-*`` only, none zero,
  no NUMA node and type twice;
* cmd/kubelet/app/server.go ``getReservedCPUs``: reservedSystemCPUs within the online CPUs, then it overwrites
  kubeReserved/systemReserved cpu (systemReserved cpu = the count, kubeReserved cpu dropped);
* pkg/kubelet/cm/cpumanager/cpu_manager.go ``NewManager`` (policy ``static``): the Node Allocatable reservation's cpu
  must be there and not zero;
* pkg/kubelet/cm/memorymanager/memory_manager.go ``NewManager`` (policy ``Static``) -> ``validateReservedMemory``:
  every NUMA node named must exist; per type, the sum over NUMA nodes must equal the Node Allocatable reservation of
  that type (kube + system + hard eviction for memory; nothing can reserve hugepages there, so 0); then
  policy_static.go ``NewPolicyStatic`` wants a total above zero.
The Node Allocatable reservation (node_container_manager_linux.go ``GetNodeAllocatableReservation``) drops a resource
whose sum is zero: the CPU manager then fails on the missing key.
"""

from __future__ import annotations

from fractions import Fraction

from . import eviction, quantity


class ManagerError(ValueError):
    pass


def reserved_memory_errors(config):
    """validateReservedMemoryConfiguration: its error list (empty when fine)."""
    errors, seen = [], set()
    for entry in config.get('reservedMemory') or []:
        node = entry.get('numaNode', 0)
        for name, text in sorted((entry.get('limits') or {}).items()):
            if not (name == 'memory' or name.startswith('hugepages-')):
                errors.append('invalid configuration: the limit type "%s" for NUMA node %d is not supported, only '
                              '[memory hugepages-<HugePageSize>] is accepted' % (name, node))
            if quantity.parse(str(text)) == 0:
                errors.append('invalid configuration: reserved memory may not be zero for NUMA node %d and resource '
                              '"%s"' % (node, name))
            if (node, name) in seen:
                errors.append('invalid configuration: the reserved memory has a duplicate value for NUMA node %d and '
                              'resource "%s"' % (node, name))
            seen.add((node, name))
    return errors


def overwrite_reserved_cpus(config, kube_reserved, system_reserved, online_cpus, parse_cpuset):
    """server.go: the reserved CPU list and the (kube, system) reservations after its overwrite."""
    text = config.get('reservedSystemCPUs') or ''
    if not text:
        return set(), kube_reserved, system_reserved
    cpus = parse_cpuset(text)
    if online_cpus is not None and not cpus <= set(online_cpus):
        raise ManagerError('reserved-cpus: %s is not a subset of online-cpus' % text)
    kube = dict(kube_reserved or {})
    kube.pop('cpu', None)
    system = dict(system_reserved or {})
    system['cpu'] = Fraction(len(cpus))
    return cpus, kube or None, system


def node_allocatable_reservation(kube_reserved, system_reserved, hard_thresholds, capacity_memory_bytes):
    """GetNodeAllocatableReservation for cpu and memory: {name: Fraction}, zero sums left out."""
    found = {}
    for name in ('cpu', 'memory'):
        total = Fraction(0)
        for reservation in (kube_reserved, system_reserved):
            total += (reservation or {}).get(name, Fraction(0))
        if name == 'memory':
            total += eviction.hard_eviction_memory_bytes(hard_thresholds, capacity_memory_bytes)
        if total != 0:
            found[name] = total
    return found


def start_managers(config, reservation, numa_nodes):
    """The CPU manager, then the memory manager; raises ManagerError as NewContainerManager fails."""
    if config.get('cpuManagerPolicy', 'none') == 'static':
        if 'cpu' not in reservation:
            raise ManagerError('[cpumanager] unable to determine reserved CPU resources for static policy')
    if config.get('memoryManagerPolicy', 'None') != 'Static':
        return
    sums = {}
    for entry in config.get('reservedMemory') or []:
        node = entry.get('numaNode', 0)
        if numa_nodes is not None and node not in numa_nodes:
            raise ManagerError('the reserved memory configuration references a NUMA node %d that does not exist on '
                               'this machine' % node)
        for name, text in (entry.get('limits') or {}).items():
            sums[name] = sums.get(name, Fraction(0)) + quantity.parse(str(text))
    for name in set(sums) | {'memory'}:
        wanted = reservation.get(name, Fraction(0)) if name == 'memory' else Fraction(0)
        if sums.get(name, Fraction(0)) != wanted:
            raise ManagerError('the total amount "%s" of type "%s" is not equal to the value "%s" determined by Node '
                               'Allocatable feature' % (sums.get(name, 0), name, wanted))
    if sums.get('memory', 0) <= 0:
        raise ManagerError('[memorymanager] you should specify the system reserved memory')
