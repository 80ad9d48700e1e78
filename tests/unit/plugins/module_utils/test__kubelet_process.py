"""Kubelet command-line discovery: argv as real kubelets are started."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _kubelet_process as kp

# kubeadm's systemd drop-in (10-kubeadm.conf) expands to this command line.
KUBEADM_ARGV = ['/usr/bin/kubelet', '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
                '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=/var/lib/kubelet/config.yaml',
                '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock']


@pytest.mark.parametrize('argv,name', [
    (KUBEADM_ARGV, 'kubelet'),
    (['/usr/bin/python3', '/usr/local/bin/kubelet', '--config', 'x'], 'kubelet'),
    (['/usr/bin/containerd'], 'containerd'),
    (['python3.11'], 'python3.11'),
    ([], None),
])
def test_program_name(argv, name):
    assert kp.program_name(argv) == name


def test_config_paths_from_both_flag_spellings():
    assert kp.config_paths(KUBEADM_ARGV) == ('/var/lib/kubelet/config.yaml', None)
    assert kp.config_paths(['kubelet', '--config', '/a.yaml', '--config-dir', '/d']) == ('/a.yaml', '/d')


def test_reservation_flags_become_config_fields():
    argv = ['kubelet', '--kube-reserved=cpu=100m,memory=1Gi', '--system-reserved', 'memory=500Mi',
            '--eviction-hard=memory.available<100Mi,nodefs.available<10%',
            '--enforce-node-allocatable=pods,kube-reserved', '--kube-reserved-cgroup=/kube.slice',
            '--cgroup-driver=systemd']
    fields = kp.config_from_flags(argv)
    assert fields['kubeReserved'] == {'cpu': '100m', 'memory': '1Gi'}
    assert fields['systemReserved'] == {'memory': '500Mi'}
    assert fields['evictionHard'] == {'memory.available': '100Mi', 'nodefs.available': '10%'}
    assert fields['enforceNodeAllocatable'] == ['pods', 'kube-reserved']
    assert fields['kubeReservedCgroup'] == '/kube.slice'
    assert fields['cgroupDriver'] == 'systemd'


def test_malformed_map_flag_is_refused():
    with pytest.raises(ValueError, match='key=value'):
        kp.config_from_flags(['kubelet', '--kube-reserved=cpu'])
