"""Who manages the kubelet and which flags override a file, read from file trees as nodes have them.

The kubeadm files are as the kubeadm packages and ``kubeadm init``/``join`` write them (the
drop-in is kubernetes/release cmd/krel/templates/latest/kubeadm/10-kubeadm.conf, installed by
the pkgs.k8s.io packages under /usr/lib/systemd/system/kubelet.service.d); the kubespray ones
follow roles/kubernetes/node/templates/kubelet.service.j2 and kubelet.env.v1beta1.j2.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_ownership as ownership

KUBELET_SERVICE = """[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
KUBEADM_DROP_IN = """# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
"""
KUBEADM_FLAGS = ('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
                 '--pod-infra-container-image=registry.k8s.io/pause:3.10"\n')
KUBESPRAY_SERVICE = """[Unit]
Description=Kubernetes Kubelet Server
Documentation=https://github.com/GoogleCloudPlatform/kubernetes
After=containerd.service
Wants=containerd.service

[Service]
EnvironmentFile=-/etc/kubernetes/kubelet.env
ExecStart=/usr/local/bin/kubelet \\
\t\t$KUBE_LOGTOSTDERR \\
\t\t$KUBE_LOG_LEVEL \\
\t\t$KUBELET_API_SERVER \\
\t\t$KUBELET_ADDRESS \\
\t\t$KUBELET_PORT \\
\t\t$KUBELET_HOSTNAME \\
\t\t$KUBELET_ARGS \\
\t\t$DOCKER_SOCKET \\
\t\t$KUBELET_NETWORK_PLUGIN \\
\t\t$KUBELET_VOLUME_PLUGIN \\
\t\t$KUBELET_CLOUDPROVIDER
Restart=always
RestartSec=10s
"""
KUBESPRAY_ENV = """KUBE_LOGTOSTDERR="--logtostderr=true"
KUBE_LOG_LEVEL="--v=2"
KUBELET_ADDRESS="--node-ip=10.0.0.11"
KUBELET_HOSTNAME="--hostname-override=node1"

KUBELET_ARGS="--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \\
--config=/etc/kubernetes/kubelet-config.yaml \\
--kubeconfig=/etc/kubernetes/kubelet.conf \\
--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock \\
--runtime-cgroups=/system.slice/containerd.service \\
  --config-dir=/etc/kubernetes/kubelet.conf.d "
KUBELET_CLOUDPROVIDER=""

PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""


def tree(root, files):
    for path, text in files.items():
        target = root / path.lstrip('/')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(root)


def kubeadm_node(tmp_path, extra_args='KUBELET_EXTRA_ARGS=\n'):
    return tree(tmp_path, {
        '/usr/lib/systemd/system/kubelet.service': KUBELET_SERVICE,
        '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf': KUBEADM_DROP_IN,
        '/var/lib/kubelet/kubeadm-flags.env': KUBEADM_FLAGS,
        '/var/lib/kubelet/config.yaml': 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n',
        '/etc/default/kubelet': extra_args,
    })


def test_a_kubeadm_node_is_recognised_with_its_config_and_extra_args_file(tmp_path):
    found = ownership.detect(root=kubeadm_node(tmp_path))
    assert found['managers'] == ['kubeadm']
    assert found['evidence'] == ['kubeadm: /var/lib/kubelet/kubeadm-flags.env',
                                 'kubeadm: /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf']
    assert found['config_path'] == '/var/lib/kubelet/config.yaml' and found['config_dir'] is None
    assert found['kubeadm_extra_args_file'] == '/etc/default/kubelet' and found['kubeadm_extra_args'] == ''
    assert found['unit']['environment_files'] == ['/var/lib/kubelet/kubeadm-flags.env', '/etc/default/kubelet']
    assert found['reservation_flags'] == [] and found['refusal'] is None


def test_a_reservation_flag_in_kubeadm_extra_args_is_named_with_its_file(tmp_path):
    root = kubeadm_node(tmp_path, 'KUBELET_EXTRA_ARGS="--kube-reserved=cpu=100m,memory=1Gi --node-labels=a=b"\n')
    found = ownership.detect(root=root)
    assert [(f['flag'], f['value']) for f in found['reservation_flags']] == [('--kube-reserved', 'cpu=100m,memory=1Gi')]
    assert found['kubeadm_extra_args'] == '--kube-reserved=cpu=100m,memory=1Gi --node-labels=a=b'
    source = found['reservation_flags'][0]['source']
    assert source.startswith('/etc/default/kubelet ($KUBELET_EXTRA_ARGS')
    assert '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf' in source
    assert '--kube-reserved=cpu=100m,memory=1Gi (from /etc/default/kubelet' in found['refusal']


def test_an_admin_drop_in_masks_the_packaged_one_of_the_same_name_and_sorts_by_name(tmp_path):
    root = kubeadm_node(tmp_path)
    tree(tmp_path, {'/etc/systemd/system/kubelet.service.d/10-kubeadm.conf':
                    KUBEADM_DROP_IN.replace('$KUBELET_EXTRA_ARGS', '$KUBELET_EXTRA_ARGS --eviction-hard=memory.available<5%'),
                    '/etc/systemd/system/kubelet.service.d/05-env.conf': '[Service]\nEnvironment=A=1\n'})
    fragment, drop_ins = ownership.unit_files('kubelet.service', root)
    assert fragment == '/usr/lib/systemd/system/kubelet.service'
    assert drop_ins == ['/etc/systemd/system/kubelet.service.d/05-env.conf',
                        '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf']
    found = ownership.detect(root=root)
    assert found['reservation_flags'] == [{
        'flag': '--eviction-hard', 'value': 'memory.available<5%',
        'source': 'ExecStart in /etc/systemd/system/kubelet.service.d/10-kubeadm.conf'}]


def test_a_kubespray_node_with_a_config_dir_from_its_env_file(tmp_path):
    root = tree(tmp_path, {'/etc/systemd/system/kubelet.service': KUBESPRAY_SERVICE,
                           '/etc/kubernetes/kubelet.env': KUBESPRAY_ENV,
                           '/etc/kubernetes/kubelet-config.yaml': 'kind: KubeletConfiguration\n'})
    found = ownership.detect(root=root)
    assert found['managers'] == ['kubespray']
    assert found['config_path'] == '/etc/kubernetes/kubelet-config.yaml'
    assert found['config_dir'] == '/etc/kubernetes/kubelet.conf.d'
    assert found['config_dir_source'].startswith('/etc/kubernetes/kubelet.env ($KUBELET_ARGS')
    assert found['flags_from'] == 'unit files'


def test_the_running_command_line_decides_and_the_files_say_where_a_flag_came_from(tmp_path):
    root = kubeadm_node(tmp_path, 'KUBELET_EXTRA_ARGS=--system-reserved=memory=500Mi\n')
    # The kubelet still runs with the flags it was started with: no --system-reserved yet.
    running = ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml', '--config-dir', '/etc/kubernetes/kubelet.conf.d']
    found = ownership.detect(running, 'kubelet.service', root)
    assert found['reservation_flags'] == [] and found['config_dir'] == '/etc/kubernetes/kubelet.conf.d'
    assert found['flags_from'] == 'running kubelet'
    running.append('--kube-reserved-cgroup=/kube.slice')
    found = ownership.detect(running, 'kubelet.service', root)
    assert found['reservation_flags'][0]['source'].startswith("the running kubelet's command line (not in ")


@pytest.mark.parametrize('exec_start,variables,words', [
    # systemd.service(5): "$FOO" alone is split at whitespace, "${FOO}" stays one word.
    ('/usr/bin/kubelet $ARGS', {'ARGS': '--a=1  --b=2'}, ['/usr/bin/kubelet', '--a=1', '--b=2']),
    ('/usr/bin/kubelet ${ARGS}', {'ARGS': '--a=1 --b=2'}, ['/usr/bin/kubelet', '--a=1 --b=2']),
    ('/usr/bin/kubelet --x=${X}y', {'X': 'z'}, ['/usr/bin/kubelet', '--x=zy']),
    ('-/usr/bin/kubelet $UNSET', {}, ['/usr/bin/kubelet']),
])
def test_exec_start_expansion(exec_start, variables, words):
    assert [word for word, _var in ownership._expand(exec_start, variables)] == words


def test_no_unit_and_no_files_is_not_an_error(tmp_path):
    found = ownership.detect(root=str(tmp_path))
    assert found['managers'] == [] and found['unit']['fragment_path'] is None and found['flags_from'] is None
