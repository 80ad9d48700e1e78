"""gather() on a cgroup v2 node, reproduced as a file tree (see tests/unit/fixtures/cgroup_v2.py)."""

from __future__ import annotations

import time

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024


@pytest.fixture
def v2_node(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=600 * MIB, active_file_bytes=50 * MIB,
                         inactive_file_bytes=300 * MIB)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice', 600 * MIB, 50 * MIB, 300 * MIB)
    cgroup_v2.make_group(root, 'system.slice', anon_bytes=200 * MIB, active_file_bytes=10 * MIB,
                         inactive_file_bytes=90 * MIB)
    return root


def advancing_sleep(root, usage_per_second_usec):
    """A sleep during which the kubepods group accrues CPU time at the given rate, as a busy pod would."""
    def sleep(seconds):
        start = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - start
        cgroup_v2.set_cpu_usage(root, 'kubepods.slice', int(elapsed * usage_per_second_usec))
    return sleep


def test_v2_node_measures_working_sets_and_cpu(v2_node, tmp_path):
    facts = _facts.gather({'cgroup_root': v2_node, 'sample_seconds': 0.3, 'history': False,
                           'kubelet_config_path': str(tmp_path / 'none.yaml')},
                          sleep=advancing_sleep(v2_node, 750000))
    assert facts['cgroup']['version'] == 'v2'
    assert facts['cgroup']['mode'] == 'unified'
    assert facts['cgroup']['driver'] == 'systemd'
    assert facts['memory']['kubepods_working_set_bytes'] == 650 * MIB
    assert facts['memory']['system_slice']['working_set_bytes'] == 210 * MIB
    assert abs(facts['cpu']['kubepods_millicores'] - 750) <= 30
    assert facts['current'] is None


def test_malformed_kubelet_config_is_an_error_naming_the_file(v2_node, tmp_path):
    config = tmp_path / 'config.yaml'
    config.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: [\n')
    with pytest.raises(ConfigError, match=str(config)):
        _facts.gather({'cgroup_root': v2_node, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                       'history': False})


def test_config_found_by_option_is_read(v2_node, tmp_path):
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"systemReserved": {"memory": "1Gi"}, "enforceNodeAllocatable": ["pods", "system-reserved"]}')
    facts = _facts.gather({'cgroup_root': v2_node, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    assert facts['kubelet']['config_found_by'] == 'kubelet_config_path option'
    assert facts['current']['system_reserved'] == {'memory': '1Gi'}
    assert facts['current']['eviction_hard_source'] == 'default'
    assert facts['current']['enforce_node_allocatable'] == ['pods', 'system-reserved']


@pytest.mark.parametrize('field,enforced', [(', "enforceNodeAllocatable": []', []), ('', ['pods'])])
def test_an_explicit_empty_enforce_node_allocatable_means_no_enforcement(v2_node, tmp_path, field, enforced):
    # v1beta1 SetDefaults_KubeletConfiguration defaults only a nil list to ["pods"]; [] enforces nothing, so the
    # kubepods limit is the whole node. `or ['pods']` used to read [] as ["pods"].
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"%s}' % field)
    facts = _facts.gather({'cgroup_root': v2_node, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    assert facts['current']['enforce_node_allocatable'] == enforced
    limit = facts['recommendation']['kubepods_memory_limit_bytes']
    if enforced:
        assert limit < facts['memory']['mem_total_bytes']
    else:
        assert limit == facts['memory']['mem_total_bytes']
