# Private to nodealloc.kubelet: not a public API, may change without notice.
"""``ephemeral-storage`` to reserve from the measured non-pod use of the kubelet's filesystem, with allocatable
beside it, every step explained.

reserved = max(FLOOR_BYTES, non-pod use x HEADROOM_FACTOR), rounded up to whole MiB, where non-pod use is what
_node/_disk_use measured on the kubelet's filesystem outside the pods (the kubelet's root dir without
``pods/``, the logs without ``pods/``). Memory's shape (a measured figure plus headroom, with a floor), kept simple:
disk use outside the pods grows slowly (logs until their rotation caps them, journald until its SystemMaxUse), so
one reading with half of it again is the headroom, and no history is kept for it yet. The floor is the vendors'
flat reservation: 1 GiB on EKS and Karpenter (awslabs/amazon-eks-ami nodeadm ``withDefaultReservedResources``,
kubeReserved), OpenShift and AKS's hardened nodes (systemReserved); Talos reserves 256 MiB
(siderolabs/talos pkg/machinery/constants ``KubeletSystemReservedEphemeralStorage``). A reading that stopped at a
walk limit (``complete`` false) is a lower bound, and said so.

Where it goes: the map that holds ``ephemeral-storage`` today (kubeReserved where only it does, as on EKS), else
systemReserved (the logs and journald are the system's); where both hold it, kubeReserved keeps its value and
systemReserved takes the rest. Allocatable now and with the recommendation is the kubelet's arithmetic
(_node_allocatable.compute_ephemeral_storage).

Whether it is written is the option ``reserve_ephemeral_storage`` (default false): a new resource in the maps would
change every node's kubelet config on the next apply and restart each kubelet for a figure no one asked for; with
the option off the recommendation is shown and today's maps are written back as they are.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _reserved_split

MIB = 1024 * 1024
GIB = 1024 * MIB
HEADROOM_FACTOR = 1.5
FLOOR_BYTES = GIB
RESOURCE = 'ephemeral-storage'


def _ceil_mib(value):
    return -(-int(value) // MIB) * MIB


def maps_with(current, recommended_bytes):
    """(kubeReserved's, systemReserved's) ephemeral-storage quantity (None: not set) for ``recommended_bytes`` in all
    (_reserved_split)."""
    return _reserved_split.maps_with(current, RESOURCE, recommended_bytes, _quantity.format_memory)


def recommend(disk, current, eviction_hard, write=False):
    """The ephemeral-storage recommendation from ``disk`` (the facts' ``ephemeral_storage``) against ``current``
    (the kubelet's reservation maps) and the effective ``eviction_hard``.

    Returns {recommended_bytes, quantity, non_pod_bytes, complete, headroom_factor, floor_bytes, kube_reserved,
    system_reserved (each map's quantity, None: not set), allocatable_now, allocatable_recommended
    (_node_allocatable.compute_ephemeral_storage), written (``write``), explanation}; recommended_bytes None (and
    ``reason``) when the kubelet's filesystem was not measured.
    """
    current = current or {}
    lines = []
    out = {'recommended_bytes': None, 'quantity': None, 'headroom_factor': HEADROOM_FACTOR, 'floor_bytes': FLOOR_BYTES,
           'non_pod_bytes': None, 'complete': False, 'kube_reserved': None, 'system_reserved': None,
           'allocatable_now': None, 'allocatable_recommended': None, 'written': False, 'explanation': lines,
           'reason': None}
    if not disk or disk.get('non_pod_bytes') is None or not disk.get('filesystem'):
        out['reason'] = 'the kubelet\'s filesystem was not measured: %s' % '; '.join((disk or {}).get('problems') or
                                                                                     ['no measurement'])
        lines.append('ephemeral-storage: not recommended, %s' % out['reason'])
        return out
    non_pod = disk['non_pod_bytes']
    capacity = disk['filesystem']['capacity_bytes']
    image = disk.get('image_filesystem') or {}
    imagefs_capacity = image.get('capacity_bytes') if image.get('separate') else None
    recommended = max(FLOOR_BYTES, _ceil_mib(non_pod * HEADROOM_FACTOR))
    kube_quantity, system_quantity = maps_with(current, recommended)
    now = _node_allocatable.compute_ephemeral_storage(capacity, current.get('kube_reserved'),
                                                      current.get('system_reserved'), eviction_hard, imagefs_capacity)
    after = _node_allocatable.compute_ephemeral_storage(
        capacity, {RESOURCE: kube_quantity} if kube_quantity else None,
        {RESOURCE: system_quantity} if system_quantity else None, eviction_hard, imagefs_capacity)
    logs = disk.get('logs') or {}
    lines.append('ephemeral-storage: non-pod use of the kubelet\'s filesystem = the kubelet root dir without pods/ %d B '
                 '+ the logs without pods/ %d B%s = %d B%s'
                 % (disk['kubelet_root_dir']['non_pod_bytes'], logs.get('non_pod_bytes') or 0,
                    ' (journald %d B)' % logs['journal_bytes'] if logs.get('journal_bytes') else '', non_pod,
                    '' if disk.get('complete') else ' (a walk stopped at a limit: a lower bound)'))
    lines.append('ephemeral-storage reserved = max(floor %d B, ceil_MiB(%d B x %.1f)) = %s'
                 % (FLOOR_BYTES, non_pod, HEADROOM_FACTOR, _quantity.format_memory(recommended)))
    lines.append('allocatable ephemeral-storage = capacity - kubeReserved - systemReserved - hard nodefs.available '
                 '= %d - %d - %d - %d = %d B (now %d B)'
                 % (capacity, after['kube_reserved_bytes'], after['system_reserved_bytes'],
                    after['eviction_hard_nodefs_bytes'], after['allocatable_bytes'], now['allocatable_bytes']))
    if imagefs_capacity is not None:
        lines.append('image filesystem %s is separate (%d B): its hard imagefs.available %d B evicts but reserves '
                     'nothing' % (image.get('path'), imagefs_capacity, after['imagefs']['eviction_hard_imagefs_bytes']))
    if not write:
        lines.append('ephemeral-storage is not written: reserve_ephemeral_storage is false (today\'s maps are kept)')
    out.update(recommended_bytes=recommended, quantity=_quantity.format_memory(recommended), non_pod_bytes=non_pod,
               complete=bool(disk.get('complete')), kube_reserved=kube_quantity, system_reserved=system_quantity,
               allocatable_now=now, allocatable_recommended=after, written=bool(write))
    return out


def carry_into(recommendation, ephemeral):
    """Put the written ephemeral-storage quantities into the recommendation's maps (``reserve_ephemeral_storage``)."""
    _reserved_split.carry_into(recommendation, ephemeral, RESOURCE)
