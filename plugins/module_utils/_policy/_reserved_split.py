# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Where a resource beside memory and CPU goes in the reservation maps (ephemeral-storage, pid): one rule for both.

The map that holds the resource today takes it (kubeReserved where only it does, as EKS's nodeadm writes
ephemeral-storage), else systemReserved (the logs, journald and the system's tasks are the system's). Where both maps
hold it, kubeReserved keeps its value and systemReserved takes the rest, so the sum is what is recommended.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable


def where(current, resource):
    """'kube_reserved' where only kubeReserved holds ``resource`` today, else 'system_reserved'."""
    kube = resource in ((current or {}).get('kube_reserved') or {})
    system = resource in ((current or {}).get('system_reserved') or {})
    return 'kube_reserved' if kube and not system else 'system_reserved'


def maps_with(current, resource, amount, shown):
    """(kubeReserved's, systemReserved's) quantity of ``resource`` (None: not set) for ``amount`` in all, each as
    ``shown`` writes an amount (_quantity.format_memory for bytes, str for tasks)."""
    current = current or {}
    kube_now = (current.get('kube_reserved') or {}).get(resource)
    if where(current, resource) == 'kube_reserved':
        return shown(amount), None
    kept = _node_allocatable.reserved_amount(current.get('kube_reserved'), resource, 0) if kube_now is not None else 0
    return kube_now, shown(max(0, amount - kept))


def carry_into(recommendation, found, resource):
    """Put ``found``'s written quantities of ``resource`` (its kube_reserved and system_reserved, None: not set) into
    the recommendation's maps."""
    for key in ('kube_reserved', 'system_reserved'):
        if found.get(key) is not None:
            recommendation[key] = dict(recommendation[key], **{resource: found[key]})
