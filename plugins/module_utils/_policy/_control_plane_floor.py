# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The floor under a control-plane node's measured reservation: 1 GiB of memory and 500m of CPU.

A control-plane node (_node/_control_plane: its static pods run the API server or etcd) reserves at least what
OpenShift reserves on every control-plane node it runs: ``SYSTEM_RESERVED_MEMORY=1Gi``, ``SYSTEM_RESERVED_CPU=500m``
(openshift/machine-config-operator pkg/controller/kubelet-config/kubelet_config_autosizing.go at 0a8e1230,
``DefaultAutoSizingEnvContent``; the same fixed values since the auto node sizing enhancement,
openshift/enhancements enhancements/kubelet/kubelet-node-sizing.md). A quiet history (no upgrade in the window, no
etcd defragmentation, no image pulls of a new release) can measure less than a control plane's daemons need on the
day they do; the floor keeps the node from reserving less than a distribution that runs control planes in production.

Why this floor and not the largest vendor formula for the node's size: a control plane's etcd and API server are
pods. A larger reservation lowers allocatable and the kubepods cgroup's limit they run under. OpenShift turned
auto-sizing (its size formula, _kubelet/_vendor_formulas.openshift) on for every pool in 4.21 and back off for
control planes (machine-config-operator#5491, after OCPBUGS-66420): on control planes it reserved about 2 GiB more,
and during upgrades etcd and the API server starved and failed in cascade. So the floor is the fixed reservation that
OpenShift kept for its control planes, not a formula that grows with the node: above it the measurement decides, and
the ceiling (max_reserved_fraction) still applies after it. It applies to the measured policy only (a vendor
``policy`` is taken as named, as ``floor_policy`` is).
"""

from __future__ import annotations

MIB = 1024 * 1024
GIB = 1024 * MIB
MEMORY_BYTES = GIB
MILLICORES = 500
SOURCE = ("OpenShift's fixed control-plane reservation (machine-config-operator kubelet_config_autosizing.go "
          "DefaultAutoSizingEnvContent: SYSTEM_RESERVED_MEMORY=1Gi, SYSTEM_RESERVED_CPU=500m; auto-sizing kept off for "
          'control planes, machine-config-operator#5491)')


def apply(reserved_memory_bytes, reserved_millicores, control_plane, lines):
    """(memory bytes, millicores, floor) with the control-plane floor applied when ``control_plane`` (the facts'
    ``control_plane`` dict, or None); ``floor`` is None for another node, else {memory_bytes, millicores,
    raised: ['memory', 'cpu'] what it raised, why}. Each step is a line of ``lines``."""
    if not (control_plane or {}).get('detected'):
        return reserved_memory_bytes, reserved_millicores, None
    floor = {'memory_bytes': MEMORY_BYTES, 'millicores': MILLICORES, 'raised': [],
             'why': control_plane.get('why') or 'a control-plane node'}
    lines.append('control-plane node (%s): the reservation is at least %d MiB and %dm, %s'
                 % (floor['why'], MEMORY_BYTES // MIB, MILLICORES, SOURCE))
    if reserved_memory_bytes < MEMORY_BYTES:
        floor['raised'].append('memory')
        lines.append('reserved memory raised to the control-plane floor: %d MiB (measured %d B)'
                     % (MEMORY_BYTES // MIB, reserved_memory_bytes))
        reserved_memory_bytes = MEMORY_BYTES
    if reserved_millicores < MILLICORES:
        floor['raised'].append('cpu')
        lines.append('reserved CPU raised to the control-plane floor: %dm (measured %dm)'
                     % (MILLICORES, reserved_millicores))
        reserved_millicores = MILLICORES
    if not floor['raised']:
        lines.append('the control-plane floor raised nothing: the measured reservation is above it')
    return reserved_memory_bytes, reserved_millicores, floor
