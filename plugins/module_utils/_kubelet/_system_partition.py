# Private to nodealloc.kubelet: not a public API, may change without notice.
"""KEP-5894 "Node System Partition": the config's ``systemPartition``, read and accounted as the KEP says.

Source: kubernetes/enhancements keps/sig-node/5894-node-system-partition/README.md and kep.yaml (24d3ab08, 2026-06:
alpha targeted at v1.37, feature gate ``NodeSystemPartition`` for kubelet and kube-scheduler). The field::

    systemPartition:
      memoryLimit: "4Gi"      # memory.max on kubepods/system, for the system pods only
      cpuset: "0-3"           # CPUs dedicated to the system pods
      namespaces: [kube-system]

How it relates to the reservations (README, "Relationship to existing kubelet resource reservation"):
``kubeReserved``/``systemReserved`` cover the kubelet, the runtime and the OS services and are subtracted from
Node Allocatable; ``memoryLimit`` is a separate budget for system *pods*. "In alpha, Node Allocatable is not
automatically adjusted for the system partition": the kubelet subtracts nothing, so the user pods' effective room
is allocatable - memoryLimit while the scheduler still places pods against the whole allocatable. ``account`` says
exactly that and nothing more; it never changes the allocatable the collection computes.

No kubelet release implements it (so ``_version_rules`` makes the field a warning): KEP-5894 was removed from the
v1.37 milestone (kubernetes/website#56311, closed 2026-08-05: "the associated KEP has been removed from
milestone"), its kubelet code is kubernetes/kubernetes#142200 (WIP, opened 2026-09-17), and the v1beta1
KubeletConfiguration of 2026-07 (tests/standin/kubelet_config_v1beta1_fields.txt) has no such field: a 1.37
kubelet's lenient decoding drops it. The parsing below is therefore lenient too: a malformed value is a problem to
report, not a failure, since the kubelet never reads it.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity, _resource_managers

FIELD = 'systemPartition'
FEATURE_GATE = 'NodeSystemPartition'
KEP = 'KEP-5894'


def read(config):
    """The config's systemPartition as {'memory_limit_bytes', 'cpus', 'namespaces', 'problems'}, or None when absent
    or empty (the KEP: "If systemPartition is not specified or empty, kubelet behaves identically to today")."""
    section = (config or {}).get(FIELD)
    if section is None or section == {}:
        return None
    result = {'memory_limit_bytes': None, 'cpus': None, 'namespaces': [], 'problems': []}
    if not isinstance(section, dict):
        result['problems'].append('%s is not a mapping: %r' % (FIELD, section))
        return result
    limit = section.get('memoryLimit')
    if limit is not None:
        try:
            value = _quantity.parse_quantity(limit) if isinstance(limit, str) else None
        except ValueError as exc:
            value, reason = None, str(exc)
        else:
            reason = 'not a quantity string'
        if value is None or value < 0:
            result['problems'].append('%s.memoryLimit %r: %s' % (FIELD, limit, reason if value is None else 'negative'))
        else:
            result['memory_limit_bytes'] = _quantity.quantity_value(value)
    cpuset = section.get('cpuset')
    if cpuset is not None:
        try:
            result['cpus'] = _resource_managers.parse_cpu_list(cpuset)
        except ParseError as exc:
            result['problems'].append('%s.cpuset: %s' % (FIELD, exc))
    namespaces = section.get('namespaces')
    if namespaces is not None:
        if isinstance(namespaces, list) and all(isinstance(name, str) for name in namespaces):
            result['namespaces'] = list(namespaces)
        else:
            result['problems'].append('%s.namespaces is not a list of names: %r' % (FIELD, namespaces))
    return result


def account(partition, allocatable_memory_bytes=None):
    """What the partition means for the node's memory, as KEP-5894's alpha has it.

    {'memory_limit_bytes', 'subtracted_from_allocatable': False, 'user_pods_memory_bytes' (allocatable -
    memoryLimit, floored at 0; None where either is unknown), 'limit_exceeds_allocatable'}.
    """
    limit = (partition or {}).get('memory_limit_bytes')
    room = None
    if limit is not None and allocatable_memory_bytes is not None:
        room = max(0, allocatable_memory_bytes - limit)
    return {'memory_limit_bytes': limit, 'subtracted_from_allocatable': False, 'user_pods_memory_bytes': room,
            'limit_exceeds_allocatable': bool(limit is not None and allocatable_memory_bytes is not None
                                              and limit > allocatable_memory_bytes)}


def describe(partition):
    """One line for a warning: the partition's figures and how they relate to the reservations."""
    parts = []
    if partition.get('memory_limit_bytes') is not None:
        parts.append('memoryLimit %s' % _quantity.format_memory(partition['memory_limit_bytes']))
    if partition.get('cpus') is not None:
        parts.append('cpuset of %d CPUs' % len(partition['cpus']))
    if partition.get('namespaces'):
        parts.append('namespaces %s' % ', '.join(partition['namespaces']))
    figures = ', '.join(parts) or 'no figures'
    text = ('%s (%s): a budget for system pods beside kubeReserved/systemReserved (which cover the kubelet, the runtime '
            'and the OS services), not subtracted from allocatable in %s alpha: pods outside the partition effectively '
            'have allocatable minus its memoryLimit' % (FIELD, figures, KEP))
    if partition.get('problems'):
        text += '; malformed: %s' % '; '.join(partition['problems'])
    return text
