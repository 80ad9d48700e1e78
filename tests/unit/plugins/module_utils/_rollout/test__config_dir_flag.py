"""--config-dir through kubeadm's KUBELET_EXTRA_ARGS as journalled edits: made, undone, taken back on a rollback,
each only over what it left, and never someone else's directory."""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_dir_flag as flags
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._kubelet_ownership import parse_environment_file


def extra_args(path):
    return parse_environment_file(path.read_text())['KUBELET_EXTRA_ARGS'].split()


def test_the_flag_is_appended_to_the_args_already_there_and_other_lines_kept():
    text = 'A=1\nKUBELET_EXTRA_ARGS="--v=2 --node-ip=10.0.0.5"\nB=2\n'
    out = flags.with_flag(text, '/etc/kubernetes/kubelet.conf.d')
    assert parse_environment_file(out) == {'A': '1', 'B': '2',
                                           'KUBELET_EXTRA_ARGS': '--v=2 --node-ip=10.0.0.5 --config-dir=/etc/kubernetes/kubelet.conf.d'}
    assert flags.with_flag(out, '/etc/kubernetes/kubelet.conf.d') == out  # already there: unchanged
    assert parse_environment_file(flags.with_flag(None, '/d')) == {'KUBELET_EXTRA_ARGS': '--config-dir=/d'}


def test_enable_then_undo_leaves_the_node_as_it_was(tmp_path):
    env = tmp_path / 'default-kubelet'
    env.write_text('KUBELET_EXTRA_ARGS="--v=2"\n')
    env.chmod(0o600)
    config_dir = tmp_path / 'kubelet.conf.d'
    edits = flags.plan_enable(str(env), str(config_dir))
    flags.apply(edits)
    assert extra_args(env) == ['--v=2', '--config-dir=%s' % config_dir] and config_dir.is_dir()
    assert env.stat().st_mode & 0o777 == 0o600
    assert flags.plan_enable(str(env), str(config_dir)) == []  # done: nothing more to do
    flags.undo(flags.journal_form(edits))
    assert env.read_text() == 'KUBELET_EXTRA_ARGS="--v=2"\n' and not config_dir.exists()


def test_an_extra_args_file_the_step_created_is_removed_by_the_undo(tmp_path):
    env = tmp_path / 'default-kubelet'
    edits = flags.plan_enable(str(env), str(tmp_path))  # the directory exists: only the file
    assert [e['kind'] for e in edits] == ['file']
    flags.apply(edits)
    assert extra_args(env) == ['--config-dir=%s' % tmp_path]
    flags.undo(flags.journal_form(edits))
    assert not env.exists()


def test_disable_takes_back_only_what_the_enable_left(tmp_path):
    env = tmp_path / 'default-kubelet'
    env.write_text('KUBELET_EXTRA_ARGS=""\n')
    config_dir = tmp_path / 'kubelet.conf.d'
    record = flags.journal_form(flags.plan_enable(str(env), str(config_dir)))
    flags.apply(flags.plan_enable(str(env), str(config_dir)))
    disable, left = flags.plan_disable(record)
    assert left == []
    flags.apply(disable)
    assert env.read_text() == 'KUBELET_EXTRA_ARGS=""\n' and not config_dir.exists()
    flags.undo(flags.journal_form(disable))  # a rollback that fails is undone: the flag and directory come back
    assert extra_args(env) == ['--config-dir=%s' % config_dir] and config_dir.is_dir()


def test_disable_leaves_a_directory_someone_else_made_and_a_file_changed_since(tmp_path):
    env = tmp_path / 'default-kubelet'
    config_dir = tmp_path / 'theirs.d'
    config_dir.mkdir()
    record = flags.plan_enable(str(env), str(config_dir))
    flags.apply(record)
    env.write_text(env.read_text() + 'OTHER=1\n')  # an operator edited it since
    disable, left = flags.plan_disable(flags.journal_form(record))
    assert disable == [] and left == ['%s changed since --config-dir was added, left as it is' % env]
    assert config_dir.is_dir()


def test_a_directory_the_step_made_that_holds_other_files_stays(tmp_path):
    config_dir = tmp_path / 'kubelet.conf.d'
    record = flags.plan_enable(str(tmp_path / 'env'), str(config_dir))
    flags.apply(record)
    (config_dir / '10-theirs.conf').write_text('x')
    disable, _left = flags.plan_disable(flags.journal_form(record))
    assert ['%s is not empty, left' % config_dir] == [s for s in flags.apply(disable) if 'not empty' in s]
    assert os.listdir(config_dir) == ['10-theirs.conf']
