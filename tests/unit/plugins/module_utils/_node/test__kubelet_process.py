"""Kubelet command-line discovery: argv as real kubelets are started."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process as kp

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


def _fake_proc(tmp_path, processes, own_nspid):
    """A /proc with ``self`` and ``processes`` ({pid: (argv, NSpid ids)}); no ns/mnt link is readable, as for the
    sandboxed sampler (no CAP_SYS_PTRACE): only ``status`` tells a container's process apart."""
    def write(name, argv, nspid):
        directory = tmp_path / str(name)
        directory.mkdir()
        (directory / 'cmdline').write_bytes(b'\0'.join(arg.encode() for arg in argv) + b'\0')
        # Lines as Linux 5.10+ prints them (fs/proc/array.c task_state), trimmed.
        (directory / 'status').write_text('Name:\t%s\nPid:\t%s\nNSpid:\t%s\n' % (argv[0], nspid[0], '\t'.join(nspid)))
    write('self', ['python3'], own_nspid)
    for pid, (argv, nspid) in processes.items():
        write(pid, argv, nspid)
    return str(tmp_path)


def test_a_kubelet_in_a_nested_pid_namespace_is_not_this_nodes(tmp_path):
    proc = _fake_proc(tmp_path, {
        101: (['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'], ['101']),
        202: (['/usr/bin/containerd'], ['202']),
        303: (['/usr/bin/kubelet', '--config=/kind/config.yaml'], ['303', '57']),  # a kind node's kubelet
    }, own_nspid=['999'])
    found = kp.find_processes(kp.DEFAULT_KUBELET_NAMES + kp.DEFAULT_RUNTIME_NAMES, proc)
    assert [process.pid for process in found] == [101, 202]


def test_inside_a_container_its_own_kubelet_counts(tmp_path):
    """The sampler on an nspawn node: it and the node's kubelet are one pid namespace deep, seen from the host's."""
    proc = _fake_proc(tmp_path, {101: (['/usr/bin/kubelet'], ['4101', '101'])}, own_nspid=['4999', '999'])
    assert [process.pid for process in kp.find_processes(kp.DEFAULT_KUBELET_NAMES, proc)] == [101]
