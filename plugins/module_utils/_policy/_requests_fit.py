# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Do the pods bound to a node still fit the allocatable a change would give it?

When the kubelet restarts it admits again every pod bound to the node, one by one, against
``status.allocatable`` (pkg/kubelet/kubelet.go HandlePodAdditions -> canAdmitPod ->
pkg/kubelet/lifecycle/predicate.go generalFilter -> the scheduler's noderesources ``Fits``); a pod
whose requests no longer fit is rejected (OutOfcpu / OutOfmemory: kubernetes/kubernetes#105523).
Only active pods count: ``filterOutInactivePods`` (pkg/kubelet/kubelet_pods.go) leaves out pods whose
phase is Succeeded or Failed (``isAdmittedPodTerminal``).

A pod's requests are k8s.io/component-helpers/resource ``PodRequests`` with the options the
scheduler's ``Fits`` passes (helpers.go at kubernetes/kubernetes 0085214e563468088672cf8c50849884198a18cc):

* ``AggregateContainerRequests``: the sum of the regular containers and of the restartable (sidecar)
  init containers, or, if larger, the largest need of an init container, which is its own requests
  plus those of the sidecars started before it (KEP-753); per resource;
* pod-level ``spec.resources.requests`` (PodLevelResources, beta and on by default since 1.34), where
  set, replace that aggregate for cpu and memory;
* ``spec.overhead`` (RuntimeClass) is added.

Requests are read from the spec, not from the in-place resize status (``UseStatusResources``): a pod
being resized is counted at what its spec asks. Quantities are summed exactly (_quantity), then made
integers as ``NodeInfo`` does: ``MilliValue()`` for CPU and ``Value()`` for memory, both rounded up.
"""

from __future__ import annotations

import decimal

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _node_allocatable, _quantity

RESOURCES = ('cpu', 'memory')
TERMINAL_PHASES = ('Succeeded', 'Failed')
LARGEST_SHOWN = 3
SKIPPED_NO_API = ('no pod list: the role reads the pods bound to the node only where it can reach the API server '
                  '(reservations_api_check: a kubeconfig in reservations_kubeconfig or K8S_AUTH_KUBECONFIG, or '
                  "AWX's Kubernetes credential)")


def _requests(resources):
    """cpu and memory of a ``resources.requests`` map as exact Decimals (absent: no entry)."""
    requests = (resources or {}).get('requests') or {}
    return {name: _quantity.parse_quantity(str(requests[name])) for name in RESOURCES if name in requests}


def _add(total, more):
    for name, amount in more.items():
        total[name] = total.get(name, decimal.Decimal(0)) + amount


def _max(total, other):
    for name, amount in other.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def pod_requests(pod):
    """``PodRequests(pod, {})`` for cpu and memory: {'millicores': int, 'memory_bytes': int}."""
    spec = pod.get('spec') or {}
    result = {}
    for container in spec.get('containers') or ():
        _add(result, _requests(container.get('resources')))
    sidecars, init_need = {}, {}
    for container in spec.get('initContainers') or ():
        own = _requests(container.get('resources'))
        if container.get('restartPolicy') == 'Always':
            # A sidecar runs beside the regular containers, and beside every init container after it.
            _add(result, own)
            _add(sidecars, own)
            need = dict(sidecars)
        else:
            need = dict(own)
            _add(need, sidecars)
        _max(init_need, need)
    _max(result, init_need)
    # IsPodLevelRequestsSet / applyPodLevelResources: pod-level values replace the aggregate, per resource.
    result.update(_requests(spec.get('resources')))
    _add(result, {name: _quantity.parse_quantity(str(amount))
                  for name, amount in (spec.get('overhead') or {}).items() if name in RESOURCES})
    return {'millicores': _quantity.milli_value(result.get('cpu', 0)),
            'memory_bytes': _quantity.quantity_value(result.get('memory', 0))}


def reduce_pods(pods):
    """The API server's pods (k8s_info's ``resources``) as the small list the facts module takes.

    Terminal pods (Succeeded, Failed) are left out, as the kubelet's admission leaves them out.
    """
    reduced = []
    for pod in pods or ():
        if ((pod.get('status') or {}).get('phase')) in TERMINAL_PHASES:
            continue
        metadata = pod.get('metadata') or {}
        entry = {'pod': '%s/%s' % (metadata.get('namespace') or 'default', metadata.get('name'))}
        entry.update(pod_requests(pod))
        reduced.append(entry)
    return reduced


def _largest(pods, key):
    ranked = sorted(pods, key=lambda p: (-int(p.get(key) or 0), p.get('pod') or ''))
    return ranked[:LARGEST_SHOWN]


def _pods_phrase(count):
    return '%d pod%s' % (count, '' if count == 1 else 's')


def _describe(key, amount):
    return _units.memory(amount) if key == 'memory_bytes' else _units.cpu(amount)


def skipped(reason):
    return {'checked': False, 'refusal': None, 'requested_memory_bytes': None, 'requested_millicores': None,
            'allocatable_memory_bytes': None, 'allocatable_millicores': None, 'pod_count': None, 'largest': [],
            'reason_skipped': reason}


def check(pods, allocatable):
    """The requests of ``pods`` (``reduce_pods``' list) against ``allocatable`` (_node_allocatable.compute).

    ``refusal`` says which resource falls short and names the largest pods by it; the kubelet's admission
    refuses a pod when its requests exceed what is left (``Fits``: request > allocatable - requested),
    so requests equal to allocatable still fit.
    """
    if pods is None:
        return skipped(SKIPPED_NO_API)
    requested = {'memory_bytes': sum(int(p.get('memory_bytes') or 0) for p in pods),
                 'millicores': sum(int(p.get('millicores') or 0) for p in pods)}
    available = {'memory_bytes': allocatable['allocatable_memory_bytes'],
                 'millicores': allocatable['allocatable_millicores']}
    short = [key for key in ('memory_bytes', 'millicores') if requested[key] > available[key]]
    # The resource short by the largest share of what is allocatable names the pods shown.
    ranked_by = max(short, key=lambda k: (requested[k] - available[k]) / float(max(available[k], 1))) if short \
        else 'memory_bytes'
    refusal = None
    if short:
        parts = []
        for key in short:
            parts.append('the %s bound to the node request %s of %s, more than the %s allocatable this change '
                         'gives (largest: %s)'
                         % (_pods_phrase(len(pods)), _describe(key, requested[key]), 'memory' if key == 'memory_bytes' else 'CPU',
                            _describe(key, available[key]),
                            ', '.join('%s %s' % (p['pod'], _describe(key, p.get(key) or 0))
                                      for p in _largest(pods, key))))
        refusal = ('%s: the kubelet would reject pods when it admits them again after the restart '
                   '(kubernetes/kubernetes#105523)' % '; '.join(parts))
    return {'checked': True, 'refusal': refusal,
            'requested_memory_bytes': requested['memory_bytes'], 'requested_millicores': requested['millicores'],
            'allocatable_memory_bytes': available['memory_bytes'], 'allocatable_millicores': available['millicores'],
            'pod_count': len(pods), 'largest': _largest(pods, ranked_by), 'reason_skipped': None}


def describe(fit):
    """The requests check in a sentence for the report, or None for a result from before the check existed."""
    if not fit:
        return None
    if not fit.get('checked'):
        return 'not checked: %s' % fit.get('reason_skipped')
    if fit.get('refusal'):
        return 'apply refuses: %s' % fit['refusal']
    return ('the %s bound to the node request %s and %s, within the %s and %s allocatable this change gives'
            % (_pods_phrase(fit['pod_count']), _describe('memory_bytes', fit['requested_memory_bytes']),
               _describe('millicores', fit['requested_millicores']),
               _describe('memory_bytes', fit['allocatable_memory_bytes']),
               _describe('millicores', fit['allocatable_millicores'])))


def for_change(pods, measurement, decision):
    """``check`` against the allocatable the decision's maps give (what apply writes), or why it was skipped.

    The Node's ``status.allocatable`` does not depend on enforceNodeAllocatable: capacity less both
    reservations, hard eviction and pre-allocated huge pages (_node_allocatable.compute).
    """
    current = measurement.get('current')
    if pods is not None and not current:
        return skipped('no kubelet config found: no change to check the pods against')
    if pods is None:
        return skipped(SKIPPED_NO_API)
    allocatable = _node_allocatable.compute(
        measurement['memory']['mem_total_bytes'], measurement['cpu']['capacity_millicores'],
        decision['kube_reserved'], decision['system_reserved'], current['eviction_hard'],
        current['enforce_node_allocatable'], measurement.get('hugepages_bytes') or 0)
    return check(pods, allocatable)
