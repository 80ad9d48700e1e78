# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Which kubelet runs on the node, and what that version refuses: decided here, read elsewhere.

``parse`` reads what ``kubelet --version`` prints ("Kubernetes v1.35.0", from component-base's verflag, which
prints "Kubernetes " + the GitVersion). ``check`` says, for that version, the node's cgroup version and the
effective KubeletConfiguration (main file, drop-ins and flags merged), what would stop the kubelet at its next
start (``refusals``) and what it would silently ignore (``warnings``). Each rule, and where it was read:

* ``failCgroupV1``: the field exists from 1.31 (KEP-4569, keps/sig-node/4569-cgroup-v1-maintenance-mode/kep.yaml,
  kubernetes/enhancements 627fe50d, stable v1.31) and defaults to false there; from 1.35 it defaults to true
  (KEP-5573, keps/sig-node/5573-remove-cgroup-v1/kep.yaml, kubernetes/enhancements 05206a32, beta v1.35;
  kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go ``SetDefaults_KubeletConfiguration``:
  ``if obj.FailCgroupV1 == nil { obj.FailCgroupV1 = ptr.To(true) }``, 1c9cf914). When it is true on a host that
  is not in cgroup v2 unified mode (legacy or hybrid), ``validateKubeletOSConfiguration``
  (pkg/kubelet/apis/config/validation/validation_linux.go, 0428b0fd) fails validation: "kubelet is configured to
  not run on a host using cgroup v1. cgroup v1 support is in maintenance mode", and the kubelet exits. The same
  function refuses ``singleProcessOOMKill: false`` on cgroup v1.
* ``enforceNodeAllocatable`` keys ``system-reserved-compressible``/``kube-reserved-compressible``: added in 1.32
  (kubernetes/kubernetes#125982, "Set only compressible resources on system and kube reserved cgroup slices",
  merged 2024-10; kubernetes/website#53520 "added in 1.32"). Before that ``ValidateKubeletConfiguration``
  (validation.go 0ea83df1, the 1.31-era switch) refuses any other key: 'invalid configuration: option %q
  specified for enforceNodeAllocatable'.
* ``memoryReservationPolicy`` (KEP-2570 Memory QoS, ``None`` or ``TieredReservation``): new in 1.36, alpha behind
  the ``MemoryQoS`` feature gate (beta and on by default from 1.37; kubernetes.io blog 2026-04-29 "Kubernetes
  v1.36: Tiered Memory Protection with Memory QoS" and 2026-09-14 "Kubernetes v1.37: Memory QoS Graduates to
  Beta"). ``ValidateKubeletConfiguration`` (validation.go, 001332b0) refuses any other value ('option %q specified
  for memoryReservationPolicy') and refuses ``TieredReservation`` while the gate is off ('memoryReservationPolicy
  %q requires MemoryQoS feature gate to be enabled'). An older kubelet does not know the field: its decoder falls
  back to lenient decoding for unknown fields (pkg/kubelet/kubeletconfig/util/codec/codec.go
  ``DecodeKubeletConfiguration``, as the stand-in mirrors) and ignores it, so that is a warning, not a refusal.
  MemoryQoS works on cgroup v2 only: on v1 it is a warning (nothing is written).
* ``--config-dir`` (KEP-3983, keps/sig-node/3983-drop-in-configuration/kep.yaml, kubernetes/enhancements
  3a8eb262: alpha v1.28, beta v1.31, stable v1.35): unknown flag before 1.28; in 1.28 and 1.29 the kubelet fails
  to start unless its environment has ``KUBELET_CONFIG_DROPIN_DIR_ALPHA`` (kubernetes/website
  content/en/docs/tasks/administer-cluster/kubelet-config-file.md: "For Kubernetes v1.28 to v1.29, you can only
  specify --config-dir if you also set the environment variable KUBELET_CONFIG_DROPIN_DIR_ALPHA"); from 1.30 it
  needs nothing.

* ``memoryThrottlingFactor`` (KEP-2570): ``ValidateKubeletConfiguration`` refuses a factor outside (0, 1.0],
  whatever the gate ('memoryThrottlingFactor %v must be greater than 0 and less than or equal to 1.0'; read in
  validation.go at 0ea83df1, the 1.31-era file, and at 001332b0, 1.36: a refusal from 1.31, a warning before, where
  it was not read); a value that is not a number fails decoding into the float64 field (a refusal). Until 1.36 the
  factor defaults to 0.9 (v1beta1 defaults.go ``DefaultMemoryThrottlingFactor``), so with MemoryQoS on the kubelet
  writes ``memory.high`` for Burstable and BestEffort containers; from 1.37 the default is unset (nil) and no
  ``memory.high`` is written unless the config sets a factor (kubernetes/kubernetes#140007 "Promote MemoryQoS to
  beta; default memoryThrottlingFactor to nil", merged for 1.37; KEP-2570 README "Beta v1.37", kubernetes/enhancements
  a6a23fab: "When nil, kubelet does not set memory.high for any containers ... valid range is (0, 1.0]"; kubernetes.io
  blog 2026-09-14). The "memoryThrottlingFactor is required when MemoryQoS feature flag is enabled" check of 1.36 is
  never met from a file (defaulting fills 0.9) and is gone with the nil default. Memory QoS is cgroup v2 only: a
  factor on a cgroup v1 node is a warning. The collection does not read ``memory.high``: ``memory_throttling_factor``
  says what the kubelet runs with, for the report.
* feature gates the kubelet does not know: component-base ``featureGate.unsafeSetFromMap``
  (staging/src/k8s.io/component-base/featuregate/feature_gate.go, 71d19c88) fails on any unknown name
  ("unrecognized feature gate: %s") and the kubelet does not start. ``NodeSystemPartition`` (KEP-5894, alpha
  targeted at 1.37) is in no release up to 1.37 (removed from the milestone, kubernetes/website#56311; code in
  kubernetes/kubernetes#142200, WIP): setting it, true or false, is a refusal up to 1.37 and a warning after (not
  read). ``systemPartition`` itself is an unknown field those kubelets drop (a warning); ``_system_partition``
  reads and accounts it (memoryLimit not subtracted from allocatable, as the KEP's alpha has it).
* KEP-6063 "Per-Pod PID Limit" (keps/sig-node/6063-pod-pid-limit, kubernetes/enhancements 7bf6f95b: alpha v1.37,
  gate ``PerPodPIDLimit``) adds ``spec.resources.limits.pid`` to pods; the kubelet enforces min(podPidsLimit, the
  pod's limit). No KubeletConfiguration field changes: ``podPidsLimit`` stays the node's ceiling, and podPidsLimit x
  maxPods still bounds the pods' PIDs. No rule here.

cgroup v1 itself: maintenance mode from 1.31, deprecated and refused by default from 1.35: a v1 node is at the
end of its life whatever its kubelet, and ``end_of_life`` says so.
"""

from __future__ import annotations

import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _system_partition

# "Kubernetes v1.35.0", "v1.35.0-rc.1", "v1.35.7+k3s1", "v1.31.2-eks-7f9249a": major.minor.patch is what counts.
VERSION_PATTERN = re.compile(r'\bv?(\d+)\.(\d+)\.(\d+)([-+][0-9A-Za-z.+-]*)?')

FAIL_CGROUP_V1_FIELD_FROM = (1, 31)
FAIL_CGROUP_V1_DEFAULT_TRUE_FROM = (1, 35)
COMPRESSIBLE_ENFORCEMENT_FROM = (1, 32)
MEMORY_RESERVATION_POLICY_FROM = (1, 36)
MEMORY_QOS_ON_BY_DEFAULT_FROM = (1, 37)
CONFIG_DIR_FROM = (1, 28)
CONFIG_DIR_WITHOUT_ENVIRONMENT_FROM = (1, 30)
CONFIG_DIR_ALPHA_VARIABLE = 'KUBELET_CONFIG_DROPIN_DIR_ALPHA'
MEMORY_THROTTLING_FACTOR_RANGE_FROM = (1, 31)
MEMORY_THROTTLING_FACTOR_UNSET_FROM = (1, 37)
MEMORY_THROTTLING_FACTOR_DEFAULT = 0.9  # v1beta1 DefaultMemoryThrottlingFactor until 1.36
# Gates in no kubelet release up to and including this one: setting them stops that kubelet ("unrecognized").
GATES_ABSENT_THROUGH = {_system_partition.FEATURE_GATE: ((1, 37), _system_partition.KEP)}
COMPRESSIBLE_KEYS = ('system-reserved-compressible', 'kube-reserved-compressible')
MEMORY_RESERVATION_POLICIES = ('None', 'TieredReservation')

END_OF_LIFE = ('cgroup v1 is at the end of its life in Kubernetes: in maintenance mode since 1.31 (KEP-4569), and '
               'from 1.35 (KEP-5573) a kubelet refuses to start on it unless its config sets failCgroupV1: false; '
               'move this node to cgroup v2 (systemd.unified_cgroup_hierarchy=1)')


def parse(text):
    """{'version': '1.35.0', 'major', 'minor', 'patch', 'git_version': 'v1.35.0-rc.1'} from ``kubelet --version``
    output, or None when it names no version."""
    match = VERSION_PATTERN.search(text or '')
    if not match:
        return None
    major, minor, patch = (int(part) for part in match.groups()[:3])
    return {'version': '%d.%d.%d' % (major, minor, patch), 'major': major, 'minor': minor, 'patch': patch,
            'git_version': 'v' + match.group(0).lstrip('v')}


def _at_least(version, release):
    return (version['major'], version['minor']) >= release


def fail_cgroup_v1(version, config):
    """The failCgroupV1 the kubelet runs with: the config's own value, else its version's default.

    None where the version is unknown and the config does not say; False before 1.31 (no such field).
    """
    configured = config.get('failCgroupV1')
    if version is None:
        return configured if isinstance(configured, bool) else None
    if not _at_least(version, FAIL_CGROUP_V1_FIELD_FROM):
        return False
    if isinstance(configured, bool):
        return configured
    return _at_least(version, FAIL_CGROUP_V1_DEFAULT_TRUE_FROM)


def features(version):
    """What this kubelet version knows, by name (None for each when the version is unknown)."""
    def since(release):
        return None if version is None else _at_least(version, release)
    return {
        'fail_cgroup_v1_field': since(FAIL_CGROUP_V1_FIELD_FROM),
        'fail_cgroup_v1_default_true': since(FAIL_CGROUP_V1_DEFAULT_TRUE_FROM),
        'compressible_enforcement': since(COMPRESSIBLE_ENFORCEMENT_FROM),
        'memory_reservation_policy': since(MEMORY_RESERVATION_POLICY_FROM),
        'config_dir': since(CONFIG_DIR_FROM),
        'config_dir_without_environment': since(CONFIG_DIR_WITHOUT_ENVIRONMENT_FROM),
        'memory_qos_on_by_default': since(MEMORY_QOS_ON_BY_DEFAULT_FROM),
        'memory_throttling_factor_unset_by_default': since(MEMORY_THROTTLING_FACTOR_UNSET_FROM),
    }


def config_dir_problem(version, environment=None):
    """Why this kubelet would not start with ``--config-dir``, or None (also None when the version is unknown)."""
    if version is None:
        return None
    if not _at_least(version, CONFIG_DIR_FROM):
        return ('kubelet %s has no --config-dir (added in 1.28, KEP-3983): it would stop on an unknown flag'
                % version['git_version'])
    if not _at_least(version, CONFIG_DIR_WITHOUT_ENVIRONMENT_FROM) and CONFIG_DIR_ALPHA_VARIABLE not in (environment or {}):
        return ('kubelet %s reads --config-dir only with %s in its environment (1.28 and 1.29, KEP-3983 alpha): '
                'without it the kubelet fails to start' % (version['git_version'], CONFIG_DIR_ALPHA_VARIABLE))
    return None


def memory_qos_enabled(version, config):
    """The MemoryQoS feature gate as this kubelet runs it: the config's featureGates, else the version's default
    (off before 1.37, on from 1.37); None when neither says."""
    gate = ((config or {}).get('featureGates') or {}).get('MemoryQoS')
    if isinstance(gate, bool):
        return gate
    if version is None:
        return None
    return _at_least(version, MEMORY_QOS_ON_BY_DEFAULT_FROM)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def memory_throttling_factor(version, config):
    """The memoryThrottlingFactor the kubelet runs with: the config's number, else the version's default (0.9
    until 1.36, unset from 1.37); None where unset or unknown. With MemoryQoS on (cgroup v2) a factor means
    memory.high is written for Burstable and BestEffort containers; None means it is not."""
    configured = (config or {}).get('memoryThrottlingFactor')
    if _is_number(configured):
        return float(configured)
    if version is None or _at_least(version, MEMORY_THROTTLING_FACTOR_UNSET_FROM):
        return None
    return MEMORY_THROTTLING_FACTOR_DEFAULT


def _memory_throttling_verdict(name, version, config, on_v1, refusals, warnings):
    if 'memoryThrottlingFactor' not in config or config['memoryThrottlingFactor'] is None:
        return
    factor = config['memoryThrottlingFactor']
    if not _is_number(factor):
        refusals.append('%s would not start: memoryThrottlingFactor %r is not a number (the field is a float64)'
                        % (name, factor))
        return
    if not 0 < factor <= 1.0:
        problem = ('memoryThrottlingFactor %s must be greater than 0 and less than or equal to 1.0' % factor)
        if version is not None and _at_least(version, MEMORY_THROTTLING_FACTOR_RANGE_FROM):
            refusals.append('%s would not start: %s' % (name, problem))
        else:
            warnings.append('%s may not start: %s (refused from 1.31 whatever the MemoryQoS gate; not read for '
                            'this version)' % (name, problem))
        return
    if on_v1:
        warnings.append('%s: memoryThrottlingFactor %s writes no memory.high on cgroup v1 (Memory QoS is cgroup v2 '
                        'only)' % (name, factor))


def _gate_and_partition_verdict(name, version, config, refusals, warnings):
    gates = config.get('featureGates') or {}
    for gate, (through, kep) in sorted(GATES_ABSENT_THROUGH.items()):
        if gate not in gates:
            continue
        if version is not None and not _at_least(version, (through[0], through[1] + 1)):
            refusals.append('%s would not start: featureGates.%s is not a gate it knows ("unrecognized feature gate: '
                            '%s"; %s is in no release up to %d.%d)' % (name, gate, gate, kep, through[0], through[1]))
        else:
            warnings.append('%s: whether it knows featureGates.%s (%s, in no release up to %d.%d) cannot be told; an '
                            'unknown gate stops the kubelet' % (name, gate, kep, through[0], through[1]))
    partition = _system_partition.read(config)
    if partition is None:
        return
    through = GATES_ABSENT_THROUGH[_system_partition.FEATURE_GATE][0]
    if version is not None and not _at_least(version, (through[0], through[1] + 1)):
        warnings.append('%s does not know systemPartition (%s is in no release up to %d.%d): lenient decoding drops '
                        'it and nothing is enforced; %s' % (name, _system_partition.KEP, through[0], through[1],
                                                            _system_partition.describe(partition)))
    else:
        warnings.append('%s: systemPartition is not modelled beyond %s alpha; %s'
                        % (name, _system_partition.KEP, _system_partition.describe(partition)))


def check(version, cgroup_version, config, config_dir_in_use=False, environment=None):
    """{'refusals': [...], 'warnings': [...]} for the kubelet ``version`` (``parse``'s answer, or None) on a node
    whose cgroups are ``cgroup_version`` ('v1' legacy or hybrid, 'v2'), with the effective ``config``.

    A refusal is what would stop that kubelet at its next start, so a write (and the restart after it) must not
    happen; each names the field. ``environment`` is the kubelet's environment, for ``--config-dir`` on 1.28/1.29.
    """
    config = config or {}
    refusals, warnings = [], []
    name = 'kubelet %s' % version['git_version'] if version else 'the kubelet (version unknown)'
    on_v1 = cgroup_version == 'v1'

    fails = fail_cgroup_v1(version, config)
    if on_v1 and fails:
        source = ('the config sets failCgroupV1: true' if config.get('failCgroupV1') is True
                  else 'failCgroupV1 defaults to true from 1.35 (KEP-5573) and the config does not set it')
        refusals.append('%s on a cgroup v1 node would not start: %s ("kubelet is configured to not run on a host '
                        'using cgroup v1"); set failCgroupV1: false in its config, or move the node to cgroup v2, '
                        'before changing its reservations' % (name, source))
    elif on_v1 and fails is None:
        warnings.append('%s on a cgroup v1 node: whether failCgroupV1 stops it at its next start (1.35 and later, '
                        'unless the config sets failCgroupV1: false) cannot be told' % name)
    if on_v1 and config.get('singleProcessOOMKill') is False and (version is None or _at_least(version, FAIL_CGROUP_V1_FIELD_FROM)):
        refusals.append('%s on a cgroup v1 node would not start: singleProcessOOMKill must not be explicitly set to '
                        'false when using cgroup v1' % name)

    if version is not None:
        if not _at_least(version, COMPRESSIBLE_ENFORCEMENT_FROM):
            for key in config.get('enforceNodeAllocatable') or []:
                if key in COMPRESSIBLE_KEYS:
                    refusals.append('%s would not start: enforceNodeAllocatable option %r exists from 1.32 only '
                                    '(invalid option for this kubelet)' % (name, key))
        policy = config.get('memoryReservationPolicy')
        if policy is not None:
            if not _at_least(version, MEMORY_RESERVATION_POLICY_FROM):
                warnings.append('%s does not know memoryReservationPolicy (1.36 and later, KEP-2570): it ignores '
                                'the field' % name)
            elif policy not in MEMORY_RESERVATION_POLICIES:
                refusals.append('%s would not start: memoryReservationPolicy %r is not one of %s'
                                % (name, policy, ', '.join(MEMORY_RESERVATION_POLICIES)))
            elif policy == 'TieredReservation' and not memory_qos_enabled(version, config):
                refusals.append('%s would not start: memoryReservationPolicy "TieredReservation" requires MemoryQoS '
                                'feature gate to be enabled (off by default before 1.37: set featureGates.MemoryQoS: '
                                'true)' % name)
            elif policy == 'TieredReservation' and on_v1:
                warnings.append('%s: memoryReservationPolicy TieredReservation writes no memory.min/memory.low on '
                                'cgroup v1' % name)
        if config_dir_in_use:
            problem = config_dir_problem(version, environment)
            if problem:
                refusals.append(problem)
    _memory_throttling_verdict(name, version, config, on_v1, refusals, warnings)
    _gate_and_partition_verdict(name, version, config, refusals, warnings)
    if on_v1:
        warnings.append(END_OF_LIFE)
    return {'refusals': refusals, 'warnings': warnings}
