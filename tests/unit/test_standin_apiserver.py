"""The stand-in API server's pods (tests/standin/apiserver.py): created as a client creates them, listed per namespace
and across namespaces with field selectors as the real API server reads them (apimachinery fields.ParseSelector,
pkg/registry/core/pod/strategy.go PodToSelectableFields), and through the Kubernetes Python client's dynamic client,
which kubernetes.core.k8s_info uses, so the role's read works against it as against a real API server.
"""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
import apiserver  # noqa: E402


@pytest.fixture
def api():
    apiserver.PODS.clear()
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), apiserver.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()
    apiserver.PODS.clear()


def call(url, method='GET', body=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def pod(namespace, name, node, phase='Running'):
    return namespace, {'kind': 'Pod', 'apiVersion': 'v1', 'metadata': {'name': name},
                       'spec': {'nodeName': node, 'containers': [{'name': 'c'}]}, 'status': {'phase': phase}}


def create(api_url, *pods):
    for namespace, body in pods:
        assert call('%s/api/v1/namespaces/%s/pods' % (api_url, namespace), 'POST', body)[0] == 201


def names(listing):
    return ['%s/%s' % (p['metadata']['namespace'], p['metadata']['name']) for p in listing['items']]


def test_pods_are_listed_across_and_within_namespaces_by_field_selector(api):
    create(api, pod('a', 'one', 'node-1'), pod('b', 'two', 'node-1', 'Succeeded'), pod('b', 'three', 'node-2'))
    assert names(call(api + '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1')[1]) == ['a/one', 'b/two']
    assert names(call(api + '/api/v1/pods?fieldSelector=spec.nodeName%3D%3Dnode-2')[1]) == ['b/three']
    assert names(call(api + '/api/v1/namespaces/b/pods?fieldSelector=spec.nodeName%3Dnode-1')[1]) == ['b/two']
    assert names(call(api + '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1,status.phase!%3DSucceeded')[1]) \
        == ['a/one']
    assert names(call(api + '/api/v1/pods')[1]) == ['a/one', 'b/three', 'b/two']
    assert names(call(api + '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-9')[1]) == []


def test_an_unsupported_field_or_a_term_without_operator_is_a_bad_request(api):
    code, status = call(api + '/api/v1/pods?fieldSelector=spec.containers%3Dx')
    assert (code, status['reason'], status['message']) == (400, 'BadRequest', 'field label not supported: spec.containers')
    assert call(api + '/api/v1/pods?fieldSelector=spec.nodeName')[0] == 400


def test_a_taken_name_is_a_conflict_and_a_deleted_pod_is_gone(api):
    create(api, pod('a', 'one', 'node-1'))
    assert call(api + '/api/v1/namespaces/a/pods', 'POST', pod('a', 'one', 'node-2')[1])[0] == 409
    assert call(api + '/api/v1/namespaces/a/pods/one', 'DELETE')[0] == 200
    assert call(api + '/api/v1/namespaces/a/pods/one')[0] == 404


def test_escaped_separators_in_a_selector_value_are_part_of_the_value():
    assert apiserver.parse_field_selector('metadata.name=a\\,b,status.phase!=Failed') == [
        ('metadata.name', '=', 'a,b'), ('status.phase', '!=', 'Failed')]


def test_the_python_clients_dynamic_client_lists_the_pods_of_a_node_as_k8s_info_does(api):
    kubernetes = pytest.importorskip('kubernetes')
    from kubernetes.dynamic import DynamicClient
    create(api, pod('a', 'one', 'node-1'), pod('b', 'two', 'node-2'))
    configuration = kubernetes.client.Configuration()
    configuration.host = api
    client = DynamicClient(kubernetes.client.ApiClient(configuration))
    pods = client.resources.get(api_version='v1', kind='Pod')
    listing = pods.get(field_selector='spec.nodeName=node-1').to_dict()
    assert names(listing) == ['a/one']
