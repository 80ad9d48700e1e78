"""The one write path: atomic replacement keeps attributes, backups, the directory lock."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _safe_open
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.flock_holder import exclusive_flock
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import plant_link, untouched, victim


def test_write_keeps_mode_and_owner(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text('old\n')
    os.chmod(path, 0o600)
    os.chown(path, 12345, 23456)
    _file_io.write_atomic(str(path), 'new\n')
    stat = os.stat(path)
    assert path.read_text() == 'new\n'
    assert (stat.st_mode & 0o7777, stat.st_uid, stat.st_gid) == (0o600, 12345, 23456)
    assert os.listdir(tmp_path) == ['config.yaml']  # no temporary file left


def test_backup_is_a_faithful_copy(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_bytes(b'a: 1\n# comment\n')
    backup = _file_io.make_backup(str(path))
    assert open(backup, 'rb').read() == b'a: 1\n# comment\n'
    assert backup.startswith(str(path) + '.') and backup.endswith('.nodealloc.bak')


def test_lock_waits_then_fails_clearly(tmp_path):
    # The holder keeps the lock until the block ends: no sleep of its own that a busy machine could outlast.
    with exclusive_flock(tmp_path):
        start = time.monotonic()
        with pytest.raises(_file_io.WriteError, match='another run holds the nodealloc lock'):
            with _file_io.directory_lock(str(tmp_path), timeout_seconds=0.5):
                pass
        assert time.monotonic() - start >= 0.5
    with _file_io.directory_lock(str(tmp_path), timeout_seconds=0.5):
        pass


def test_a_symlinked_kubelet_config_is_replaced_where_it_lives(tmp_path):
    real = tmp_path / 'real' / 'config.yaml'
    real.parent.mkdir()
    real.write_text('old\n')
    link = tmp_path / 'config.yaml'
    link.symlink_to(real)
    _file_io.write_atomic(str(link), 'new\n', follow_symlinks=True)
    assert link.is_symlink() and real.read_text() == 'new\n'


@pytest.mark.parametrize('name', ['nodealloc.prom', 'sampler-state.json', 'step.json', 'status.json'])
def test_a_link_planted_at_a_state_file_is_refused_and_its_target_untouched(tmp_path, name):
    """Issue 44: a link at the .prom path made root replace its target and chmod it 0644."""
    target = victim(str(tmp_path / 'root-only'))
    state = tmp_path / 'state'
    plant_link(str(state / name), target)
    with pytest.raises(_safe_open.UnsafePathError, match='%s is a symbolic link \\(to %s\\): not followed' % (name, target)):
        _file_io.write_atomic(str(state / name), 'new\n', mode=0o644)
    assert untouched(target)
    assert os.readlink(state / name) == target and os.listdir(state) == [name]  # the link left, no temporary file


@pytest.mark.parametrize('mode', [0o775, 0o777])
def test_a_directory_others_can_write_is_refused_and_nothing_written(tmp_path, mode):
    state = tmp_path / 'state'
    state.mkdir()
    os.chmod(state, mode)
    with pytest.raises(_safe_open.UnsafePathError, match='the directory is writable by'):
        _file_io.write_atomic(str(state / 'nodealloc.prom'), 'new\n', mode=0o644)
    assert os.listdir(state) == [] and os.stat(state).st_mode & 0o7777 == mode


def test_a_kubelet_config_in_a_directory_others_can_write_is_refused_too(tmp_path):
    real = tmp_path / 'kubelet'
    real.mkdir()
    (real / 'config.yaml').write_text('old\n')
    os.chmod(real, 0o777)
    with pytest.raises(_safe_open.UnsafePathError, match='the directory is writable by'):
        _file_io.write_atomic(str(real / 'config.yaml'), 'new\n', follow_symlinks=True)
    assert (real / 'config.yaml').read_text() == 'old\n'


# /proc/locks as this machine's kernel (6.1) printed it: an OFD lock, a waiter ("->"), a shared flock, and the
# exclusive flock of a directory with device fe:00, inode 1540121.
# /proc/locks lines in the form this machine's kernel (6.1) prints them, written for a real directory's device and
# inode: an OFD lock, the exclusive flock, a waiter ("->"), a shared flock and a POSIX record lock.
LOCK_LINES = {
    'ofd': '1: OFDLCK ADVISORY  READ -1 {id} 100 100',
    'exclusive': '2: FLOCK  ADVISORY  WRITE 4242 {id} 0 EOF',
    'waiter': '2: -> FLOCK  ADVISORY  WRITE 4343 {id} 0 EOF',
    'shared': '3: FLOCK  ADVISORY  READ 4444 {id} 0 EOF',
    'posix_write': '4: POSIX  ADVISORY  WRITE 4545 {id} 0 EOF',
}


@pytest.mark.parametrize('kinds,other_device,held', [
    (('ofd', 'exclusive'), False, True),   # the exclusive flock
    (('waiter',), False, False),           # only a waiter for it
    (('shared',), False, False),           # a shared flock
    (('posix_write',), False, False),      # a record lock, not the step's flock
    (('exclusive',), True, False),         # the same inode on another device
])
def test_held_exclusively_reads_proc_locks(tmp_path, kinds, other_device, held):
    step = tmp_path / 'step'
    step.mkdir()
    stat = os.stat(str(step))
    major = os.major(stat.st_dev) + 1 if other_device else os.major(stat.st_dev)
    lock_id = '%02x:%02x:%d' % (major, os.minor(stat.st_dev), stat.st_ino)
    locks = tmp_path / 'locks'
    locks.write_text(''.join(LOCK_LINES[kind].format(id=lock_id) + '\n' for kind in kinds))
    assert _file_io.held_exclusively(str(step), str(locks)) is held


def test_held_exclusively_sees_a_real_holder(tmp_path):
    step = tmp_path / 'step'
    step.mkdir()
    assert not _file_io.held_exclusively(str(step))
    assert not _file_io.held_exclusively(str(tmp_path / 'absent'))
    with exclusive_flock(step):
        assert _file_io.held_exclusively(str(step))
    assert not _file_io.held_exclusively(str(step))


def test_replacing_a_file_of_the_same_owner_makes_no_chown(tmp_path, monkeypatch):
    """The sandboxed sampler's system call filter leaves chown out (@privileged): a no-op fchown would kill its run."""
    target = tmp_path / 'nodealloc.prom'
    target.write_text('old\n')
    monkeypatch.setattr(os, 'fchown', lambda *_a: pytest.fail('fchown called for an unchanged owner'))
    _file_io.write_atomic(str(target), 'new\n', mode=0o644)
    assert target.read_text() == 'new\n'
