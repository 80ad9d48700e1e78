# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Validation of the reservation and eviction fields of a KubeletConfiguration.

Each rule mirrors a check the kubelet makes before it runs, so a config we
write is one the kubelet will start with:

* ``reserved-resources``: cmd/kubelet/app/server.go ``parseResourceList``:
  only ``cpu``, ``memory``, ``ephemeral-storage`` and ``pid`` may be reserved,
  each a valid quantity, none negative.
* ``eviction-thresholds``: pkg/kubelet/eviction/helpers.go
  ``ParseThresholdConfig``: known signals, percentages within 0-100%,
  positive quantities; every soft threshold has a grace period
  (``evictionSoftGracePeriod``, a Go duration, not negative); minimum
  reclaims are non-negative quantities or percentages.
  A soft threshold the kubelet disables (``0%``, ``100%``) needs no grace period:
  ``ParseThresholdConfig`` skips it before looking for one.
* ``enforce-node-allocatable``: pkg/kubelet/apis/config/validation/validation.go
  ``ValidateKubeletConfiguration``: values among ``pods``, ``system-reserved``,
  ``kube-reserved``, ``system-reserved-compressible``, ``kube-reserved-compressible``,
  ``none``, none of them twice ("duplicated enforcements"); the ``*-reserved``
  ones need their cgroup set; ``none`` stands alone; enforcement needs
  ``cgroupsPerQOS``.
* ``reserved-cgroups``: the same function: ``reservedSystemCPUs`` cannot be used with
  ``kubeReservedCgroup``/``systemReservedCgroup``; ``systemCgroups`` needs
  ``cgroupRoot``.
* ``enforce-reserved-cgroup``: pkg/kubelet/cm/node_container_manager_linux.go
  ``enforceNodeAllocatableCgroups`` / ``enforceExistingCgroup``: the container
  manager fails to start when a ``*-reserved`` enforcement has no reservation
  (cmd/kubelet/app/server.go ``parseResourceList`` returns nil for an empty map and
  ``getCgroupConfig(nil)`` is nil: "cgroup is not config properly"), or when its
  cgroup does not exist on the node ("cgroup does not exist"; checked only when
  the caller knows the node's cgroups).
* ``reservation-within-capacity``: pkg/kubelet/cm/node_container_manager_linux.go
  ``validateNodeAllocatable``: reservations plus hard eviction may not exceed
  capacity.
* ``memory-manager-reserved-memory`` and ``cpu-manager-reserved``: the static memory manager's reservedMemory sum
  and the static CPU manager's reserved CPU (_resource_managers, which cites the kubelet's source); the NUMA
  nodes and online CPUs are checked where the caller knows them (_node_plan), the sums here.
* ``kubepods-limit-above-usage`` (ours, not the kubelet's): the new kubepods
  limit must stay above what pods use now plus a margin, or the kernel would
  reclaim and OOM-kill running pods when the kubelet applies it.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction, _node_allocatable, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._duration import parse_duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ValidationError

RESERVABLE = ('cpu', 'memory', 'ephemeral-storage', 'pid')
ENFORCEMENT_CGROUP = {
    'system-reserved': 'systemReservedCgroup',
    'kube-reserved': 'kubeReservedCgroup',
    'system-reserved-compressible': 'systemReservedCgroup',
    'kube-reserved-compressible': 'kubeReservedCgroup',
}
ENFORCEMENT_VALUES = ('pods',) + tuple(ENFORCEMENT_CGROUP) + ('none',)


def check_reserved(config, field):
    """``config[field]`` (kubeReserved or systemReserved) as ValidateKubeletConfiguration takes it; raises
    ValidationError. Also _node_plan's, on the reservations in force before it diffs against them."""
    reserved = config.get(field)
    if reserved is None:
        return
    if not isinstance(reserved, dict):
        raise ValidationError('reserved-resources', field, 'must be a mapping of resource to quantity')
    for resource, value in reserved.items():
        if resource not in RESERVABLE:
            raise ValidationError('reserved-resources', '%s.%s' % (field, resource),
                                  'cannot reserve %r resource (only %s)' % (resource, ', '.join(RESERVABLE)))
        try:
            quantity = _quantity.parse_quantity(str(value) if isinstance(value, (int, float)) else value)
        except ValueError as exc:
            raise ValidationError('reserved-resources', '%s.%s' % (field, resource),
                                  'failed to parse quantity %r: %s' % (value, exc))
        if quantity < 0:
            raise ValidationError('reserved-resources', '%s.%s' % (field, resource),
                                  'resource quantity cannot be negative: %s' % value)


def _check_map(config, field):
    value = config.get(field)
    if value is not None and not isinstance(value, dict):
        raise ValidationError('eviction-thresholds', field, 'must be a mapping of signal to value')
    return value or {}


def _check_eviction(config):
    for field in ('evictionHard', 'evictionSoft'):
        for signal, value in _check_map(config, field).items():
            try:
                _eviction.parse_threshold(signal, value)
            except ValueError as exc:
                raise ValidationError('eviction-thresholds', '%s.%s' % (field, signal), str(exc))
    grace = _check_map(config, 'evictionSoftGracePeriod')
    for signal, value in grace.items():
        if signal not in _eviction.KNOWN_SIGNALS:
            raise ValidationError('eviction-thresholds', 'evictionSoftGracePeriod.%s' % signal,
                                  'unsupported eviction signal %s' % signal)
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise ValidationError('eviction-thresholds', 'evictionSoftGracePeriod.%s' % signal, str(exc))
        if seconds < 0:
            raise ValidationError('eviction-thresholds', 'evictionSoftGracePeriod.%s' % signal,
                                  'invalid eviction grace period specified: %s, must be a positive value' % value)
    for signal, value in _check_map(config, 'evictionSoft').items():
        # parseThresholdStatement returns nil for 0% and 100%; ParseThresholdConfig skips it
        # before it looks for a grace period (helpers_test.go: "disable via 0%", "disable via 100%").
        if signal not in grace and _eviction.parse_threshold(signal, value) is not None:
            raise ValidationError('eviction-thresholds', 'evictionSoftGracePeriod.%s' % signal,
                                  'grace period must be specified for the soft eviction threshold %s' % signal)
    for signal, value in _check_map(config, 'evictionMinimumReclaim').items():
        field = 'evictionMinimumReclaim.%s' % signal
        if signal not in _eviction.KNOWN_SIGNALS:
            raise ValidationError('eviction-thresholds', field, 'unsupported eviction signal %s' % signal)
        try:
            if isinstance(value, str) and value.endswith('%'):
                if _eviction.parse_percentage(value) <= 0:
                    raise ValueError('eviction percentage minimum reclaim %s must be positive: %s' % (signal, value))
            elif _quantity.parse_quantity(value) < 0:
                raise ValueError('negative eviction minimum reclaim specified for %s' % signal)
        except ValueError as exc:
            raise ValidationError('eviction-thresholds', field, str(exc))
    pressure = config.get('evictionPressureTransitionPeriod')
    if pressure is not None:
        try:
            parse_duration(pressure)
        except ValueError as exc:
            raise ValidationError('eviction-thresholds', 'evictionPressureTransitionPeriod', str(exc))


def _check_enforcement(config):
    values = config.get('enforceNodeAllocatable')
    if values is None:
        return
    if not isinstance(values, list):
        raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable', 'must be a list')
    seen = set()
    for value in values:
        if value in seen:
            raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable',
                                  'duplicated enforcements %r in enforceNodeAllocatable' % value)
        seen.add(value)
        if value not in ENFORCEMENT_VALUES:
            raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable',
                                  'option %r specified for enforceNodeAllocatable. Valid options are %s'
                                  % (value, ', '.join(repr(v) for v in ENFORCEMENT_VALUES)))
        cgroup_field = ENFORCEMENT_CGROUP.get(value)
        if cgroup_field and not config.get(cgroup_field):
            raise ValidationError('enforce-node-allocatable', cgroup_field,
                                  'must be specified when %r contained in enforceNodeAllocatable' % value)
        if value == 'none' and len(values) > 1:
            raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable',
                                  "may not contain additional enforcements when 'none' is specified")
    for full, compressible in (('system-reserved', 'system-reserved-compressible'),
                               ('kube-reserved', 'kube-reserved-compressible')):
        if full in values and compressible in values:
            raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable',
                                  '%r and %r cannot be specified together' % (full, compressible))
    if config.get('cgroupsPerQOS') is False and [v for v in values if v != 'none']:
        raise ValidationError('enforce-node-allocatable', 'enforceNodeAllocatable',
                              'is not supported unless cgroupsPerQOS is true')


def _check_reserved_cgroups(config):
    if config.get('reservedSystemCPUs') and (config.get('systemReservedCgroup') or config.get('kubeReservedCgroup')):
        raise ValidationError('reserved-cgroups', 'reservedSystemCPUs',
                              "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup "
                              "(--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
    if config.get('systemCgroups') and not config.get('cgroupRoot'):
        raise ValidationError('reserved-cgroups', 'systemCgroups',
                              'systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) '
                              'was not specified')


def reserved_cgroup_path(name, driver):
    """Where the kubelet looks for a ``*ReservedCgroup`` under each controller's root.

    pkg/kubelet/cm/cgroup_manager_linux.go ``CgroupName``: with the systemd driver
    the name is read by ``ParseSystemdToCgroupName`` (last path element, ``.slice``
    dropped, split at ``-``) and found at ``ToSystemd`` (libcontainer ``ExpandSlice``),
    so ``/kube-reserved.slice`` lives at ``kube.slice/kube-reserved.slice`` and
    ``/kubelet.service`` at ``kubelet.service.slice``; with cgroupfs the name is the path.
    """
    if driver != 'systemd':
        return name.strip('/')
    base = name.rstrip('/').rsplit('/', 1)[-1]
    if base.endswith('.slice'):
        base = base[:-len('.slice')]
    parts = [part.replace('_', '-').replace('-', '_') for part in base.split('-')]
    if parts == ['']:
        return ''
    return '/'.join('-'.join(parts[:i + 1]) + '.slice' for i in range(len(parts)))


RESERVATION_FIELD = {'systemReservedCgroup': 'systemReserved', 'kubeReservedCgroup': 'kubeReserved'}


def _check_enforced_cgroups(config, cgroup_exists):
    enforced = [v for v in config.get('enforceNodeAllocatable') or [] if v in ENFORCEMENT_CGROUP]
    for value in enforced:
        cgroup_field = ENFORCEMENT_CGROUP[value]
        reservation_field = RESERVATION_FIELD[cgroup_field]
        cgroup = config.get(cgroup_field)
        if not config.get(reservation_field):
            raise ValidationError('enforce-reserved-cgroup', reservation_field,
                                  'is empty while %r is enforced: the kubelet fails to start its container '
                                  'manager (%r cgroup is not config properly)' % (value, cgroup))
        # The kubelet's default cgroupDriver (v1beta1 defaults.go) is cgroupfs.
        path = reserved_cgroup_path(cgroup, config.get('cgroupDriver') or 'cgroupfs')
        if cgroup_exists is not None and not cgroup_exists(path):
            raise ValidationError('enforce-reserved-cgroup', cgroup_field,
                                  '%r is enforced on %r, and %r does not exist on this node: the kubelet fails '
                                  'to start its container manager (cgroup does not exist)' % (value, cgroup, '/' + path))


def validate(config, capacity_memory_bytes=None, capacity_millicores=None,
             kubepods_working_set_bytes=None, kubepods_margin_bytes=0, hugepages_bytes=0, cgroup_exists=None):
    """Check ``config`` (the effective KubeletConfiguration as a dict); returns the rules checked.

    ``cgroup_exists``, when given, answers whether a cgroup path relative to the
    controllers' root (``system.slice``) exists on the node; without it that check is skipped.
    Raises ValidationError for the first rule that fails.
    """
    checked = []
    check_reserved(config, 'kubeReserved')
    check_reserved(config, 'systemReserved')
    checked.append('reserved-resources')
    _check_eviction(config)
    checked.append('eviction-thresholds')
    _check_enforcement(config)
    checked.append('enforce-node-allocatable')
    _check_reserved_cgroups(config)
    checked.append('reserved-cgroups')
    _check_enforced_cgroups(config, cgroup_exists)
    checked.append('enforce-reserved-cgroup')
    _resource_managers.check(config, capacity_memory_bytes)
    checked.extend(('memory-manager-reserved-memory', 'cpu-manager-reserved'))
    if capacity_memory_bytes is None or capacity_millicores is None:
        return checked

    derived = _node_allocatable.compute_for_config(config, capacity_memory_bytes, capacity_millicores,
                                                   hugepages_bytes)
    if derived['reservation_exceeds_capacity']['memory']:
        raise ValidationError('reservation-within-capacity', 'kubeReserved.memory + systemReserved.memory',
                              'reserve %d bytes with hard eviction %d bytes, above memory capacity %d'
                              % (derived['kube_reserved_memory_bytes'] + derived['system_reserved_memory_bytes'],
                                 derived['eviction_hard_memory_bytes'], capacity_memory_bytes))
    if derived['reservation_exceeds_capacity']['cpu']:
        raise ValidationError('reservation-within-capacity', 'kubeReserved.cpu + systemReserved.cpu',
                              'reserve %dm, above CPU capacity %dm'
                              % (derived['kube_reserved_millicores'] + derived['system_reserved_millicores'],
                                 capacity_millicores))
    checked.append('reservation-within-capacity')
    if kubepods_working_set_bytes is not None and derived['enforces_pods']:
        needed = kubepods_working_set_bytes + kubepods_margin_bytes
        if derived['kubepods_memory_limit_bytes'] < needed:
            raise ValidationError('kubepods-limit-above-usage', 'kubeReserved.memory + systemReserved.memory',
                                  'the new kubepods limit %d bytes is below what pods use now (%d bytes) plus the '
                                  'margin (%d bytes); the kernel would reclaim and OOM-kill running pods'
                                  % (derived['kubepods_memory_limit_bytes'], kubepods_working_set_bytes,
                                     kubepods_margin_bytes))
        checked.append('kubepods-limit-above-usage')
    return checked
