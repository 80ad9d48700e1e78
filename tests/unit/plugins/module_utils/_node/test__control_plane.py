"""_control_plane.detect on static pod directories made in tmp_path: which directory the kubelet reads, a manifest
running the API server or etcd found, and files root does not hold alone (a link, another user's, group-writable)
refused and not counted."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _control_plane

APISERVER = 'apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: kube-apiserver, command: [kube-apiserver]}\n'
ETCD = '{"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.5.15-0"}]}}'
SCHEDULER = 'kind: Pod\nspec:\n  containers:\n  - {name: s, command: [kube-scheduler]}\n'
NOBODY = 65534


def manifests(tmp_path, files):
    directory = tmp_path / 'manifests'
    directory.mkdir(mode=0o755)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def config_with(directory):
    return {'staticPodPath': str(directory)}


def test_a_kubeadm_control_plane_is_found_with_each_manifest_named(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER, 'etcd.yaml': ETCD,
                                     'kube-scheduler.yaml': SCHEDULER})
    found = _control_plane.detect(['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'], config_with(directory))
    assert found['detected'] is True and found['components'] == ['etcd', 'kube-apiserver']
    assert found['manifests'] == {'etcd.yaml': ['etcd'], 'kube-apiserver.yaml': ['kube-apiserver'],
                                  'kube-scheduler.yaml': []}
    assert found['problems'] == [] and found['path_from'] == "the kubelet config's staticPodPath"
    assert 'etcd (etcd.yaml)' in found['why'] and 'kube-apiserver (kube-apiserver.yaml)' in found['why']


def test_etcd_alone_makes_a_control_plane_node(tmp_path):
    # An external-etcd topology's etcd members, or a stacked member whose API server manifest is being replaced.
    directory = manifests(tmp_path, {'etcd.yaml': ETCD})
    assert _control_plane.detect(None, config_with(directory))['components'] == ['etcd']


def test_a_worker_with_other_static_pods_is_not_one(tmp_path):
    directory = manifests(tmp_path, {'kube-scheduler.yaml': SCHEDULER})
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and 'no static pod in' in found['why']


def test_the_flag_wins_over_the_config_as_in_the_kubelet(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    found = _control_plane.detect(['kubelet', '--pod-manifest-path', str(directory)], {'staticPodPath': '/nowhere'})
    assert found['detected'] is True and found['path_from'] == 'the kubelet flag --pod-manifest-path'


def test_an_empty_static_pod_path_runs_no_static_pod_even_with_manifests_at_kubeadms_place(tmp_path, monkeypatch):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    monkeypatch.setattr(_control_plane, 'KUBEADM_STATIC_POD_PATH', str(directory))
    for config in ({}, {'staticPodPath': ''}):
        found = _control_plane.detect(None, config)
        assert found['detected'] is False and found['static_pod_path'] is None and 'runs no static pods' in found['why']


def test_without_a_kubelet_config_kubeadms_directory_is_read(tmp_path, monkeypatch):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    monkeypatch.setattr(_control_plane, 'KUBEADM_STATIC_POD_PATH', str(directory))
    found = _control_plane.detect(None, None)
    assert found['detected'] is True and found['path_from'] == "kubeadm's default (no kubelet config found)"


def test_a_missing_directory_is_not_a_control_plane(tmp_path):
    found = _control_plane.detect(None, config_with(tmp_path / 'absent'))
    assert found['detected'] is False and found['problems'] == [] and 'no static pod directory' in found['why']


def test_dot_files_and_directories_are_skipped_as_the_kubelet_skips_them(tmp_path):
    directory = manifests(tmp_path, {'.kube-apiserver.yaml.swp': APISERVER})
    (directory / 'backup').mkdir()
    (directory / 'backup' / 'etcd.yaml').write_text(ETCD)
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and found['manifests'] == {} and found['problems'] == []


@pytest.mark.skipif(os.geteuid() != 0, reason='chown to another user needs root')
def test_a_manifest_another_user_owns_is_refused_and_does_not_count(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER, 'etcd.yaml': ETCD})
    os.chown(directory / 'kube-apiserver.yaml', NOBODY, NOBODY)
    found = _control_plane.detect(None, config_with(directory))
    assert found['components'] == ['etcd'] and list(found['manifests']) == ['etcd.yaml']
    assert len(found['problems']) == 1 and 'kube-apiserver.yaml' in found['problems'][0]
    assert 'owned by uid %d' % NOBODY in found['problems'][0]


def test_a_group_writable_manifest_is_refused(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    os.chmod(directory / 'kube-apiserver.yaml', 0o664)
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and 'writable by its group' in found['problems'][0]


def test_a_link_is_not_followed(tmp_path):
    directory = manifests(tmp_path, {})
    (tmp_path / 'elsewhere.yaml').write_text(APISERVER)
    os.symlink(tmp_path / 'elsewhere.yaml', directory / 'kube-apiserver.yaml')
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and 'symbolic link' in found['problems'][0]


def test_a_directory_writable_by_others_is_not_read(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    os.chmod(directory, 0o777)
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and found['manifests'] == {} and 'not known to be' in found['why']
    assert 'writable by its group and others' in found['problems'][0]


def test_a_linked_directory_is_not_followed(tmp_path):
    directory = manifests(tmp_path, {'kube-apiserver.yaml': APISERVER})
    os.symlink(directory, tmp_path / 'linked')
    found = _control_plane.detect(None, config_with(tmp_path / 'linked'))
    assert found['detected'] is False and 'symbolic link' in found['problems'][0]


def test_a_manifest_that_is_not_a_pod_or_not_text_is_named_and_the_rest_still_count(tmp_path):
    directory = manifests(tmp_path, {'a.yaml': 'kind: ConfigMap\n', 'etcd.yaml': ETCD})
    (directory / 'b.bin').write_bytes(b'\xff\xfe\x00kind: Pod')
    found = _control_plane.detect(None, config_with(directory))
    assert found['components'] == ['etcd']
    assert [problem.split(' not read: ')[0] for problem in found['problems']] == [
        str(directory / 'a.yaml'), str(directory / 'b.bin')]
    assert 'not UTF-8' in found['problems'][1]


def test_a_fifo_does_not_hang_the_reading(tmp_path):
    directory = manifests(tmp_path, {'etcd.yaml': ETCD})
    os.mkfifo(directory / 'kube-apiserver.yaml')
    found = _control_plane.detect(None, config_with(directory))
    assert found['components'] == ['etcd'] and 'not a regular file' in found['problems'][0]


def test_names_past_the_bound_are_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(_control_plane, 'MAX_MANIFESTS', 2)
    directory = manifests(tmp_path, {'a.yaml': SCHEDULER, 'b.yaml': SCHEDULER, 'etcd.yaml': ETCD})
    found = _control_plane.detect(None, config_with(directory))
    assert found['detected'] is False and 'only the first 2 read' in found['problems'][0]
