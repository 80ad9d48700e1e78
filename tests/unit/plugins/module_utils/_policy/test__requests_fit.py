"""The requests fit (issue 30 item 4): pod requests as k8s.io/component-helpers PodRequests computes them, and the
refusal of a change whose allocatable falls below the sum of the requests of the pods bound to the node.

The request cases are rows of upstream's own tables, kubernetes/kubernetes
staging/src/k8s.io/component-helpers/resource/helpers_test.go at commit 0085214e563468088672cf8c50849884198a18cc:
TestPodRequestsAndLimits (getPod: one container and one init container with the same requests, plus the overhead),
TestPodResourceRequests (rows with the default options) and TestPodLevelResourceRequests (rows with
SkipPodLevelResources false and no status). Only the requests we count (cpu, memory) are kept; each row's name is
upstream's. Expected values are upstream's quantities, turned into millicores / bytes with Value()/MilliValue().
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit

MI = 1 << 20
GI = 1 << 30


def _c(cpu=None, memory=None, name='c', sidecar=False):
    requests = {}
    if cpu is not None:
        requests['cpu'] = cpu
    if memory is not None:
        requests['memory'] = memory
    container = {'name': name, 'resources': {'requests': requests} if requests else {}}
    if sidecar:
        container['restartPolicy'] = 'Always'
    return container


def _pod(containers=(), init=(), overhead=None, pod_level=None):
    spec = {'containers': list(containers), 'initContainers': list(init)}
    if overhead:
        spec['overhead'] = overhead
    if pod_level:
        spec['resources'] = {'requests': pod_level}
    return {'metadata': {'namespace': 'default', 'name': 'p'}, 'spec': spec, 'status': {'phase': 'Running'}}


def _get_pod(cpu=None, memory=None, overhead=None):
    """helpers_test.go getPod: the same requests on one container and one init container, and the overhead."""
    return _pod([_c(cpu, memory)], [_c(cpu, memory, name='init')], overhead=overhead)


UPSTREAM = [
    # TestPodRequestsAndLimits
    ('just-limit-no-overhead', _pod([{'name': 'c', 'resources': {'limits': {'cpu': '9'}}}]), 0, 0),
    ('just-overhead', _get_pod(overhead={'cpu': '5', 'memory': '5'}), 5000, 5),
    ('req-and-overhead', _get_pod('1', '10', {'cpu': '5', 'memory': '5'}), 6000, 15),
    # TestPodResourceRequests
    ('nil options, larger init container', _pod([_c('1')], [_c('4')]), 4000, 0),
    ('nil options, larger containers', _pod([_c('2'), _c('3')], [_c('2')]), 5000, 0),
    ('pod overhead included', _pod([_c('2'), _c('3')], [_c('2')], overhead={'cpu': '1', 'memory': '1Gi'}),
     6000, GI),
    ('restartable init container', _pod([_c('1')], [_c('1', sidecar=True)]), 2000, 0),
    ('multiple restartable init containers',
     _pod([_c('1')], [_c('5'), _c('1', sidecar=True), _c('2', sidecar=True), _c('3', sidecar=True)]), 7000, 0),
    ('multiple restartable and regular init containers',
     _pod([_c('1')], [_c('5'), _c('1', sidecar=True), _c('2', sidecar=True), _c('5'), _c('3', sidecar=True)]),
     8000, 0),
    ('restartable-init, init and regular', _pod([_c('100')], [_c('10', sidecar=True), _c('200')]), 210000, 0),
    # TestPodLevelResourceRequests
    ('pod level memory resource with SkipPodLevelResources false', _pod(pod_level={'memory': '2Mi'}), 0, 2 * MI),
    ('pod level memory and container level cpu resources with SkipPodLevelResources false',
     _pod([_c('2m')], pod_level={'memory': '2Mi'}), 2, 2 * MI),
    ('pod level unsupported resources set at pod-level with SkipPodLevelResources false',
     _pod([_c(memory='3Mi')], pod_level={'storage': '2Mi'}), 0, 3 * MI),
    ('both container-level and pod-level resources set with SkipPodLevelResources false',
     _pod([_c('2m', '3Mi')], pod_level={'memory': '6Mi', 'cpu': '8m'}), 8, 6 * MI),
    ('container-level resources and init container set with SkipPodLevelResources false',
     _pod([_c('2m', '3Mi')], [_c('4m', '5Mi')]), 4, 5 * MI),
    ('container-level resources and sidecar container set with SkipPodLevelResources false',
     _pod([_c('2m', '3Mi')], [_c('4m', '5Mi', sidecar=True)]), 6, 8 * MI),
    ('container-level resources, init and sidecar container set with SkipPodLevelResources false',
     _pod([_c('2m', '3Mi')], [_c('4m', '5Mi', sidecar=True), _c('8m', '6Mi')]), 12, 11 * MI),
    ('pod-level resources, container-level resources, init and sidecar container set with SkipPodLevelResources '
     'false', _pod([_c('2m', '3Mi')], [_c('4m', '5Mi', sidecar=True), _c('8m', '6Mi')],
                   pod_level={'memory': '15Mi', 'cpu': '18m'}), 18, 15 * MI),
]


@pytest.mark.parametrize('name,pod,millicores,memory_bytes', UPSTREAM, ids=[row[0] for row in UPSTREAM])
def test_pod_requests_match_upstreams_pod_requests_table(name, pod, millicores, memory_bytes):
    assert _requests_fit.pod_requests(pod) == {'millicores': millicores, 'memory_bytes': memory_bytes}


def test_the_sum_is_exact_and_rounded_up_once_per_pod_as_node_info_does():
    # 0.5m + 0.5m is 1m exactly (MilliValue of the pod's sum), not 1m + 1m.
    assert _requests_fit.pod_requests(_pod([_c('0.5m'), _c('0.5m')]))['millicores'] == 1
    assert _requests_fit.pod_requests(_pod([_c('0.0005')]))['millicores'] == 1


def test_terminal_pods_are_left_out_and_each_pod_is_named_by_namespace_and_name():
    running = _pod([_c('100m', '64Mi')])
    running['metadata'] = {'namespace': 'kube-system', 'name': 'coredns-1'}
    pending = _pod([_c('50m')])
    pending['metadata'] = {'namespace': 'web', 'name': 'api-0'}
    pending['status'] = {'phase': 'Pending'}
    done = [dict(_pod([_c('64')]), status={'phase': phase}) for phase in ('Succeeded', 'Failed')]
    assert _requests_fit.reduce_pods([running, done[0], pending, done[1]]) == [
        {'pod': 'kube-system/coredns-1', 'millicores': 100, 'memory_bytes': 64 * MI},
        {'pod': 'web/api-0', 'millicores': 50, 'memory_bytes': 0}]


def _allocatable(memory_bytes, millicores):
    return {'allocatable_memory_bytes': memory_bytes, 'allocatable_millicores': millicores}


PODS = [{'pod': 'a/small', 'millicores': 100, 'memory_bytes': 1 * GI},
        {'pod': 'b/big', 'millicores': 200, 'memory_bytes': 4 * GI},
        {'pod': 'c/mid', 'millicores': 1500, 'memory_bytes': 2 * GI},
        {'pod': 'd/tiny', 'millicores': 10, 'memory_bytes': 64 * MI}]


def test_requests_above_the_new_allocatable_memory_are_refused_naming_the_three_largest_pods():
    fit = _requests_fit.check(PODS, _allocatable(6 * GI, 4000))
    assert fit['checked'] is True and fit['reason_skipped'] is None
    assert fit['requested_memory_bytes'] == 7 * GI + 64 * MI and fit['requested_millicores'] == 1810
    assert [p['pod'] for p in fit['largest']] == ['b/big', 'c/mid', 'a/small']
    assert 'request 7.06 GiB of memory, more than the 6.00 GiB allocatable' in fit['refusal']
    assert 'b/big 4.00 GiB, c/mid 2.00 GiB, a/small 1.00 GiB' in fit['refusal']
    assert 'CPU' not in fit['refusal']


def test_cpu_short_names_the_largest_pods_by_cpu():
    fit = _requests_fit.check(PODS, _allocatable(64 * GI, 1000))
    assert 'request 1810m of CPU, more than the 1000m allocatable' in fit['refusal']
    assert [p['pod'] for p in fit['largest']] == ['c/mid', 'b/big', 'a/small']


def test_requests_equal_to_allocatable_still_fit():
    # Fits refuses only a request above what is left (noderesources fitsRequest: request > allocatable - requested).
    fit = _requests_fit.check(PODS, _allocatable(7 * GI + 64 * MI, 1810))
    assert fit['refusal'] is None
    assert _requests_fit.check(PODS, _allocatable(7 * GI + 64 * MI - 1, 1810))['refusal']
    assert _requests_fit.check(PODS, _allocatable(7 * GI + 64 * MI, 1809))['refusal']


def test_no_pod_list_skips_the_check_and_says_why():
    fit = _requests_fit.check(None, _allocatable(1, 1))
    assert fit['checked'] is False and fit['refusal'] is None
    assert 'API server' in fit['reason_skipped'] and 'reservations_api_check' in fit['reason_skipped']


def test_an_empty_node_fits():
    fit = _requests_fit.check([], _allocatable(0, 0))
    assert fit['checked'] is True and fit['refusal'] is None and fit['pod_count'] == 0


def _measurement(kube_reserved, system_reserved, eviction_hard=None):
    return {'memory': {'mem_total_bytes': 16 * GI}, 'cpu': {'capacity_millicores': 4000}, 'hugepages_bytes': 0,
            'current': {'kube_reserved': kube_reserved, 'system_reserved': system_reserved,
                        'eviction_hard': eviction_hard or {'memory.available': '100Mi'},
                        'enforce_node_allocatable': ['pods']}}


def test_the_change_is_checked_against_the_allocatable_the_decisions_maps_give():
    measurement = _measurement({'memory': '1Gi', 'cpu': '100m'}, {'memory': '1Gi', 'cpu': '100m'})
    # What apply would write: 8Gi + 4Gi reserved; allocatable = 16Gi - 12Gi - 100Mi (hard eviction), not the config's.
    decision = {'kube_reserved': {'memory': '8Gi', 'cpu': '500m'}, 'system_reserved': {'memory': '4Gi', 'cpu': '500m'}}
    pods = [{'pod': 'a/x', 'millicores': 100, 'memory_bytes': 4 * GI}]
    fit = _requests_fit.for_change(pods, measurement, decision)
    assert fit['allocatable_memory_bytes'] == 4 * GI - 100 * MI and fit['allocatable_millicores'] == 3000
    assert 'a/x 4.00 GiB' in fit['refusal']
    kept = {'kube_reserved': {'memory': '1Gi', 'cpu': '100m'}, 'system_reserved': {'memory': '1Gi', 'cpu': '100m'}}
    assert _requests_fit.for_change(pods, measurement, kept)['refusal'] is None


def test_no_kubelet_config_skips_the_check_and_says_why():
    measurement = dict(_measurement({}, {}), current=None)
    fit = _requests_fit.for_change([], measurement, {'kube_reserved': {}, 'system_reserved': {}})
    assert fit['checked'] is False and 'no kubelet config' in fit['reason_skipped']


def test_gather_returns_the_requests_fit_from_the_pod_requests_option(tmp_path, monkeypatch):
    # Through the module's gather(): the option reaches the check, its absence says the check was skipped.
    from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=10 * MI, active_file_bytes=0, inactive_file_bytes=0)
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}')
    options = {'cgroup_root': root, 'sample_seconds': 0, 'kubelet_config_path': str(config), 'history': False}
    assert _gather.gather(options)['requests_fit']['reason_skipped'] == _requests_fit.SKIPPED_NO_API
    huge = [{'pod': 'ns/huge', 'millicores': 1, 'memory_bytes': 1 << 62}]
    fit = _gather.gather(dict(options, pod_requests=huge))['requests_fit']
    assert fit['checked'] is True and 'ns/huge' in fit['refusal']
