"""How root opens its files on a node: a directory root alone can write, then a file in it, no link followed."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import (
    NOBODY_UID, needs_root, plant_link, untouched, users_file, victim)


def test_a_directory_root_alone_writes_and_a_file_root_alone_writes_are_opened(tmp_path):
    state = tmp_path / 'state'
    state.mkdir(mode=0o755)
    (state / 'history.jsonl').write_bytes(b'line\n')
    os.chmod(state / 'history.jsonl', 0o644)
    assert _safe_open.read_bytes(str(state / 'history.jsonl')) == b'line\n'
    fd = _safe_open.open_file(str(state / 'new.json'), os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    assert (state / 'new.json').exists()
    with pytest.raises(FileNotFoundError):
        _safe_open.read_bytes(str(state / 'absent'))
    with pytest.raises(FileNotFoundError):
        _safe_open.read_bytes(str(tmp_path / 'absent-dir' / 'absent'))


@pytest.mark.parametrize('flags', [os.O_RDONLY, os.O_RDWR | os.O_APPEND | os.O_CREAT])
def test_a_link_at_the_file_is_refused_and_its_target_untouched(tmp_path, flags):
    target = victim(str(tmp_path / 'root-only'))
    state = tmp_path / 'state'
    plant_link(str(state / 'history.jsonl'), target)
    with pytest.raises(_safe_open.UnsafePathError, match='history.jsonl is a symbolic link \\(to %s\\): not followed' % target):
        _safe_open.open_file(str(state / 'history.jsonl'), flags, 0o644)
    assert untouched(target)


def test_a_dangling_link_is_refused_and_nothing_created(tmp_path):
    state = tmp_path / 'state'
    plant_link(str(state / 'history.jsonl'), str(tmp_path / 'would-be-created'))
    with pytest.raises(_safe_open.UnsafePathError, match='symbolic link'):
        _safe_open.open_file(str(state / 'history.jsonl'), os.O_RDWR | os.O_CREAT, 0o644)
    assert not (tmp_path / 'would-be-created').exists()


def test_a_link_as_the_directory_is_refused(tmp_path):
    real = tmp_path / 'real'
    real.mkdir()
    os.symlink(str(real), str(tmp_path / 'state'))
    with pytest.raises(_safe_open.UnsafePathError, match='state is a symbolic link \\(to %s\\)' % real):
        _safe_open.open_directory(str(tmp_path / 'state'))


@pytest.mark.parametrize('mode,who', [(0o775, 'its group'), (0o757, 'others'), (0o777, 'its group and others'),
                                      (0o1777, 'its group and others')])
def test_a_directory_others_can_write_is_refused_and_its_mode_kept(tmp_path, mode, who):
    state = tmp_path / 'state'
    state.mkdir()
    os.chmod(state, mode)
    with pytest.raises(_safe_open.UnsafePathError) as caught:
        _safe_open.open_directory(str(state))
    assert str(caught.value).startswith('%s: the directory is writable by %s (mode %04o)' % (state, who, mode))
    assert 'owner uid %d, mode %04o' % (os.geteuid(), mode) in str(caught.value)
    assert os.stat(state).st_mode & 0o7777 == mode


@needs_root
def test_a_directory_another_user_owns_is_refused(tmp_path):
    state = tmp_path / 'state'
    state.mkdir(mode=0o755)
    os.chown(state, NOBODY_UID, NOBODY_UID)
    with pytest.raises(_safe_open.UnsafePathError, match='the directory is owned by uid 65534, not by uid 0'):
        _safe_open.open_directory(str(state))
    assert (os.stat(state).st_uid, os.stat(state).st_mode & 0o7777) == (NOBODY_UID, 0o755)


@needs_root
def test_a_file_another_user_owns_or_others_can_write_is_refused_before_a_byte_is_read(tmp_path):
    users_file(str(tmp_path / 'history.jsonl'), '{"t": 1}\n')
    with pytest.raises(_safe_open.UnsafePathError, match='history.jsonl is owned by uid 65534, not by uid 0'):
        _safe_open.read_bytes(str(tmp_path / 'history.jsonl'))
    os.chown(tmp_path / 'history.jsonl', 0, 0)
    with pytest.raises(_safe_open.UnsafePathError, match=r'writable by its group and others \(mode 0666\)'):
        _safe_open.read_bytes(str(tmp_path / 'history.jsonl'))
    assert os.stat(tmp_path / 'history.jsonl').st_mode & 0o7777 == 0o666  # refused, never chmod'ed


def test_a_fifo_is_refused_without_hanging(tmp_path):
    os.mkfifo(str(tmp_path / 'history.jsonl'), 0o600)
    with pytest.raises(_safe_open.UnsafePathError, match='history.jsonl is not a regular file'):
        _safe_open.read_bytes(str(tmp_path / 'history.jsonl'))


def test_truncation_before_the_check_is_refused(tmp_path):
    with pytest.raises(ValueError, match='O_TRUNC'):
        _safe_open.open_file(str(tmp_path / 'x'), os.O_WRONLY | os.O_TRUNC)


def test_entry_refuses_a_link_and_answers_for_a_file_or_nothing(tmp_path):
    target = victim(str(tmp_path / 'root-only'))
    plant_link(str(tmp_path / 'state' / 'nodealloc.prom'), target)
    (tmp_path / 'state' / 'ok').write_text('x')
    fd = _safe_open.open_directory(str(tmp_path / 'state'))
    try:
        with pytest.raises(_safe_open.UnsafePathError, match='nodealloc.prom is a symbolic link'):
            _safe_open.entry(fd, 'nodealloc.prom')
        assert _safe_open.entry(fd, 'ok').st_size == 1
        assert _safe_open.entry(fd, 'absent') is None
    finally:
        os.close(fd)
    assert untouched(target)
