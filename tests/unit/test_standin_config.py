"""The stand-in kubelet's config loading: the file, its drop-ins, and what stops start-up there.

Follows cmd/kubelet/app/server.go mergeKubeletConfigurations (drop-ins in filepath.WalkDir order,
merged as a JSON merge patch) and codec.go DecodeKubeletConfiguration (kind required, lenient
decoding of unknown v1beta1 fields, wrong types refused).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
from kubelet_logic import config as kubelet_config  # noqa: E402

HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
KNOWN = {'apiVersion', 'kind', 'kubeReserved', 'systemReserved', 'cgroupDriver'}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    return str(path)


def test_drop_ins_apply_in_lexical_order_subdirectories_included_and_null_deletes(tmp_path):
    main = write(tmp_path / 'config.yaml', HEAD + 'cgroupDriver: systemd\nkubeReserved:\n  cpu: 100m\n  memory: 1Gi\n')
    conf_d = tmp_path / 'conf.d'
    write(conf_d / '20-later.conf', HEAD + 'kubeReserved:\n  memory: 2Gi\n')
    write(conf_d / '10-first.conf', '{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",'
                                    ' "kubeReserved": {"memory": "3Gi", "cpu": null}}')
    write(conf_d / '15-dir' / '00-inner.conf', HEAD + 'systemReserved:\n  memory: 500Mi\n')
    write(conf_d / '30-ignored.yaml', HEAD + 'cgroupDriver: cgroupfs\n')
    config, sources = kubelet_config.load(main, str(conf_d), KNOWN, lambda *a, **k: None)
    assert [os.path.relpath(s, str(tmp_path)) for s in sources] == [
        'config.yaml', 'conf.d/10-first.conf', 'conf.d/15-dir/00-inner.conf', 'conf.d/20-later.conf']
    assert config['kubeReserved'] == {'memory': '2Gi'}
    assert config['systemReserved'] == {'memory': '500Mi'} and config['cgroupDriver'] == 'systemd'


def test_an_unknown_field_is_logged_and_start_up_goes_on(tmp_path):
    logged = []
    main = write(tmp_path / 'config.yaml', HEAD + 'kubeReservedd:\n  memory: 1Gi\n')
    config, _sources = kubelet_config.load(main, None, KNOWN, lambda event, **fields: logged.append((event, fields)))
    assert config['kubeReservedd'] == {'memory': '1Gi'}
    assert logged[0][0] == 'lenient-decoding' and '"kubeReservedd"' in logged[0][1]['message']


@pytest.mark.parametrize('body,message', [
    ('kubeReserved:\n  memory: 1\n', 'of type map[string]string'),
    ('kubeReserved: [memory]\n', 'of type map[string]string'),
    ('enforceNodeAllocatable: pods\n', 'of type []string'),
    ('cgroupDriver: 1\n', 'of type string'),
])
def test_a_field_of_the_wrong_type_stops_start_up(tmp_path, body, message):
    with pytest.raises(kubelet_config.ConfigError, match=message.replace('[', r'\[').replace(']', r'\]')):
        kubelet_config.load(write(tmp_path / 'config.yaml', HEAD + body), None, KNOWN, lambda *a, **k: None)


def test_a_drop_in_of_the_wrong_type_stops_start_up_once_merged(tmp_path):
    main = write(tmp_path / 'config.yaml', HEAD + 'kubeReserved:\n  memory: 1Gi\n')
    write(tmp_path / 'conf.d' / '10-bad.conf', HEAD + 'kubeReserved:\n  memory: 2\n')
    with pytest.raises(kubelet_config.ConfigError, match='failed to merge the drop-in'):
        kubelet_config.load(main, str(tmp_path / 'conf.d'), KNOWN, lambda *a, **k: None)


@pytest.mark.parametrize('head', ['kind: KubeletConfiguration\n', 'apiVersion: kubelet.config.k8s.io/v1beta1\n',
                                  'apiVersion: v1\nkind: KubeletConfiguration\n'])
def test_the_kind_and_version_are_required(tmp_path, head):
    with pytest.raises(kubelet_config.ConfigError, match='no kind'):
        kubelet_config.load(write(tmp_path / 'config.yaml', head + 'cgroupDriver: systemd\n'), None, KNOWN,
                            lambda *a, **k: None)


@pytest.mark.parametrize('enforce,memory_qos,version,memory_min', [
    # enforceExistingCgroup: with MemoryQoS on, an enforced system-reserved group gets memory.min = its reservation,
    (['pods', 'system-reserved'], True, 'v2', str(64 << 20)),
    # not without the gate, not on cgroup v1 (no such file), and never for the compressible key (CPU only).
    (['pods', 'system-reserved'], False, 'v2', None),
    (['pods', 'system-reserved'], True, 'v1', None),
    (['pods', 'system-reserved-compressible'], True, 'v2', None),
])
def test_the_standin_writes_memory_min_on_an_enforced_reserved_group_with_memory_qos(
        tmp_path, monkeypatch, enforce, memory_qos, version, memory_min):
    monkeypatch.setenv('STANDIN_LOG', str(tmp_path / 'standin.log'))
    import importlib
    standin = importlib.import_module('kubelet')
    monkeypatch.setattr(standin, 'LOG_PATH', str(tmp_path / 'standin.log'))
    from kubelet_logic import machine, validation
    root = str(tmp_path / 'cg')
    os.makedirs(os.path.join(root, 'sysres.slice'))
    layout = machine.Layout(version, root, root, root)
    config = {'enforceNodeAllocatable': enforce, 'systemReservedCgroup': '/sysres.slice', 'cgroupDriver': 'systemd',
              'systemReserved': {'memory': '64Mi', 'cpu': '100m'}}
    system = validation.parse_resource_list(config['systemReserved'])
    standin.enforce_reserved(config, layout, None, system, memory_qos)
    path = os.path.join(root, 'sysres.slice', 'memory.min')
    assert (open(path).read() if os.path.exists(path) else None) == memory_min
