"""plan(): the decision kubelet_config makes, on real files, main file and drop-in modes."""

from __future__ import annotations

import hashlib
import os

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change as change
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._config_rules import ValidationError

GI = 1 << 30
HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'


@pytest.fixture
def node(tmp_path):
    main = tmp_path / 'config.yaml'
    main.write_text(HEADER + 'kubeReserved:\n  memory: 1Gi\nevictionHard:\n  memory.available: 100Mi\n')
    drop_ins = tmp_path / 'conf.d'
    drop_ins.mkdir()
    return {'path': str(main), 'dir': str(drop_ins)}


def params(node, **options):
    base = {'path': node['path'], 'drop_in_dir': None, 'drop_in_name': '50-nodealloc.conf', 'state': 'present'}
    base.update(options)
    return base


def test_main_file_change_then_no_change(node):
    decision = change.plan(params(node, kube_reserved={'memory': '2Gi'}), 8 * GI, 2000, 0, 0)
    assert decision['changed'] and decision['changed_fields'] == ['kubeReserved']
    assert decision['previous']['kubeReserved'] == {'memory': '1Gi'}
    assert decision['allocatable_after']['memory'] != decision['allocatable_before']['memory']
    change.apply(decision)
    again = change.plan(params(node, kube_reserved={'memory': '2048Mi'}), 8 * GI, 2000, 0, 0)
    assert not again['changed'] and again['action'] is None


def test_drop_in_leaves_the_main_file_alone(node):
    before = open(node['path']).read()
    decision = change.plan(params(node, drop_in_dir=node['dir'], system_reserved={'memory': '500Mi'}), 8 * GI, 2000)
    assert decision['target'] == os.path.join(node['dir'], '50-nodealloc.conf')
    change.apply(decision)
    assert open(node['path']).read() == before
    written = yaml.safe_load(open(decision['target']))
    assert written == {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
                       'systemReserved': {'memory': '500Mi'}}
    assert not change.plan(params(node, drop_in_dir=node['dir'], system_reserved={'memory': '500Mi'}))['changed']


def test_no_drop_in_is_written_when_the_main_file_already_says_so(node):
    decision = change.plan(params(node, drop_in_dir=node['dir'], kube_reserved={'memory': '1024Mi'}))
    assert not decision['changed']
    assert not os.listdir(node['dir'])


def test_state_absent_removes_our_drop_in(node):
    change.apply(change.plan(params(node, drop_in_dir=node['dir'], kube_reserved={'memory': '3Gi'})))
    decision = change.plan(params(node, drop_in_dir=node['dir'], state='absent'))
    assert decision['changed'] and decision['action'] == 'remove'
    assert decision['new']['kubeReserved'] == {'memory': '1Gi'}
    change.apply(decision)
    assert not os.listdir(node['dir'])
    assert not change.plan(params(node, drop_in_dir=node['dir'], state='absent'))['changed']


def test_a_later_drop_in_that_overrides_ours_is_refused(node):
    with open(os.path.join(node['dir'], '90-vendor.conf'), 'w') as handle:
        handle.write(HEADER + 'kubeReserved:\n  memory: 4Gi\n')
    with pytest.raises(ConfigError, match='later in lexical order overrides kubeReserved'):
        change.plan(params(node, drop_in_dir=node['dir'], kube_reserved={'memory': '2Gi'}))


def test_invalid_result_is_refused_before_anything_is_written(node):
    before = open(node['path']).read()
    with pytest.raises(ValidationError):
        change.plan(params(node, kube_reserved={'memory': '9Gi'}), 8 * GI, 2000)
    with pytest.raises(ValidationError) as error:
        change.plan(params(node, kube_reserved={'memory': '7Gi'}), 8 * GI, 2000, kubepods_working_set_bytes=GI,
                    kubepods_margin_bytes=256 << 20)
    assert error.value.rule == 'kubepods-limit-above-usage'
    assert open(node['path']).read() == before


def test_absent_without_drop_in_dir_is_an_error(node):
    with pytest.raises(ConfigError, match='needs drop_in_dir'):
        change.plan(params(node, state='absent'))


def test_a_drop_in_dir_still_to_be_made_is_planned_as_empty_only_when_asked(node):
    # Check mode of the role's reservations_enable_config_dir: the directory is made only by the real run.
    pending = os.path.join(os.path.dirname(node['dir']), 'kubelet.conf.d')
    with pytest.raises(ConfigError, match='drop_in_dir is not a directory'):
        change.plan(params(node, drop_in_dir=pending, system_reserved={'memory': '500Mi'}), 8 * GI, 2000)
    decision = change.plan(params(node, drop_in_dir=pending, system_reserved={'memory': '500Mi'}), 8 * GI, 2000,
                           missing_drop_in_dir_is_empty=True)
    assert decision['changed'] and decision['target'] == os.path.join(pending, '50-nodealloc.conf')
    assert decision['previous']['kubeReserved'] == {'memory': '1Gi'}  # the main file's, read as the kubelet would
    assert not os.path.exists(pending)
    with pytest.raises(ConfigError, match='drop_in_dir is not a directory'):  # a file in its place is not "to be made"
        change.plan(params(node, drop_in_dir=node['path'], system_reserved={'memory': '500Mi'}),
                    missing_drop_in_dir_is_empty=True)


def test_the_journal_hook_sees_a_durable_backup_before_the_file_is_replaced(node):
    before = open(node['path']).read()
    decision = change.plan(params(node, kube_reserved={'memory': '2Gi'}), 8 * GI, 2000, 0, 0)
    seen = []

    def journal(backup_file, created, written_sha256):
        # What the on-node step journals: the backup is whole, the config not yet replaced.
        seen.append((open(backup_file).read(), open(node['path']).read(), created, written_sha256))

    backup_file = change.apply(decision, backup=True, journal=journal)
    assert seen == [(before, before, False, hashlib.sha256(decision['text'].encode()).hexdigest())]
    assert open(backup_file).read() == before and open(node['path']).read() == decision['text']


def test_a_journal_that_cannot_be_written_leaves_the_config_and_no_backup(node):
    before = open(node['path']).read()
    decision = change.plan(params(node, kube_reserved={'memory': '2Gi'}), 8 * GI, 2000, 0, 0)

    def journal(backup_file, created, written_sha256):
        raise OSError(28, 'No space left on device')

    with pytest.raises(OSError):
        change.apply(decision, backup=True, journal=journal)
    assert open(node['path']).read() == before
    assert [n for n in os.listdir(os.path.dirname(node['path'])) if 'nodealloc' in n] == []
