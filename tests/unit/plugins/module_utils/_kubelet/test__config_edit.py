"""Semantic comparison and minimal edits of KubeletConfiguration text."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_edit as edit

# kubeadm 1.30's /var/lib/kubelet/config.yaml, shortened, with comments an operator added.
KUBEADM_YAML = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
# Reservations: managed by nodealloc
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
kind: KubeletConfiguration
kubeReserved:
  cpu: 100m
  memory: 1Gi
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
"""


@pytest.mark.parametrize('kind,old,new,equal', [
    ('quantity_map', {'memory': '1Gi'}, {'memory': '1024Mi'}, True),
    ('quantity_map', {'cpu': '0.2'}, {'cpu': '200m'}, True),
    ('quantity_map', {'cpu': '1'}, {'cpu': '1000m'}, True),
    ('quantity_map', {'memory': '1G'}, {'memory': '1Gi'}, False),
    ('quantity_map', {'memory': '1Gi'}, {'memory': '1Gi', 'cpu': '1'}, False),
    ('threshold_map', {'memory.available': '100Mi'}, {'memory.available': '104857600'}, True),
    ('threshold_map', {'nodefs.available': '10%'}, {'nodefs.available': '10.0%'}, True),
    ('threshold_map', {'nodefs.available': '10%'}, {'nodefs.available': '11%'}, False),
    ('duration_map', {'memory.available': '90s'}, {'memory.available': '1m30s'}, True),
    ('set', ['pods', 'kube-reserved'], ['kube-reserved', 'pods'], True),
    ('set', ['pods'], ['pods', 'kube-reserved'], False),
])
def test_semantic_equality(kind, old, new, equal):
    assert edit.values_equal(kind, old, new) is equal


def test_equal_values_change_nothing_and_keep_their_text():
    config = yaml.safe_load(KUBEADM_YAML)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'memory': '1024Mi', 'cpu': '0.1'}})
    assert changed == []
    assert new['kubeReserved'] == {'cpu': '100m', 'memory': '1Gi'}


def test_maps_merge_key_by_key_and_none_removes():
    config = yaml.safe_load(KUBEADM_YAML)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'memory': '2Gi', 'cpu': None, 'pid': '100'}})
    assert changed == ['kubeReserved']
    assert new['kubeReserved'] == {'memory': '2Gi', 'pid': '100'}


def test_yaml_edit_touches_only_the_changed_block():
    config = yaml.safe_load(KUBEADM_YAML)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'memory': '2Gi'},
                                               'system_reserved': {'memory': '500Mi'}})
    text, minimal = edit.render(KUBEADM_YAML, 'yaml', new, changed)
    assert minimal
    assert yaml.safe_load(text) == new
    old_lines = KUBEADM_YAML.splitlines()
    new_lines = text.splitlines()
    # Every line outside kubeReserved's block is still there, in the same order, byte for byte.
    untouched = [line for line in old_lines if line not in ('kubeReserved:', '  cpu: 100m', '  memory: 1Gi')]
    assert [line for line in new_lines if line in untouched] == untouched
    assert '# Reservations: managed by nodealloc' in new_lines
    assert new_lines[-2:] == ['systemReserved:', '  memory: 500Mi']
    assert list(yaml.safe_load(text))[:len(config)] == list(config)  # key order kept, new keys appended


def test_json_stays_json_with_its_order_and_indent():
    original = json.dumps({'kind': 'KubeletConfiguration', 'apiVersion': 'kubelet.config.k8s.io/v1beta1',
                           'zeta': 1, 'kubeReserved': {'memory': '1Gi'}}, indent=4) + '\n'
    config = json.loads(original)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'memory': '2Gi'}})
    text, _minimal = edit.render(original, 'json', new, changed)
    assert list(json.loads(text)) == ['kind', 'apiVersion', 'zeta', 'kubeReserved']
    assert text.splitlines()[1].startswith('    "kind"')
    assert json.loads(text)['kubeReserved'] == {'memory': '2Gi'}


def test_flow_style_document_falls_back_to_a_full_render_that_is_still_exact():
    original = '{apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, kubeReserved: {cpu: 1}}\n'
    config = yaml.safe_load(original)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'cpu': '2'}})
    text, minimal = edit.render(original, 'yaml', new, changed)
    assert not minimal
    assert yaml.safe_load(text) == new


def test_document_start_marker_is_kept():
    original = '---\n' + KUBEADM_YAML
    config = yaml.safe_load(original)
    new, changed = edit.apply_changes(config, {'kube_reserved': {'cpu': '200m'}})
    text, minimal = edit.render(original, 'yaml', new, changed)
    assert minimal and text.startswith('---\n') and yaml.safe_load(text) == new


def test_a_reserved_memory_equal_in_value_and_in_another_order_changes_nothing():
    old = {'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1Gi'}}, {'numaNode': 1, 'limits': {'memory': '1Gi'}}]}
    same = [{'numaNode': 1, 'limits': {'memory': '1024Mi'}}, {'numaNode': 0, 'limits': {'memory': '1073741824'}}]
    assert edit.apply_changes(old, {'reserved_memory': same}) == (old, [])
    moved = [{'numaNode': 0, 'limits': {'memory': '1Gi'}}, {'numaNode': 1, 'limits': {'memory': '2Gi'}}]
    assert edit.apply_changes(old, {'reserved_memory': moved}) == ({'reservedMemory': moved}, ['reservedMemory'])
