"""_static_pod_manifest: which control-plane components a static pod manifest runs, from its containers' commands or
images; anything not a Pod or PodList fails with ParseError."""

from __future__ import annotations

import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _static_pod_manifest

# The shape kubeadm v1.31 writes to /etc/kubernetes/manifests/kube-apiserver.yaml (cmd/kubeadm/app/phases/controlplane
# manifests.go; flags and probes shortened).
KUBEADM_APISERVER = """apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: 10.0.0.10:6443
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=10.0.0.10
    - --etcd-servers=https://127.0.0.1:2379
    image: registry.k8s.io/kube-apiserver:v1.31.0
    imagePullPolicy: IfNotPresent
    name: kube-apiserver
    resources:
      requests:
        cpu: 250m
  hostNetwork: true
  priorityClassName: system-node-critical
status: {}
"""
KUBEADM_ETCD = """apiVersion: v1
kind: Pod
metadata:
  labels: {component: etcd, tier: control-plane}
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command: [etcd, --data-dir=/var/lib/etcd, --name=cp-1]
    image: registry.k8s.io/etcd:3.5.15-0
    name: etcd
"""
# A load balancer some installers run as a static pod on workers too (kubespray's nginx-proxy): not a control plane.
NGINX_PROXY = """apiVersion: v1
kind: Pod
metadata: {name: nginx-proxy, namespace: kube-system, labels: {k8s-app: kube-nginx}}
spec:
  containers:
  - name: nginx-proxy
    image: docker.io/library/nginx:1.25.2-alpine
"""


@pytest.mark.parametrize('text, expected', [
    (KUBEADM_APISERVER, ['kube-apiserver']),
    (KUBEADM_ETCD, ['etcd']),
    (NGINX_PROXY, []),
    # RKE2 runs etcd from its own image with the command naming the program.
    ('{"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "etcd", '
     '"image": "index.docker.io/rancher/hardened-etcd:v3.5.13-k3s1-build20240531", "command": ["etcd"]}]}}', ['etcd']),
    # A path to the program counts by its last part; no command: the image's repository name (a registry port kept apart).
    ('kind: Pod\nspec:\n  containers:\n  - {name: a, command: [/usr/local/bin/kube-apiserver, --v=2]}\n', ['kube-apiserver']),
    ('kind: Pod\nspec:\n  containers:\n  - {name: a, image: "registry.local:5000/k8s/etcd:3.5.15-0"}\n', ['etcd']),
    ('kind: Pod\nspec:\n  containers:\n  - {name: a, image: "registry.k8s.io/etcd@sha256:' + 'a' * 64 + '"}\n', ['etcd']),
    # The command decides over the image: this container runs a shell, not etcd.
    ('kind: Pod\nspec:\n  containers:\n  - {name: etcd, image: registry.k8s.io/etcd:3.5.15-0, command: [sh, -c, "etcdctl"]}\n', []),
    # Labels and the pod's name do not run anything.
    ('kind: Pod\nmetadata: {name: etcd, labels: {component: etcd}}\nspec:\n  containers:\n  - {name: x, image: busybox}\n', []),
    # Init containers finish before the pod runs.
    ('kind: Pod\nspec:\n  initContainers:\n  - {name: x, image: registry.k8s.io/etcd:3.5.15-0}\n  containers: []\n', []),
    # A PodList: every pod's containers, each component once and sorted.
    (json.dumps({'kind': 'PodList', 'items': [
        {'kind': 'Pod', 'spec': {'containers': [{'name': 'b', 'command': ['kube-apiserver']}]}},
        {'kind': 'Pod', 'spec': {'containers': [{'name': 'a', 'command': ['etcd']}, {'name': 'c', 'command': ['etcd']}]}}]}),
     ['etcd', 'kube-apiserver']),
    ('kind: Pod\n', []),
])
def test_components_a_manifest_runs(text, expected):
    assert _static_pod_manifest.control_plane_components(text, '/etc/kubernetes/manifests/x.yaml') == expected


@pytest.mark.parametrize('text, message', [
    ('', 'not a static pod'),  # an empty file decodes to nothing; the kubelet refuses it too (no kind)
    ('apiVersion: v1\nkind: ConfigMap\n', "kind is 'ConfigMap'"),
    ('- kind: Pod\n', 'expected a mapping'),
    ('kind: Pod\nspec: [1]\n', 'spec is not a mapping'),
    ('kind: Pod\nspec: {containers: {name: etcd}}\n', 'spec.containers is not a list'),
    ('kind: Pod\nspec: {containers: [{command: etcd}]}\n', 'command is not a list of strings'),
    ('kind: Pod\nspec: {containers: [{image: 5}]}\n', 'image is not a string'),
    ('kind: PodList\nitems: {a: 1}\n', 'items is not a list of pods'),
    ('kind: Pod\nspec: {containers: [\n', 'invalid YAML'),
    ('{"kind": "Pod", ', 'invalid JSON'),
    ('[' * 100 + ']' * 100, 'nested more than'),
    ('kind: Pod\n# ' + 'x' * _static_pod_manifest.MAX_MANIFEST_BYTES, 'more than a manifest holds'),
])
def test_what_is_not_a_static_pod_fails_with_parse_error(text, message):
    with pytest.raises(ParseError) as raised:
        _static_pod_manifest.control_plane_components(text, '/m/x.yaml')
    assert message in str(raised.value) and '/m/x.yaml' in str(raised.value)
