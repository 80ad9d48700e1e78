# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The API server's side of a rollout's health: the verdict on the Node kubernetes.core.k8s_info read.

The on-node step (kubelet_reservations_apply) has seen the unit active, /healthz ok, the kubepods limit and the soak;
the role then waits until the API server shows the Node Ready with the allocatable memory the new config gives
(roles/reservations/tasks/health.yml, through the node_api_healthy filter). A kubelet whose status updates never
arrive (an expired client certificate, a cut route) passes every check on the node and fails this one.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._quantity import parse_quantity


def node_healthy(k8s_info_result, expected_allocatable_memory):
    """True once the Node is Ready and its ``status.allocatable.memory`` equals ``expected_allocatable_memory``.

    ``k8s_info_result`` is what kubernetes.core.k8s_info returned for ``kind: Node, name: ...`` (its ``resources``
    list, empty while the API server does not know the Node). The memory is compared by value (apimachinery's
    Quantity), as the kubelet writes Ki and the step formats Mi/Gi. Ready is the ``Ready`` condition's status
    ``True`` (k8s.io/api core/v1 NodeCondition); a Node without it, or without an allocatable memory yet, is not.
    Raises ValueError for an expected memory that is no quantity.
    """
    expected = parse_quantity(str(expected_allocatable_memory))
    resources = (k8s_info_result or {}).get('resources') or []
    if not resources:
        return False
    status = resources[0].get('status') or {}
    ready = next((condition.get('status') for condition in status.get('conditions') or []
                  if condition.get('type') == 'Ready'), 'False')
    memory = (status.get('allocatable') or {}).get('memory')
    return ready == 'True' and memory is not None and parse_quantity(str(memory)) == expected
