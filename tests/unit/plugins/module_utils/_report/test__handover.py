"""kubespray host_vars and kubeadm patches, read back the way those tools read them."""

from __future__ import annotations

import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _handover
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._json_merge_patch import merge_patch

# A node_reservation_facts result as the module returns it (shortened to what is read).
FACTS = {'recommendation': {'kube_reserved': {'cpu': '80m', 'memory': '933Mi'},
                            'system_reserved': {'cpu': '50m', 'memory': '412Mi', 'pid': 1000}}}
# /var/lib/kubelet/config.yaml as kubeadm writes it (shortened).
KUBEADM_CONFIG = {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
                  'cgroupDriver': 'systemd', 'kubeReserved': {'cpu': '100m', 'ephemeral-storage': '1Gi'}}


def test_kubespray_host_vars_use_kubespray_variable_names():
    text = _handover.handover('node1', FACTS)['kubespray_host_vars']
    assert yaml.safe_load(text) == {
        'kube_reserved': True, 'kube_cpu_reserved': '80m', 'kube_memory_reserved': '933Mi',
        'system_reserved': True, 'system_cpu_reserved': '50m', 'system_memory_reserved': '412Mi',
        'system_pid_reserved': '1000'}


def test_the_kubeadm_patch_merges_into_kubeadms_config():
    rendered = _handover.handover('node1', FACTS)
    assert rendered['kubeadm_patch_name'] == 'kubeletconfiguration+strategic.yaml'
    patch = yaml.safe_load(rendered['kubeadm_patch'])
    # For maps of scalars a strategic merge patch merges as a JSON merge patch does (RFC 7386).
    merged = merge_patch(KUBEADM_CONFIG, patch)
    assert merged['kubeReserved'] == {'cpu': '80m', 'memory': '933Mi', 'ephemeral-storage': '1Gi'}
    assert merged['systemReserved'] == {'cpu': '50m', 'memory': '412Mi', 'pid': '1000'}
    assert merged['cgroupDriver'] == 'systemd'


def test_a_host_without_recommendation_gets_no_files():
    assert _handover.handover('node2', {'failed': True, 'msg': 'unreachable'}) is None
    assert _handover.kubespray_vars({}, {'memory': '1Gi'}) == {'system_reserved': True, 'system_memory_reserved': '1Gi'}
