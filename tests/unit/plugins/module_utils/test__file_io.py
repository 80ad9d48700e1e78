"""The one write path: atomic replacement keeps attributes, backups, the directory lock."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io


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
    holder = subprocess.Popen([sys.executable, '-c', (
        'import fcntl, os, sys, time\n'
        'fd = os.open(sys.argv[1], os.O_RDONLY)\n'
        'fcntl.flock(fd, fcntl.LOCK_EX)\n'
        'print("held", flush=True)\n'
        'time.sleep(30)\n'), str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b'held'
        start = time.monotonic()
        with pytest.raises(_file_io.WriteError, match='another run holds the nodealloc lock'):
            with _file_io.directory_lock(str(tmp_path), timeout_seconds=0.5):
                pass
        assert time.monotonic() - start >= 0.5
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    with _file_io.directory_lock(str(tmp_path), timeout_seconds=0.5):
        pass


def test_a_symlinked_file_is_replaced_where_it_lives(tmp_path):
    real = tmp_path / 'real' / 'config.yaml'
    real.parent.mkdir()
    real.write_text('old\n')
    link = tmp_path / 'config.yaml'
    link.symlink_to(real)
    _file_io.write_atomic(str(link), 'new\n')
    assert link.is_symlink() and real.read_text() == 'new\n'


# /proc/locks as this machine's kernel (6.1) printed it: an OFD lock, a waiter ("->"), a shared flock, and the
# exclusive flock of a directory with device fe:00, inode 1540121.
PROC_LOCKS = ('1: OFDLCK ADVISORY  READ -1 fe:00:1540121 100 100\n'
              '2: FLOCK  ADVISORY  WRITE 4242 fe:00:1540121 0 EOF\n'
              '2: -> FLOCK  ADVISORY  WRITE 4343 fe:00:777 0 EOF\n'
              '3: FLOCK  ADVISORY  READ 4444 fe:00:888 0 EOF\n')


@pytest.mark.parametrize('device,inode,held', [
    ((0xfe, 0x00), 1540121, True),   # the exclusive flock
    ((0xfe, 0x00), 777, False),      # only a waiter for it
    ((0xfe, 0x00), 888, False),      # a shared flock
    ((0x08, 0x01), 1540121, False),  # the same inode on another device
])
def test_held_exclusively_reads_proc_locks(tmp_path, monkeypatch, device, inode, held):
    locks = tmp_path / 'locks'
    locks.write_text(PROC_LOCKS)
    real_stat = os.stat

    class Stat:
        st_dev = os.makedev(*device)
        st_ino = inode

    monkeypatch.setattr(_file_io.os, 'stat', lambda path: Stat() if path == 'step' else real_stat(path))
    assert _file_io.held_exclusively('step', str(locks)) is held


def test_held_exclusively_sees_a_real_holder(tmp_path):
    step = tmp_path / 'step'
    step.mkdir()
    assert not _file_io.held_exclusively(str(step))
    assert not _file_io.held_exclusively(str(tmp_path / 'absent'))
    holder = subprocess.Popen([sys.executable, '-c', (
        'import fcntl, os, sys\n'
        'fd = os.open(sys.argv[1], os.O_RDONLY)\n'
        'fcntl.flock(fd, fcntl.LOCK_EX)\n'
        'print("held", flush=True)\n'
        'sys.stdin.read()\n'), str(step)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        assert _file_io.held_exclusively(str(step))
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert not _file_io.held_exclusively(str(step))
