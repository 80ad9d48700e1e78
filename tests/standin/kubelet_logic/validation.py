"""The start-up refusals of the kubelet that matter to reservations, in the order the kubelet meets them.

Upstream (kubernetes/kubernetes):
* pkg/kubelet/apis/config/validation/validation.go ``ValidateKubeletConfiguration``: systemCgroups
  needs cgroupRoot; healthzPort range; ``enforceNodeAllocatable`` (no duplicate, known keys only,
  ``none`` alone, ``*-reserved`` and ``*-reserved-compressible`` not together, each ``*-reserved`` key
  needs its ``*ReservedCgroup``, every key but ``none`` needs cgroupsPerQOS); ``reservedSystemCPUs``
  not with kubeReservedCgroup/systemReservedCgroup, and a valid cpuset list (k8s.io/utils/cpuset Parse);
* cmd/kubelet/app/server.go ``parseResourceList`` (kubeReserved/systemReserved: cpu, memory,
  ephemeral-storage and pid only, each a non-negative quantity);
* pkg/kubelet/cm/node_container_manager_linux.go ``enforceNodeAllocatableCgroups`` and
  ``enforceExistingCgroup``: enforcing kube-reserved/system-reserved needs a non-empty reservation
  (``getCgroupConfig`` of a nil list is nil: "cgroup is not configured properly") and a cgroup that
  exists; otherwise the container manager fails to start and the kubelet exits.
"""

from __future__ import annotations

import os
import re

from . import quantity

ENFORCEMENT_KEYS = ('pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved',
                    'kube-reserved-compressible', 'none')
RESERVABLE = ('cpu', 'memory', 'ephemeral-storage', 'pid')
DEFAULT_ENFORCE_NODE_ALLOCATABLE = ['pods']  # v1beta1 DefaultNodeAllocatableEnforcement
CPUSET_RANGE = re.compile(r'^([0-9]+)(?:-([0-9]+))?$')


class ValidationError(ValueError):
    pass


def parse_resource_list(resources):
    """server.go parseResourceList: {name: Fraction}, or ValidationError."""
    if not resources:
        return None
    parsed = {}
    for name, text in sorted(resources.items()):
        if name not in RESERVABLE:
            raise ValidationError('cannot reserve "%s" resource' % name)
        try:
            amount = quantity.parse(text)
        except quantity.QuantityError as exc:
            raise ValidationError('failed to parse quantity "%s" for "%s" resource: %s' % (text, name, exc))
        if amount < 0:
            raise ValidationError('resource quantity for "%s" cannot be negative: %s' % (name, text))
        parsed[name] = amount
    return parsed


def parse_cpuset(text):
    """k8s.io/utils/cpuset Parse: '0-3,8' -> {0,1,2,3,8}; '' is the empty set."""
    cpus = set()
    if text == '':
        return cpus
    for part in text.split(','):
        match = CPUSET_RANGE.match(part)
        if not match:
            raise ValidationError('invalid cpuset list element %r' % part)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValidationError('invalid range %r (%d > %d)' % (part, first, last))
        cpus.update(range(first, last + 1))
    return cpus


def validate_configuration(config):
    """ValidateKubeletConfiguration, the checks that touch reservations; returns the list of errors."""
    errors = []
    if config.get('systemCgroups') and not config.get('cgroupRoot'):
        errors.append('invalid configuration: systemCgroups (--system-cgroups) was specified and cgroupRoot '
                      '(--cgroup-root) was not specified')
    port = config.get('healthzPort', 10248)
    if port != 0 and not 1 <= port <= 65535:
        errors.append('invalid configuration: healthzPort (--healthz-port) %s must be between 1 and 65535, inclusive' % port)
    enforce = config.get('enforceNodeAllocatable', DEFAULT_ENFORCE_NODE_ALLOCATABLE)
    keys = set(enforce)
    for plain, compressible in (('system-reserved', 'system-reserved-compressible'),
                                ('kube-reserved', 'kube-reserved-compressible')):
        if plain in keys and compressible in keys:
            errors.append('invalid configuration: both "%s" and "%s" cannot be specified together in '
                          'enforceNodeAllocatable (--enforce-node-allocatable)' % (plain, compressible))
    seen = set()
    for key in enforce:
        if key in seen:
            errors.append('invalid configuration: duplicated enforcements "%s" in enforceNodeAllocatable '
                          '(--enforce-node-allocatable)' % key)
            continue
        seen.add(key)
        if key in ('system-reserved', 'system-reserved-compressible') and not config.get('systemReservedCgroup'):
            errors.append('invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified '
                          'when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable '
                          '(--enforce-node-allocatable)')
        elif key in ('kube-reserved', 'kube-reserved-compressible') and not config.get('kubeReservedCgroup'):
            errors.append('invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified '
                          'when "kube-reserved" or "kube-reserved-compressible" included in enforceNodeAllocatable '
                          '(--enforce-node-allocatable)')
        elif key == 'none':
            if len(enforce) > 1:
                errors.append('invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not '
                              'contain additional enforcements when "none" is specified')
            continue
        elif key not in ENFORCEMENT_KEYS:
            errors.append('invalid configuration: option "%s" specified for enforceNodeAllocatable '
                          '(--enforce-node-allocatable). Valid options are "pods", "system-reserved", '
                          '"system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"' % key)
            continue
        if not config.get('cgroupsPerQOS', True):
            errors.append('invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "%s" '
                          'contained in enforceNodeAllocatable (--enforce-node-allocatable)' % key)
    cpus = config.get('reservedSystemCPUs') or ''
    if cpus:
        if config.get('systemReservedCgroup') or config.get('kubeReservedCgroup'):
            errors.append("invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with "
                          'systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)')
        try:
            parse_cpuset(cpus)
        except ValidationError as exc:
            errors.append('invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) %s, error: %s'
                          % (cpus, exc))
    return errors


def cgroup_path(name, driver):
    """The cgroupfs path of a kube/system reserved cgroup name (systemd: 'a-b.slice' -> 'a.slice/a-b.slice')."""
    name = name.strip('/')
    if driver != 'systemd' or not name.endswith('.slice'):
        return name
    # cm/cgroup_manager_linux.go: a systemd slice name is expanded into its parents.
    parts = name[:-len('.slice')].split('-')
    return '/'.join('-'.join(parts[:i + 1]) + '.slice' for i in range(len(parts)))


def enforce_reserved_cgroups(config, kube_reserved, system_reserved, cgroup_exists):
    """enforceNodeAllocatableCgroups' kube/system reserved part: the first error, or None.

    ``cgroup_exists(relative_path)`` answers whether the cgroup is there (cgroupManager.Validate/Exists).
    """
    enforce = config.get('enforceNodeAllocatable', DEFAULT_ENFORCE_NODE_ALLOCATABLE)
    driver = config.get('cgroupDriver', 'cgroupfs')
    for key, label, cgroup_field, resources in (
            ('system-reserved', 'System Reserved', 'systemReservedCgroup', system_reserved),
            ('kube-reserved', 'Kube Reserved', 'kubeReservedCgroup', kube_reserved),
            ('system-reserved-compressible', 'System Reserved Compressible', 'systemReservedCgroup', system_reserved),
            ('kube-reserved-compressible', 'Kube Reserved Compressible', 'kubeReservedCgroup', kube_reserved)):
        if key not in enforce:
            continue
        name = config.get(cgroup_field) or ''
        if not resources:
            return 'Failed to enforce %s Cgroup Limits on "%s": "%s" cgroup is not configured properly' % (label, name, name)
        if not cgroup_exists(cgroup_path(name, driver)):
            return 'Failed to enforce %s Cgroup Limits on "%s": cgroup "%s" does not exist' % (label, name, name)
    return None


def cgroup_exists_under(roots):
    """A cgroup_exists for enforce_reserved_cgroups: the group is a directory under every hierarchy root."""
    return lambda relative: all(os.path.isdir(os.path.join(root, relative)) for root in roots)
