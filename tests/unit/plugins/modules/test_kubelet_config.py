"""kubelet_config's main() in-process on a temporary file: check mode, a real change, idempotence, bad options."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.nodealloc.kubelet.plugins.modules import kubelet_config

ORIGINAL = ('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
            '"kubeReserved": {"memory": "1Gi"}}')


class AnsibleExitJson(Exception):
    pass


class AnsibleFailJson(Exception):
    pass


@pytest.fixture(autouse=True)
def module_exits(monkeypatch):
    def exit_json(_module, **result):
        raise AnsibleExitJson(result)

    def fail_json(_module, msg, **result):
        raise AnsibleFailJson(dict(result, msg=msg, failed=True))

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)


@pytest.fixture
def config(tmp_path):
    path = tmp_path / 'config.json'
    path.write_text(ORIGINAL)
    return path


def run(args):
    with patch_module_args(args):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as caught:
            kubelet_config.main()
    return caught.value.args[0]


def change(config, **extra):
    return dict({'path': str(config), 'kube_reserved': {'memory': '2Gi'}, 'validate_against_node': False}, **extra)


def test_check_mode_predicts_and_writes_nothing(config):
    result = run(change(config, _ansible_check_mode=True))
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is True and result['changed_fields'] == ['kubeReserved']
    assert config.read_text() == ORIGINAL


def test_real_run_writes_then_is_idempotent(config):
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
def test_bad_options_fail_before_writing(config, bad, words):
    result = run(change(config, **bad))
    assert result['failed'] is True and words in result['msg'], result['msg']
    assert config.read_text() == ORIGINAL
