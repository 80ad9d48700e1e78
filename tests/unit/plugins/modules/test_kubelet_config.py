"""kubelet_config's main() in-process on a temporary file: check mode, a real change, idempotence, bad options."""

from __future__ import annotations

import functools

import pytest

from ansible_collections.nodealloc.kubelet.plugins.modules import kubelet_config
from ansible_collections.nodealloc.kubelet.tests.unit.utils.module_harness import run_module

ORIGINAL = ('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
            '"kubeReserved": {"memory": "1Gi"}}')


@pytest.fixture
def run(monkeypatch):
    """run(args) -> the result of kubelet_config's main() with those module args."""
    return functools.partial(run_module, kubelet_config.main, monkeypatch=monkeypatch)


@pytest.fixture
def config(tmp_path):
    path = tmp_path / 'config.json'
    path.write_text(ORIGINAL)
    return path


def change(config, **extra):
    return dict({'path': str(config), 'kube_reserved': {'memory': '2Gi'}, 'validate_against_node': False}, **extra)


def test_check_mode_predicts_and_writes_nothing(run, config):
    result = run(change(config, _ansible_check_mode=True))
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is True and result['changed_fields'] == ['kubeReserved']
    assert config.read_text() == ORIGINAL


def test_real_run_writes_then_is_idempotent(run, config):
    assert run(change(config))['changed'] is True
    assert '"2Gi"' in config.read_text()
    written = config.read_text()
    assert run(change(config))['changed'] is False
    assert run(change(config, _ansible_check_mode=True))['changed'] is False
    assert config.read_text() == written


@pytest.mark.parametrize('bad,words', [
    ({'drop_in_name': '50-nodealloc.yaml'}, "drop_in_name: '50-nodealloc.yaml' must be a file name ending in .conf"),
    ({'kubepods_margin': 'lots'}, "kubepods_margin: 'lots' must be a Kubernetes quantity"),
    ({'kubepods_margin': '-1Gi'}, "kubepods_margin: '-1Gi' must not be negative"),
    ({'lock_timeout': -1}, 'lock_timeout: -1.0 must be >= 0'),
])
def test_bad_options_fail_before_writing(run, config, bad, words):
    result = run(change(config, **bad))
    assert result['failed'] is True and words in result['msg'], result['msg']
    assert config.read_text() == ORIGINAL
