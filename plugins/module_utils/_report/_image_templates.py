# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A node class's recommendation in the forms node images take it: Bottlerocket, Talos, OpenShift, AKS.

Each takes the class summary _node_templates.class_recommendations builds (the largest recommendation of the class's
nodes, resource by resource, and every hard eviction threshold they run with) and carries exactly those values,
where the image reads them:

* ``bottlerocket-settings.toml``: the user-data tables ``[settings.kubernetes.kube-reserved]``,
  ``[settings.kubernetes.system-reserved]`` and ``[settings.kubernetes.eviction-hard]``
  (bottlerocket-os/bottlerocket-settings-sdk bottlerocket-settings-models/settings-extensions/kubernetes/src/lib.rs
  c135bcbc: ``kube_reserved``/``system_reserved`` are maps of KubernetesReservedResourceKey (cpu, memory,
  ephemeral-storage) to KubernetesQuantityValue; modeled-types/src/kubernetes.rs 25e4241f). Written as TOML by
  _toml_text.
* ``talos-machineconfig-patch.yaml``: a machine config patch, ``machine.kubelet.extraConfig`` (siderolabs/talos
  v1.13.9 pkg/machinery/config/schemas/config.schema.json). Talos fills ``systemReserved`` with its own map only
  when the config sets none (internal/app/machined/pkg/controllers/k8s/kubelet_spec.go), so a ``systemReserved``
  here replaces Talos's whole: the resources the class has no figure for keep Talos's values, written here.
* ``openshift-kubeletconfig.yaml``: a ``KubeletConfig`` (machineconfiguration.openshift.io/v1) with
  ``spec.kubeletConfig`` and ``spec.autoSizingReserved: false`` (openshift/api machineconfiguration/v1/types.go
  KubeletConfigSpec). For pools where auto-sizing is off: the machine-config operator refuses ``systemReserved``
  beside ``autoSizingReserved: true`` (machine-config-operator pkg/controller/kubelet-config/helpers.go
  validateUserKubeletConfig); where auto-sizing is on the report compares and the role does not fight it.
* ``aks-agentpool-kubeletconfig.yaml``: the agent pool's ``properties.kubeletConfig.kubeReserved`` (AKS's preview
  KubeReserved: ``cpuMillicores`` at least 140, ``memoryMB`` in MiB at least 750). AKS has no systemReserved there:
  kube + system, summed, each raised to AKS's minimum where below it, with the reason in the header.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction, _quantity

BOTTLEROCKET = 'bottlerocket-settings.toml'
TALOS = 'talos-machineconfig-patch.yaml'
OPENSHIFT = 'openshift-kubeletconfig.yaml'
AKS = 'aks-agentpool-kubeletconfig.yaml'
FILES = (BOTTLEROCKET, TALOS, OPENSHIFT, AKS)
TOML_FILES = frozenset((BOTTLEROCKET,))

# Bottlerocket's KubernetesEvictionKey (modeled-types/src/kubernetes.rs 25e4241f): the signals its eviction-hard takes.
BOTTLEROCKET_EVICTION_SIGNALS = ('memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available',
                                 'imagefs.inodesFree', 'pid.available')
# Talos's own systemReserved when the config sets none (pkg/machinery/constants/constants.go v1.13.9,
# KubeletSystemReserved*); memory is 384Mi on workers and 512Mi on control planes, the others as here.
TALOS_SYSTEM_RESERVED = {'cpu': '50m', 'memory': '384Mi', 'pid': '100', 'ephemeral-storage': '256Mi'}
# AKS's preview KubeReserved minimums (AKS API reference, KubeReserved: "Must be greater than or equal to 140",
# "in MiB. Must be greater than or equal to 750").
AKS_MIN_CPU_MILLICORES = 140
AKS_MIN_MEMORY_MIB = 750
MIB = 1 << 20
# The label every MachineConfigPool is selected by (the machine-config operator sets it on master and worker; a
# custom pool carries it by convention).
OPENSHIFT_POOL_LABEL = 'pools.operator.machineconfiguration.openshift.io/'


def _reserved(summary, field):
    return dict(sorted((summary.get(field) or {}).items()))


def _eviction_hard(summary, allowed=None):
    hard = summary.get('eviction_hard') or {}
    return {signal: hard[signal] for signal in sorted(hard) if allowed is None or signal in allowed}


def bottlerocket_threshold(signal, text):
    """Whether Bottlerocket takes ``text`` for ``signal``: a threshold the kubelet parses (_eviction.parse_threshold),
    short of '100%' (KubernetesThresholdValue takes a percentage below 100). A node's config is the node's word: a
    value it holds that is no threshold is left out, not written into user data."""
    try:
        _eviction.parse_threshold(signal, text)
    except ValueError:
        return False
    return text != '100%'


def bottlerocket(summary):
    """[(table path, values)] for _toml_text: kube-reserved, system-reserved, eviction-hard (the signals Bottlerocket
    has a key for, with a value it takes)."""
    prefix = ('settings', 'kubernetes')
    eviction = {signal: text for signal, text in _eviction_hard(summary, BOTTLEROCKET_EVICTION_SIGNALS).items()
                if bottlerocket_threshold(signal, text)}
    # max-pods, an integer in settings.kubernetes, only where the class's nodes share one (_node_templates.class_max_pods).
    return [(prefix, {'max-pods': summary['max_pods']} if summary.get('max_pods') else {}),
            (prefix + ('kube-reserved',), _reserved(summary, 'kube_reserved')),
            (prefix + ('system-reserved',), _reserved(summary, 'system_reserved')),
            (prefix + ('eviction-hard',), eviction)]


def talos_system_reserved(summary):
    """The class's systemReserved, with Talos's own value for each resource the class has no figure for (a
    systemReserved in extraConfig replaces Talos's default map whole)."""
    own = _reserved(summary, 'system_reserved')
    return dict(sorted(dict(TALOS_SYSTEM_RESERVED, **own).items()))


def talos_kept(summary):
    """The resources whose value in the Talos patch is Talos's own default, not the class's."""
    return sorted(set(TALOS_SYSTEM_RESERVED) - set(summary.get('system_reserved') or {}))


def _kubelet_config(summary, system_reserved):
    config = {}
    for key, value in (('kubeReserved', _reserved(summary, 'kube_reserved')), ('systemReserved', system_reserved),
                       ('evictionHard', _eviction_hard(summary))):
        if value:
            config[key] = value
    if summary.get('max_pods'):
        config['maxPods'] = summary['max_pods']
    return config


def talos(summary):
    return {'machine': {'kubelet': {'extraConfig': _kubelet_config(summary, talos_system_reserved(summary))}}}


def openshift(pool_name, object_name, summary):
    return {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'KubeletConfig',
            'metadata': {'name': object_name + '-nodealloc'},
            'spec': {'machineConfigPoolSelector': {'matchLabels': {OPENSHIFT_POOL_LABEL + pool_name: ''}},
                     'autoSizingReserved': False,
                     'kubeletConfig': _kubelet_config(summary, _reserved(summary, 'system_reserved'))}}


def _ceil_div(amount, unit):
    return -(-amount // unit)


def aks_kube_reserved(summary):
    """({'cpuMillicores': int, 'memoryMB': int}, [why a value was raised]): kube + system per resource (AKS reserves
    once), in whole millicores and whole MiB rounded up, each at least AKS's minimum."""
    totals = {}
    for field in ('kube_reserved', 'system_reserved'):
        for resource, text in (summary.get(field) or {}).items():
            value = _quantity.parse_quantity(str(text))
            amount = _quantity.milli_value(value) if resource == 'cpu' else _quantity.quantity_value(value)
            totals[resource] = totals.get(resource, 0) + amount
    out, raised = {}, []
    for resource, key, unit, minimum, shown in (('cpu', 'cpuMillicores', 1, AKS_MIN_CPU_MILLICORES, '%dm'),
                                                ('memory', 'memoryMB', MIB, AKS_MIN_MEMORY_MIB, '%d MiB')):
        if resource not in totals:
            continue
        amount = _ceil_div(totals[resource], unit)
        if amount < minimum:
            raised.append('kubeReserved %s raised from the class\'s %s (kube + system) to %s: AKS refuses less than %s'
                          % (key, shown % amount, shown % minimum, shown % minimum))
            amount = minimum
        out[key] = amount
    return out, raised


def aks(summary):
    kube_reserved = aks_kube_reserved(summary)[0]
    return {'properties': {'kubeletConfig': {'kubeReserved': kube_reserved}}} if kube_reserved else {
        'properties': {'kubeletConfig': {}}}


def documents(name, object_name, summary):
    """{file name: document} for one class: a list of TOML tables for Bottlerocket, a dict for the others. ``name`` is
    the class (a Kubernetes label value: the MachineConfigPool label's name part), ``object_name`` its DNS label."""
    return {BOTTLEROCKET: bottlerocket(summary), TALOS: talos(summary), OPENSHIFT: openshift(name, object_name, summary),
            AKS: aks(summary)}


HOW_TO_USE = {
    BOTTLEROCKET: ('merge these tables into the node\'s Bottlerocket user data (or apiclient set); on a Karpenter pool '
                   'the EC2NodeClass spec.kubelet is written over them: use karpenter-ec2nodeclass-patch.yaml there'),
    TALOS: ('talosctl patch machineconfig --patch @this file (or a config patch at talosctl gen config); Talos 1.14 '
            'deprecates machine.kubelet for the KubeletConfig document, whose config takes the same keys'),
    OPENSHIFT: ('oc apply -f this file, for a MachineConfigPool labelled %s<pool>: "" (master and worker carry theirs); '
                'one KubeletConfig per pool: merge into the pool\'s existing one' % OPENSHIFT_POOL_LABEL),
    AKS: ('the agent pool\'s properties.kubeletConfig (preview API: az rest --method put on the agentPools resource '
          'with this merged into its body, as JSON); only Linux pools take kubeReserved'),
}


def notes(file_name, summary):
    """Header lines beside the values: what each image does with what is not written, and why a value moved."""
    if file_name == BOTTLEROCKET:
        return ['# Bottlerocket\'s own values where a key is unset: kube-reserved memory 11 MiB x max-pods + 255 MiB, '
                'cpu by EKS\'s per-core formula, ephemeral-storage 1Gi; no system-reserved (bottlerocket-core-kit '
                'a10182f9 packages/kubernetes-1.31/kubelet-config, sources/api/schnauzer/src/helpers/mod.rs '
                'kube_reserve_memory, kube_reserve_cpu).']
    if file_name == TALOS:
        kept = talos_kept(summary)
        lines = ['# A systemReserved in extraConfig replaces Talos\'s own whole (internal/app/machined/pkg/controllers/'
                 'k8s/kubelet_spec.go, v1.13.9).']
        if kept:
            lines.append('# Talos\'s own values kept for what the class has no figure for: %s (pkg/machinery/constants/'
                         'constants.go KubeletSystemReserved*).' % ', '.join(
                             '%s %s' % (resource, TALOS_SYSTEM_RESERVED[resource]) for resource in kept))
        return lines
    if file_name == OPENSHIFT:
        return ['# For pools where auto-sizing is off: autoSizingReserved false, and systemReserved here (the '
                'machine-config operator refuses both at once).',
                '# Auto-sizing is on by default for workers since OpenShift 4.21 (off for control planes): where it is '
                'on, the report compares its figures with these and the role does not fight it; do not apply this there.']
    if file_name == AKS:
        return ['# AKS takes one reservation here: kubeReserved is kube + system, in whole millicores and MiB '
                '(rounded up).'] + ['# %s.' % why for why in aks_kube_reserved(summary)[1]]
    return []


def left_out_signals(file_name, summary):
    """The class's hard thresholds ``file_name``'s image has no field for (its own default applies there)."""
    hard = summary.get('eviction_hard') or {}
    if file_name == BOTTLEROCKET:
        return sorted(signal for signal in hard if signal not in BOTTLEROCKET_EVICTION_SIGNALS
                      or not bottlerocket_threshold(signal, hard[signal]))
    if file_name == AKS:
        return sorted(hard)
    return []
