"""_disk_walk: du-like block counts and statfs figures on trees the test makes (tmp_path), bounded, no link followed."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _disk_walk

KI, MI = 1024, 1024 * 1024


def write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(os.urandom(size))
        handle.flush()
        os.fsync(handle.fileno())


def measured(path, **kwargs):
    fd = _disk_walk.open_path(str(path))
    try:
        return _disk_walk.usage(fd, **kwargs)
    finally:
        os.close(fd)


def test_a_tree_of_known_sizes_is_measured_within_two_percent(tmp_path):
    sizes = {'a/one': 3 * MI, 'a/b/two': 5 * MI, 'c/three': 1 * MI + 300 * KI, 'four': 700 * KI}
    for name, size in sizes.items():
        write(tmp_path / name, size)
    result = measured(tmp_path)
    assert result['complete'] and result['stopped'] is None
    assert abs(result['bytes'] - sum(sizes.values())) <= 0.02 * sum(sizes.values()), result
    # Blocks, so never less than the data written (and du -s -x says the same where du is installed).
    assert result['bytes'] >= sum(sizes.values())


def test_a_hard_link_is_counted_once(tmp_path):
    write(tmp_path / 'data', 4 * MI)
    alone = measured(tmp_path)['bytes']
    os.link(tmp_path / 'data', tmp_path / 'again')
    os.mkdir(tmp_path / 'sub')
    os.link(tmp_path / 'data', tmp_path / 'sub' / 'third')
    with_links = measured(tmp_path)['bytes']
    assert with_links - alone < 64 * KI  # only the new directory's own blocks, not 8 MiB more


def test_a_symlink_loop_and_a_link_out_are_not_followed(tmp_path):
    elsewhere = tmp_path / 'elsewhere'
    write(elsewhere / 'big', 8 * MI)
    root = tmp_path / 'root'
    write(root / 'small', 64 * KI)
    os.symlink(str(root), str(root / 'loop'))
    os.symlink(str(elsewhere), str(root / 'out'))
    os.symlink(str(elsewhere / 'big'), str(root / 'file-link'))
    result = measured(root)
    assert result['complete']
    assert result['bytes'] < 1 * MI  # neither the 8 MiB behind the links nor the loop's endless tree


def test_a_sparse_file_counts_its_blocks_not_its_length(tmp_path):
    with open(tmp_path / 'sparse', 'wb') as handle:
        handle.truncate(1024 * MI)
        handle.write(os.urandom(64 * KI))
    result = measured(tmp_path)
    assert result['bytes'] < 2 * MI, 'a 1 GiB sparse file holding 64 KiB counted by its length'
    assert result['bytes'] >= 64 * KI


def test_skipped_names_and_parts(tmp_path):
    write(tmp_path / 'pods' / 'uid' / 'volume', 6 * MI)
    write(tmp_path / 'journal' / 'system.journal', 2 * MI)
    write(tmp_path / 'syslog', 1 * MI)
    result = measured(tmp_path, skip=('pods',), parts=('journal',))
    assert 3 * MI <= result['bytes'] < 3 * MI + 64 * KI
    assert 2 * MI <= result['parts_bytes']['journal'] < 2 * MI + 16 * KI


def test_the_entry_limit_stops_the_walk_and_says_so(tmp_path):
    for index in range(50):
        write(tmp_path / ('f%02d' % index), 4 * KI)
    result = measured(tmp_path, limits=_disk_walk.Limits(entries=10, depth=64, seconds=60))
    assert not result['complete'] and result['stopped'].startswith('entries')
    assert result['entries'] == 10


def test_the_depth_limit_counts_the_deep_directory_but_not_its_contents(tmp_path):
    deep = tmp_path / 'a' / 'b' / 'c'
    write(deep / 'hidden', 4 * MI)
    write(tmp_path / 'shallow', 1 * MI)
    result = measured(tmp_path, limits=_disk_walk.Limits(entries=1000, depth=2, seconds=60))
    assert not result['complete'] and result['stopped'].startswith('depth')
    assert 1 * MI <= result['bytes'] < 2 * MI  # the walk went on past the limit: shallow counted, hidden not


def test_the_time_limit_stops_the_walk_on_the_given_clock(tmp_path):
    for index in range(5):
        write(tmp_path / ('f%d' % index), 4 * KI)
    ticks = iter(range(1000))
    result = measured(tmp_path, limits=_disk_walk.Limits(entries=1000, depth=64, seconds=2),
                      clock=lambda: next(ticks))
    assert not result['complete'] and result['stopped'].startswith('seconds')


def test_a_path_through_a_symlink_is_refused(tmp_path):
    os.mkdir(tmp_path / 'real')
    os.symlink(str(tmp_path / 'real'), str(tmp_path / 'link'))
    with pytest.raises(_disk_walk.UnsafeDirectoryError, match='symbolic link'):
        _disk_walk.open_path(str(tmp_path / 'link' / 'anything'))
    with pytest.raises(_disk_walk.UnsafeDirectoryError):
        _disk_walk.open_path(str(tmp_path / 'link'))
    with pytest.raises(_disk_walk.UnsafeDirectoryError):
        _disk_walk.open_path(str(tmp_path / '..' / 'x'))
    with pytest.raises(FileNotFoundError):
        _disk_walk.open_path(str(tmp_path / 'missing'))


def test_filesystem_is_statfs_as_cadvisor_reads_it(tmp_path):
    fd = _disk_walk.open_path(str(tmp_path))
    try:
        found = _disk_walk.filesystem(fd)
    finally:
        os.close(fd)
    vfs = os.statvfs(str(tmp_path))
    assert found['capacity_bytes'] == vfs.f_frsize * vfs.f_blocks
    assert found['used_bytes'] == found['capacity_bytes'] - found['free_bytes']
    assert found['device'] == os.stat(str(tmp_path)).st_dev
