# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The one write path for every file the collection writes: atomic, durable, with backups and a lock.

``write_atomic`` writes a temporary file in the target's directory, fsyncs it,
gives it the old file's owner, group and mode, renames it over the target and
fsyncs the directory: a crash at any moment leaves the old file or the new one,
never a mix. The directory must be root's alone and every step goes through its
descriptor (_safe_open); a symbolic link at the target is refused, except for
the kubelet's own files (``follow_symlinks``). ``make_backup`` goes the same way, so a backup is never visible
under its name before it is whole and on disk. ``directory_lock`` serialises
writers with flock on the directory itself, so no lock file is left behind;
``remove_stale_temps`` (called under that lock) removes the temporary files a
killed writer left.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError


TEMP_SUFFIX = '.nodealloc.tmp'


class WriteError(NodeallocError):
    """A file could not be written; the original is untouched."""


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reason(exc):
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return 'no space left on the device'
    return exc.strerror or str(exc)


def backup_path(path, now=None):
    import datetime  # here, not at the top: the sampler writes through this module every minute and never backs up

    stamp = (now or datetime.datetime.now()).strftime('%Y%m%dT%H%M%S.%f')
    return '%s.%s.nodealloc.bak' % (path, stamp)


def make_backup(path):
    """Copy ``path`` (content, mode, owner) beside itself with a timestamp; returns the copy's path.

    The copy goes through ``write_atomic``: it appears under its name only once it is complete and
    fsynced, and the directory is fsynced before this returns, so the backup is durable before the
    caller replaces ``path``.
    """
    destination = backup_path(path)
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
        stat = os.stat(path)
    except OSError as exc:
        raise WriteError('%s: could not make a backup at %s: %s' % (path, destination, exc.strerror or exc))
    try:
        # Beside the kubelet's config, where it lives (as write_atomic replaces it).
        write_atomic(destination, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid,
                     follow_symlinks=True)
    except WriteError as exc:
        raise WriteError('%s: could not make a backup, nothing changed: %s' % (path, str(exc).rsplit(': ', 1)[-1]))
    return destination


def _create_temp(dir_fd, basename):
    """Create and open (0600, exclusive) ``.<basename>.<random>.nodealloc.tmp`` in the directory ``dir_fd``; returns
    the descriptor and the name.

    What ``tempfile.mkstemp`` does, without importing tempfile (shutil, random, weakref): that import
    was a tenth of a sampler run's CPU.
    """
    for _attempt in range(100):
        temp_name = '.%s.%s%s' % (basename, os.urandom(6).hex(), TEMP_SUFFIX)
        try:
            return os.open(temp_name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                           dir_fd=dir_fd), temp_name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, 'no free temporary file name')


def write_atomic(path, content, mode=None, owner=None, group=None, follow_symlinks=False):
    """Replace ``path`` with ``content`` (str or bytes) atomically and durably.

    Owner, group and mode default to those of the existing file (0644 and the
    current user for a new one); the file written is always a new one, so no mode
    or owner of a file found there is ever changed.

    The directory must be root's alone (``_safe_open.open_directory``): the temporary
    file, the rename and the directory's fsync all go through its descriptor. A
    symbolic link at ``path`` is refused (``_safe_open.UnsafePathError``), never
    followed: a user's link at a state, history, textfile, journal or status path must
    not make root replace the link's target or copy its mode (issue 44).
    ``follow_symlinks=True`` is for the kubelet's own files only (its config, drop-ins,
    environment file and their backups and undo copies), whose paths are root's: a
    config reached through a symlink is replaced where it lives; the link stays a link.
    """
    data = content.encode('utf-8') if isinstance(content, str) else content
    if follow_symlinks:
        path = os.path.realpath(path)
    directory, name = os.path.split(os.path.abspath(path))
    try:
        dir_fd = _safe_open.open_directory(directory)
    except OSError as exc:
        raise WriteError('%s: cannot create a temporary file in %s: %s' % (path, directory, _reason(exc)))
    try:
        _write_in(dir_fd, path, name, data, mode, owner, group)
    finally:
        os.close(dir_fd)


def _write_in(dir_fd, path, name, data, mode, owner, group):
    """write_atomic's steps inside the checked directory ``dir_fd``."""
    directory = os.path.dirname(os.path.abspath(path))
    existing = _safe_open.entry(dir_fd, name, path)
    if mode is None:
        mode = (existing.st_mode & 0o7777) if existing else 0o644
    uid = owner if owner is not None else (existing.st_uid if existing else -1)
    gid = group if group is not None else (existing.st_gid if existing else -1)

    try:
        fd, temp_name = _create_temp(dir_fd, name)
    except OSError as exc:
        raise WriteError('%s: cannot create a temporary file in %s: %s'
                         % (path, directory, _reason(exc)))
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            # Only a real change of owner: fchown is outside the sandboxed sampler's system calls (@privileged),
            # and the temporary file usually has the owner already.
            created = os.fstat(fd)
            if uid not in (-1, created.st_uid) or gid not in (-1, created.st_gid):
                os.fchown(fd, uid, gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name, dir_fd=dir_fd)
        raise WriteError('%s: not written, the file is unchanged: %s' % (path, _reason(exc)))
    os.fsync(dir_fd)


def remove_stale_temps(directory):
    """Remove the temporary files a killed ``write_atomic`` left in ``directory``; returns their paths.

    Call it only while holding ``directory_lock`` on that directory: every writer holds it, so
    no temporary file there belongs to a live write. Only our own names are touched
    (``.<name>.<random>.nodealloc.tmp``).
    """
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in sorted(names):
        if name.startswith('.') and name.endswith(TEMP_SUFFIX):
            candidate = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(candidate)
                removed.append(candidate)
    if removed:
        _fsync_directory(directory)
    return removed


def remove_durably(path):
    os.unlink(path)
    _fsync_directory(os.path.dirname(os.path.abspath(path)))


# Where kubelet_reservations_apply keeps the node lock (its state_dir default): the sampler looks at it too.
DEFAULT_NODE_LOCK_DIR = _state_dir.NODE_LOCK_DIR


def held_exclusively(directory, locks_path='/proc/locks'):
    """Whether a process holds an exclusive flock on ``directory`` now, read from /proc/locks.

    Read, not tried: a try, even a shared non-blocking one, could make a writer's own try fail at that instant
    (_step_primitives.node_lock then reports a wait for the holder a killed step left behind). Lines are
    ``1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`` (fs/locks.c lock_get_status: major and minor
    in hex, "->" after the number for a waiter). False where the directory or /proc/locks cannot be read or no
    entry matches its device and inode.
    """
    try:
        stat = os.stat(directory)
        with open(locks_path, 'r', encoding='ascii', errors='replace') as handle:
            text = handle.read()
    except OSError:
        return False
    wanted = '%02x:%02x:%d' % (os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino)
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == 'FLOCK' and fields[3] == 'WRITE' and fields[5] == wanted:
            return True
    return False


@contextlib.contextmanager
def directory_lock(directory, timeout_seconds=30.0, poll_seconds=0.1):
    """Hold an exclusive flock on ``directory``; wait up to ``timeout_seconds`` for another holder."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:
        raise WriteError('%s: cannot open the directory to lock it: %s' % (directory, exc.strerror or exc))
    try:
        deadline = time.monotonic() + timeout_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriteError('%s: another run holds the nodealloc lock on this directory; '
                                     'waited %.0f s' % (directory, timeout_seconds))
                time.sleep(poll_seconds)
        yield
    finally:
        os.close(fd)
