"""The stand-in's version, and the start-up refusals that depend on it and on the node's cgroup version.

Written from the kubelet's source, independently of the collection:
* component-base/version/verflag: ``--version`` prints "Kubernetes " + GitVersion and exits 0.
* pkg/kubelet/apis/config/v1beta1/defaults.go ``SetDefaults_KubeletConfiguration`` (kubernetes/kubernetes
  1c9cf914): ``FailCgroupV1`` nil -> true. That default is the 1.35 one (KEP-5573, beta v1.35); in 1.31-1.34 the
  field exists with default false (KEP-4569, v1.31); before 1.31 there is no such field (an unknown field is
  dropped by lenient decoding, config.py).
* pkg/kubelet/apis/config/validation/validation_linux.go ``validateKubeletOSConfiguration`` (0428b0fd): on a
  host not in cgroup v2 unified mode, FailCgroupV1 true is refused, and so is singleProcessOOMKill set to false.
* validation.go ``ValidateKubeletConfiguration``: the ``*-reserved-compressible`` enforcement keys exist from
  1.32 (kubernetes/kubernetes#125982); before that the switch knows pods, system-reserved, kube-reserved, none.
* The same function from 1.36 (KEP-2570 alpha v3, validation.go 001332b0): ``memoryReservationPolicy`` must be
  ``None`` (its default, v1beta1 defaults) or ``TieredReservation``, and ``TieredReservation`` needs the
  ``MemoryQoS`` feature gate, which is alpha (off) in 1.36 and beta (on) from 1.37 (pkg/features, the 1.37 Memory
  QoS beta notes). Before 1.36 the field is unknown: lenient decoding drops it (config.py).
* memoryThrottlingFactor: v1beta1 defaults.go sets ``DefaultMemoryThrottlingFactor`` 0.9 when nil, until 1.37;
  kubernetes/kubernetes#140007 (1.37, "Promote MemoryQoS to beta; default memoryThrottlingFactor to nil") leaves it
  nil, and nil means no memory.high. validation.go (0ea83df1, 001332b0): a factor outside (0, 1.0] is refused whatever
  the gate; "memoryThrottlingFactor is required when MemoryQoS feature flag is enabled" (before 1.37; never met after
  defaulting, kept for fidelity). A non-number fails decoding (config.py).
* k8s.io/component-base featuregate ``unsafeSetFromMap`` (feature_gate.go 71d19c88): an unknown gate name fails with
  "unrecognized feature gate: <name>" and the kubelet exits. The stand-in keeps no full list of the kubelet's gates;
  it knows the ones no release up to its version has: ``NodeSystemPartition`` (KEP-5894, taken off the v1.37
  milestone, kubernetes/website#56311; code still a WIP PR, kubernetes/kubernetes#142200). ``systemPartition`` is not
  a field of its KubeletConfiguration (kubelet_config_v1beta1_fields.txt): lenient decoding drops it (config.py).
* node_container_manager_linux.go ``enforceExistingCgroup``: with MemoryQoS on, an enforced ``system-reserved``/
  ``kube-reserved`` group also gets ``memory.min`` = its memory reservation (cgroup v2 only; see kubelet.py).
"""

from __future__ import annotations

import re

DEFAULT_GIT_VERSION = 'v1.34.2'  # what the stand-in says it is when the node does not name a version
_PATTERN = re.compile(r'^v(\d+)\.(\d+)\.(\d+)')


class VersionError(ValueError):
    pass


def parse(git_version):
    """'v1.35.0' -> (1, 35, 0)."""
    match = _PATTERN.match(git_version.strip())
    if not match:
        raise VersionError('not a Kubernetes git version: %r' % git_version)
    return tuple(int(part) for part in match.groups())


def defaults(config, version):
    """The version-dependent defaults SetDefaults_KubeletConfiguration fills in (a copy of ``config``)."""
    config = dict(config)
    if version[:2] >= (1, 31):
        config.setdefault('failCgroupV1', version[:2] >= (1, 35))
    else:
        config.pop('failCgroupV1', None)  # no such field: lenient decoding dropped it
    if version[:2] < (1, 37) and config.get('memoryThrottlingFactor') is None:
        config['memoryThrottlingFactor'] = 0.9  # DefaultMemoryThrottlingFactor; nil (no memory.high) from 1.37
    return config


def legacy_enforcement_errors(config, version):
    """Before 1.32 the compressible keys are not valid options of enforceNodeAllocatable."""
    if version[:2] >= (1, 32):
        return []
    return ['invalid configuration: option "%s" specified for enforceNodeAllocatable (--enforce-node-allocatable). '
            'Valid options are "pods", "system-reserved", "kube-reserved", or "none"' % key
            for key in config.get('enforceNodeAllocatable') or []
            if key in ('system-reserved-compressible', 'kube-reserved-compressible')]


def os_errors(config, cgroup_v1):
    """validateKubeletOSConfiguration on Linux, for the defaulted ``config``."""
    if not cgroup_v1:
        return []
    if config.get('failCgroupV1'):
        return ['kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is in maintenance mode']
    if config.get('singleProcessOOMKill') is False:
        return ['invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1']
    return []


def memory_qos(config, version):
    """Whether the MemoryQoS gate is on: featureGates, else the version's default (beta, on, from 1.37)."""
    gate = (config.get('featureGates') or {}).get('MemoryQoS')
    if gate is not None:
        return bool(gate)
    return version[:2] >= (1, 37)


def memory_reservation_errors(config, version):
    """ValidateKubeletConfiguration's memoryReservationPolicy checks (1.36 on; before, the field is dropped)."""
    if version[:2] < (1, 36):
        return []
    policy = config.get('memoryReservationPolicy') or 'None'
    errors = []
    if policy == 'TieredReservation' and not memory_qos(config, version):
        errors.append('invalid configuration: memoryReservationPolicy "TieredReservation" requires MemoryQoS feature '
                      'gate to be enabled')
    if policy not in ('None', 'TieredReservation'):
        errors.append('invalid configuration: option "%s" specified for memoryReservationPolicy. Valid options are '
                      '"None" or "TieredReservation"' % policy)
    return errors


def memory_throttling_errors(config, version):
    """ValidateKubeletConfiguration's memoryThrottlingFactor checks, on the defaulted ``config``."""
    factor = config.get('memoryThrottlingFactor')
    errors = []
    if factor is None and memory_qos(config, version) and version[:2] < (1, 37):
        errors.append('invalid configuration: memoryThrottlingFactor is required when MemoryQoS feature flag is enabled')
    if factor is not None and not 0 < factor <= 1.0:
        errors.append('invalid configuration: memoryThrottlingFactor %s must be greater than 0 and less than or equal '
                      'to 1.0' % factor)
    return errors


# Gate names in no kubelet release up to and including the version given: unknown to such a kubelet.
UNRELEASED_GATES = {'NodeSystemPartition': (1, 37)}


def feature_gate_errors(config, version):
    """featuregate SetFromMap: a gate this kubelet does not know stops it (the first one met, as upstream returns)."""
    for name in sorted((config.get('featureGates') or {})):
        through = UNRELEASED_GATES.get(name)
        if through is not None and version[:2] <= through:
            return ['failed to set feature gates from initial flags-based config: unrecognized feature gate: %s' % name]
    return []
