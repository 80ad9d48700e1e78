"""_disk_use.measure on trees the test makes: the kubelet's root dir, a log dir and a runtime root."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _disk_use

KI, MI = 1024, 1024 * 1024


def write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(os.urandom(size))


@pytest.fixture
def node(tmp_path):
    """A kubelet root dir and a log dir with known non-pod and pod bytes."""
    kubelet, logs = tmp_path / 'var' / 'lib' / 'kubelet', tmp_path / 'var' / 'log'
    write(kubelet / 'pods' / '6f1e' / 'volumes' / 'kubernetes.io~empty-dir' / 'cache' / 'blob', 20 * MI)
    write(kubelet / 'cpu_manager_state', 4 * KI)
    write(kubelet / 'plugins_registry' / 'state', 2 * MI)
    write(logs / 'pods' / 'default_web_6f1e' / 'web' / '0.log', 30 * MI)
    write(logs / 'journal' / 'a1b2' / 'system.journal', 8 * MI)
    write(logs / 'containerd.log', 3 * MI)
    os.makedirs(str(logs / 'containers'))
    os.symlink(str(logs / 'pods' / 'default_web_6f1e' / 'web' / '0.log'), str(logs / 'containers' / 'web.log'))
    return tmp_path, kubelet, logs


def test_non_pod_use_is_the_root_dir_and_the_logs_without_the_pods(node):
    tmp_path, kubelet, logs = node
    result = _disk_use.measure(str(kubelet), str(logs), str(tmp_path / 'absent-runtime'))
    expected = 4 * KI + 2 * MI + 8 * MI + 3 * MI  # the pods' 20 MiB volume and 30 MiB of logs left out
    assert result['complete']
    assert abs(result['non_pod_bytes'] - expected) <= 0.02 * expected, result
    assert result['logs']['same_filesystem'] and 8 * MI <= result['logs']['journal_bytes'] < 8 * MI + 64 * KI
    vfs = os.statvfs(str(kubelet))
    assert result['filesystem']['capacity_bytes'] == vfs.f_frsize * vfs.f_blocks
    assert result['filesystem']['path'] == str(kubelet)
    # The runtime root is missing: said, and no image filesystem.
    assert result['image_filesystem'] is None
    assert any('absent-runtime' in problem for problem in result['problems'])


def test_a_runtime_root_on_the_same_filesystem_is_not_an_image_filesystem(node):
    tmp_path, kubelet, logs = node
    os.makedirs(str(tmp_path / 'var' / 'lib' / 'containerd'))
    result = _disk_use.measure(str(kubelet), str(logs), str(tmp_path / 'var' / 'lib' / 'containerd'))
    assert result['image_filesystem'] == {'path': str(tmp_path / 'var' / 'lib' / 'containerd'), 'separate': False}


@pytest.mark.skipif(not os.path.isdir('/dev/shm'), reason='needs a second filesystem')
def test_a_runtime_root_and_a_log_dir_on_another_filesystem(node, tmp_path_factory):
    import tempfile
    tmp_path, kubelet, _logs = node
    if os.stat('/dev/shm').st_dev == os.stat(str(tmp_path)).st_dev:
        pytest.skip('/dev/shm is on the same filesystem here')
    other = tempfile.mkdtemp(dir='/dev/shm')
    try:
        result = _disk_use.measure(str(kubelet), other, other)
        assert result['image_filesystem']['separate'] is True
        vfs = os.statvfs(other)
        assert result['image_filesystem']['capacity_bytes'] == vfs.f_frsize * vfs.f_blocks
        # Logs elsewhere take nothing from the kubelet's filesystem.
        assert result['logs']['same_filesystem'] is False
        assert result['non_pod_bytes'] == result['kubelet_root_dir']['non_pod_bytes']
    finally:
        os.rmdir(other)


def test_a_kubelet_root_dir_reached_through_a_link_is_not_measured(node):
    tmp_path, kubelet, logs = node
    os.symlink(str(kubelet), str(tmp_path / 'kubelet-link'))
    result = _disk_use.measure(str(tmp_path / 'kubelet-link'), str(logs))
    assert result['non_pod_bytes'] is None and result['filesystem'] is None and not result['complete']
    assert 'symbolic link' in result['problems'][0]


def test_a_walk_stopped_at_a_limit_says_its_figure_is_a_lower_bound(node):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _disk_walk
    _tmp, kubelet, logs = node
    limits = _disk_walk.Limits(entries=2, depth=64, seconds=60)
    result = _disk_use.measure(str(kubelet), str(logs), limits=limits)
    assert not result['complete']
    assert any('lower bound' in problem for problem in result['problems'])


def test_a_missing_kubelet_root_dir_is_said_plainly(tmp_path):
    missing = str(tmp_path / 'var-lib-kubelet')
    result = _disk_use.measure(missing, log_dir=str(tmp_path))
    assert result['non_pod_bytes'] is None
    assert result['problems'] == ["the kubelet's root dir %s does not exist" % missing]
