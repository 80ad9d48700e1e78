# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Propose ``enforceNodeAllocatable`` with ``system-reserved-compressible`` where PSI shows the daemons starved for CPU.

What the key does (kubernetes/kubernetes pkg/kubelet/cm/node_container_manager_linux.go, from 1.32,
kubernetes/kubernetes#125982): ``enforceExistingCgroup(..., compressibleResources=true)`` writes only the CPU
part of the reservation to the reserved cgroup: ``cpu.shares = MilliCPUToShares(reserved millicores)`` (v1), or
that converted to ``cpu.weight`` (v2, ``CpuSharesToCpuWeight``). No memory limit, no pids limit, no memory.min. So
its only effect is the reserved group's CPU weight against kubepods', which is what decides the daemons' share
of a busy node (_cpu_guarantee). It helps only when that weight is above the one the group has now: on cgroup v2
systemd gives system.slice ``cpu.weight`` 100, which the kubelet's conversion passes only from 2563m reserved
(v1: the default ``cpu.shares`` 1024 from 1001m), so a smaller reservation enforced this way *lowers* the
daemons' share. We propose it only where it
raises the guaranteed CPU.

The evidence of starvation is PSI (Documentation/accounting/psi.rst): a v2 group's ``cpu.pressure`` ``some``
line gives the share of wall time in which at least one of its tasks was runnable but waiting for a CPU, as
averages over the last 10, 60 and 300 seconds. We call the daemons starved when ``some avg300`` of
``system.slice`` or of the kubelet's or the runtime's group reaches ``STARVED_SOME_AVG300_PERCENT`` (10 %):
the five-minute average, because the facts are one reading and a build or an image pull stalls for seconds;
10 %, because a busy node's daemons mostly stay under a few percent (the build machine's /proc/pressure/cpu
read avg300 0.73 under a full test run), while a tenth of the time spent waiting is a kubelet whose 1-second PLEG
relist and 10-second status loops routinely run late. A small node can cross it without a fault: a 1-vCPU test
guest, its kubelet just restarted after a series of tests on a loaded host, read 10.95 % on system.slice. That
costs a report line, not a write: the proposal is never applied by the role, and only where it raises the weight.
cgroup v1 has no per-group pressure: no proposal there.

The proposed change is validated as any change (_config_rules.validate, with the node's cgroups, and
_version_rules.check for the kubelet's version): the kubelet refuses the compressible keys before 1.32, with
their full counterpart, without ``systemReservedCgroup``/``kubeReservedCgroup``, with ``reservedSystemCPUs``
beside a reserved cgroup, with ``none``, and fails to start when the named group does not exist.
"""

from __future__ import annotations

import copy
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _config_rules, _defaults, _quantity, _version_rules)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee

STARVED_SOME_AVG300_PERCENT = 10.0
SYSTEM_SLICE = '/system.slice'


def starved_groups(pressure, groups, threshold=STARVED_SOME_AVG300_PERCENT):
    """[(cgroup, some avg300 %, some avg60 %)] of ``groups`` ('/system.slice', ...) at or above ``threshold``."""
    found = []
    for name in groups:
        some = (((pressure or {}).get('cgroups') or {}).get(name) or {}).get('cpu', {}).get('some') or {}
        if some.get('avg300', 0.0) >= threshold:
            found.append((name, some.get('avg300', 0.0), some.get('avg60', 0.0)))
    return found


def validate_change(config, changes, version, cgroup_version, cgroup_exists=None):
    """Check ``config`` with ``changes`` applied as the kubelet would at its next start.

    Returns {'refusal': str or None, 'rules_checked': [...], 'warnings': [...]}: the first rule of
    _config_rules that fails, else the first refusal of that kubelet version (_version_rules.check).
    """
    proposed = copy.deepcopy(config or {})
    proposed.update(copy.deepcopy(changes))
    result = {'refusal': None, 'rules_checked': [], 'warnings': []}
    try:
        result['rules_checked'] = _config_rules.validate(proposed, cgroup_exists=cgroup_exists)
    except _config_rules.ValidationError as exc:
        result['refusal'] = str(exc)
        return result
    verdict = _version_rules.check(version, cgroup_version, proposed)
    result['rules_checked'].append('kubelet-version')
    result['warnings'] = verdict['warnings']
    if verdict['refusals']:
        result['refusal'] = verdict['refusals'][0]
    return result


def _millicores(reservation):
    value = (reservation or {}).get('cpu')
    return 0 if value in (None, '') else _quantity.milli_value(_quantity.parse_quantity(str(value)))


def _under(group, parent):
    return group == parent or group.startswith(parent.rstrip('/') + '/')


# (key, its full counterpart, the cgroup field, the reservation field, the reserved/recommended map's key)
TARGETS = (('system-reserved-compressible', 'system-reserved', 'systemReservedCgroup', 'systemReserved',
            'system_reserved'),
           ('kube-reserved-compressible', 'kube-reserved', 'kubeReservedCgroup', 'kubeReserved', 'kube_reserved'))


def propose(config, reserved, pressure, component_cgroups, cgroup_version, capacity_millicores, weights_now,
            version, driver=None, cgroup_exists=None, threshold=STARVED_SOME_AVG300_PERCENT):
    """The enforcement proposal for one node.

    ``config``: the effective KubeletConfiguration; ``reserved``: {'system_reserved': {...}, 'kube_reserved': {...}}
    as they would be written (the recommendation or the decision); ``pressure``: _cpu_guarantee.pressure's result;
    ``component_cgroups``: the kubelet's and runtime's groups ('system.slice/kubelet.service'); ``weights_now``:
    {'/system.slice': cpu.shares or cpu.weight read now, ...} (a missing or None value: the kernel default).
    ``system-reserved-compressible`` goes on ``systemReservedCgroup`` (``/system.slice`` when the config names
    none: where systemd runs the daemons, the kubelet and the runtime included);
    ``kube-reserved-compressible`` only where the config already names a ``kubeReservedCgroup`` holding them.
    Returns {'proposed', 'changes', 'reasons', 'targets': [...], 'starved', 'threshold_some_avg300_percent',
    'validation'}; ``validation`` is validate_change's answer for the whole change ({'refusal': ...}).
    """
    config = config or {}
    result = {'proposed': False, 'changes': {}, 'reasons': [], 'targets': [], 'starved': [],
              'threshold_some_avg300_percent': threshold, 'validation': None}
    if cgroup_version != 'v2':
        result['reasons'].append('cgroup v1: no per-cgroup PSI to show the daemons starved; nothing proposed')
        return result
    components = ['/' + c.strip('/') for c in component_cgroups or [] if c]
    daemons = [SYSTEM_SLICE] + [c for c in components if c != SYSTEM_SLICE]
    result['starved'] = [{'cgroup': c, 'some_avg300_percent': a300, 'some_avg60_percent': a60}
                         for c, a300, a60 in starved_groups(pressure, daemons, threshold)]
    if not result['starved']:
        result['reasons'].append('no daemon group waits for CPU %.0f %% of the time or more (cpu.pressure some avg300 '
                                 'of %s): nothing to enforce' % (threshold, ', '.join(daemons)))
        return result
    enforced = _defaults.effective_enforce_node_allocatable(config.get('enforceNodeAllocatable'))
    if 'none' in enforced:
        result['reasons'].append("enforceNodeAllocatable is ['none']: the kubelet refuses 'none' beside another key, "
                                 'and enforcing again would also limit kubepods: not proposed')
        return result
    keys, changes = set(enforced), {}
    for spec in TARGETS:
        _propose_target(spec, config, reserved, result, keys, changes, cgroup_version, capacity_millicores,
                        weights_now, driver)
    if not any(t['proposed'] for t in result['targets']):
        return result
    changes['enforceNodeAllocatable'] = sorted(keys, key=_config_rules.ENFORCEMENT_VALUES.index)
    result['validation'] = validate_change(config, dict(changes, systemReserved=reserved.get('system_reserved'),
                                                        kubeReserved=reserved.get('kube_reserved')),
                                           version, 'v2', cgroup_exists)
    if result['validation']['refusal']:
        result['reasons'].append('the kubelet would refuse it: %s' % result['validation']['refusal'])
        return result
    result['changes'] = changes
    result['proposed'] = True
    return result


def _propose_target(spec, config, reserved, result, keys, changes, cgroup_version, capacity_millicores, weights_now,
                    driver):
    """One entry of TARGETS: its target and reason added to ``result``; when proposed, its key added to ``keys`` and
    the cgroup field it needs to ``changes``."""
    key, full, cgroup_field, reservation_field, reserved_key = spec
    named = config.get(cgroup_field)
    if key == 'kube-reserved-compressible' and not named:
        return  # no group of its own: the kubelet and the runtime are system.slice's, covered above
    group = '/' + _config_rules.reserved_cgroup_path(named or SYSTEM_SLICE, driver or 'cgroupfs')
    starved = [s for s in result['starved'] if _under(s['cgroup'], group)]
    target = {'key': key, 'cgroup': group, 'starved': [s['cgroup'] for s in starved], 'proposed': False,
              'weight_now': None, 'weight_enforced': None, 'guaranteed_millicores_now': None,
              'guaranteed_millicores_enforced': None}
    result['targets'].append(target)
    if not starved:
        if named:
            # Enforcing on a group the starved ones are not in changes nothing for them.
            result['reasons'].append('%s would weigh %s (%s), which holds none of the starved groups (%s): '
                                     'not proposed there' % (key, group, cgroup_field, ', '.join(
                                         s['cgroup'] for s in result['starved'])))
        return
    if full in keys or key in keys:
        result['reasons'].append('%s is already enforced on %s (its CPU weight is written): nothing to add'
                                 % (full if full in keys else key, group))
        return
    reserved_millicores = _millicores(reserved.get(reserved_key))
    if not reserved_millicores:
        result['reasons'].append('%s has no cpu: %s would write no weight' % (reservation_field, key))
        return
    weight_now = (weights_now or {}).get(group) or _cpu_guarantee.DEFAULT_WEIGHT[cgroup_version]
    weight_enforced = _cpu_guarantee.kubepods_weight(cgroup_version, reserved_millicores)
    target.update(weight_now=weight_now, weight_enforced=weight_enforced)
    guarantee = ''
    if group == SYSTEM_SLICE:
        guarantee = _system_slice_guarantee(target, reserved, reserved_millicores, keys, cgroup_version,
                                            capacity_millicores)
    unit = 'cpu.shares' if cgroup_version == 'v1' else 'cpu.weight'
    if weight_enforced <= weight_now:
        result['reasons'].append(
            '%s would write %s %d on %s (from %s cpu %dm), not above its %d now: it would lower the daemons\' '
            'share of a busy node; not proposed (reserve more CPU for it to help)'
            % (key, unit, weight_enforced, group, reservation_field, reserved_millicores, weight_now))
        return
    target['proposed'] = True
    keys.add(key)
    if not named:
        changes[cgroup_field] = group
    result['reasons'].append(
        '%s: enforcing %s writes %s %d on %s (from %s cpu %dm) instead of %d%s'
        % ('; '.join('%s waits for CPU %.1f %% of the last 5 min' % (s['cgroup'], s['some_avg300_percent'])
                     for s in starved), key, unit, weight_enforced, group, reservation_field,
           reserved_millicores, weight_now, guarantee))


def _system_slice_guarantee(target, reserved, reserved_millicores, keys, cgroup_version, capacity_millicores):
    """The daemons' guaranteed CPU under contention now and once enforced (set on ``target``), as a clause."""
    # kubepods' weight comes from the node allocatable CPU when 'pods' is enforced, else from capacity.
    pods_millicores = capacity_millicores - ((reserved_millicores + _millicores(reserved.get('kube_reserved')))
                                             if 'pods' in keys else 0)
    now = _cpu_guarantee.guaranteed_millicores(cgroup_version, capacity_millicores, target['weight_now'],
                                               pods_millicores)
    after = _cpu_guarantee.guaranteed_millicores(cgroup_version, capacity_millicores, target['weight_enforced'],
                                                 pods_millicores)
    target.update(guaranteed_millicores_now=now, guaranteed_millicores_enforced=after)
    return ': the daemons\' guaranteed CPU under contention goes from %dm to %dm' % (now, after)


def assess(measurement, config, reserved, kubelet_version):
    """The facts' ``enforcement_proposal`` for a measured node (``measurement``: _gather.measure's answer)."""
    cgroup = measurement['cgroup']
    pressure = measurement.get('pressure') or {}
    components = [c.strip('/') for c in pressure.get('cgroups') or {} if c != SYSTEM_SLICE]
    weights = {SYSTEM_SLICE: measurement['cpu_weights'].get('system_slice_weight')}
    for group in (measurement.get('memory_protection') or {}).get('cgroups') or []:
        if group['role'] != 'kubepods' and group.get('cpu_weight'):
            weights[group['cgroup']] = group['cpu_weight']
    root = cgroup['memory_root']
    return propose(config, reserved, pressure, components, cgroup['version'], measurement['cpu']['capacity_millicores'],
                   weights, kubelet_version, driver=(config or {}).get('cgroupDriver') or cgroup.get('driver'),
                   cgroup_exists=lambda relative: os.path.isdir(os.path.join(root, relative)))
