"""Loading KubeletConfiguration files and drop-ins, on real files on disk."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_file as kc
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._json_merge_patch import merge_patch
from ansible_collections.nodealloc.kubelet.tests.unit.utils.time_limit import within

# The head of the config kubeadm 1.30 writes to /var/lib/kubelet/config.yaml.
KUBEADM_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
kind: KubeletConfiguration
kubeReserved:
  cpu: 100m
  memory: 500Mi
evictionHard:
  memory.available: 200Mi
"""


def write(directory, name, text):
    path = os.path.join(str(directory), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    return path


def test_yaml_and_json_configs_load(tmp_path):
    data, fmt, _text = kc.load_config(write(tmp_path, 'config.yaml', KUBEADM_CONFIG))
    assert fmt == 'yaml' and data['kubeReserved'] == {'cpu': '100m', 'memory': '500Mi'}
    json_text = ('{"apiVersion": "kubelet.config.k8s.io/v1beta1", '
                 '"kind": "KubeletConfiguration", "systemReserved": {"memory": "1Gi"}}')
    data, fmt, _text = kc.load_config(write(tmp_path, 'config.json', json_text))
    assert fmt == 'json' and data['systemReserved'] == {'memory': '1Gi'}


@pytest.mark.parametrize('text,problem', [
    ('kind: [unclosed', 'invalid YAML'),
    ('{"kind": ', 'invalid JSON'),
    ('- a\n- b\n', 'expected a mapping'),
    ('apiVersion: v1\nkind: ConfigMap\n', "kind is 'ConfigMap'"),
    ('apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n', 'apiVersion'),
    ('', 'kind is None'),
])
def test_malformed_configs_are_refused_with_the_path(tmp_path, text, problem):
    path = write(tmp_path, 'config.yaml', text)
    with pytest.raises(ConfigError) as error:
        kc.load_config(path)
    assert path in str(error.value) and problem in str(error.value)


def test_unreadable_config_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='cannot read'):
        kc.load_config(str(tmp_path / 'missing.yaml'))


def test_drop_ins_merge_in_lexical_order_and_only_conf_files(tmp_path):
    main = write(tmp_path, 'config.yaml', KUBEADM_CONFIG)
    header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
    drop_ins = tmp_path / 'conf.d'
    write(drop_ins, '20-later.conf', header + 'kubeReserved:\n  memory: 2Gi\n')
    write(drop_ins, '10-first.conf', header + 'kubeReserved:\n  memory: 1Gi\n  pid: "1000"\n')
    write(drop_ins, '30-ignored.yaml', header + 'kubeReserved:\n  memory: 9Gi\n')
    write(drop_ins, '40-delete.conf', header + 'evictionHard: null\n')
    merged, sources = kc.load_effective_config(main, str(drop_ins))
    assert merged['kubeReserved'] == {'cpu': '100m', 'memory': '2Gi', 'pid': '1000'}
    assert 'evictionHard' not in merged
    assert [os.path.basename(s) for s in sources] == ['config.yaml', '10-first.conf', '20-later.conf',
                                                      '40-delete.conf']


def test_missing_drop_in_dir_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='not a directory'):
        kc.load_effective_config(None, str(tmp_path / 'nope'))


@pytest.mark.parametrize('target,patch,expected', [
    # RFC 7386 appendix A examples.
    ({'a': 'b'}, {'a': 'c'}, {'a': 'c'}),
    ({'a': 'b'}, {'b': 'c'}, {'a': 'b', 'b': 'c'}),
    ({'a': 'b'}, {'a': None}, {}),
    ({'a': ['b']}, {'a': 'c'}, {'a': 'c'}),
    ({'a': {'b': 'c'}}, {'a': {'b': 'd', 'c': None}}, {'a': {'b': 'd'}}),
    ({'a': [{'b': 'c'}]}, {'a': [1]}, {'a': [1]}),
    ({}, {'a': {'bb': {'ccc': None}}}, {'a': {'bb': {}}}),
])
def test_merge_patch_follows_rfc_7386(target, patch, expected):
    assert merge_patch(target, patch) == expected


# Issue 35: deep nesting raised RecursionError (or took seconds in PyYAML's scanner); YAML aliases multiply a file.
@pytest.mark.parametrize('text', [
    '[' * 100000 + ']' * 100000,
    '{"kind": ' + '{"a": ' * 100000 + '1' + '}' * 100001,
    'kind: ' + '[' * 100000,
    '- ' * 100000 + 'x',
    'a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]\n' + ''.join('%s: &%s [%s]\n' % (n, n, ', '.join(['*' + p] * 10))
                                                       for p, n in zip('abcde', 'bcdef')),
])
def test_deep_or_huge_documents_are_a_config_error(text):
    with within(1):
        with pytest.raises(ConfigError, match='levels deep|values'):
            kc.parse_document(text, '/etc/kubernetes/kubelet.conf')
