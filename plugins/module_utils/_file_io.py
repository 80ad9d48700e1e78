# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The one write path for every file the collection writes: atomic, durable, with backups and a lock.

``write_atomic`` writes a temporary file in the target's directory, fsyncs it,
gives it the old file's owner, group and mode, renames it over the target and
fsyncs the directory: a crash at any moment leaves the old file or the new one,
never a mix. ``directory_lock`` serialises writers with flock on the directory
itself, so no lock file is left behind.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import shutil
import tempfile
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError


class WriteError(NodeallocError):
    """A file could not be written; the original is untouched."""


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_path(path, now=None):
    stamp = (now or datetime.datetime.now()).strftime('%Y%m%dT%H%M%S.%f')
    return '%s.%s.nodealloc.bak' % (path, stamp)


def make_backup(path):
    """Copy ``path`` (content, mode, owner) beside itself with a timestamp; returns the copy's path."""
    destination = backup_path(path)
    try:
        shutil.copy2(path, destination)
        stat = os.stat(path)
        os.chown(destination, stat.st_uid, stat.st_gid)
    except OSError as exc:
        raise WriteError('%s: could not make a backup at %s: %s' % (path, destination, exc.strerror or exc))
    return destination


def write_atomic(path, content, mode=None, owner=None, group=None):
    """Replace ``path`` with ``content`` (str or bytes) atomically and durably.

    Owner, group and mode default to those of the existing file (0644 and the
    current user for a new one).
    """
    data = content.encode('utf-8') if isinstance(content, str) else content
    # A config reached through a symlink is replaced where it lives; the link stays a link.
    path = os.path.realpath(path)
    directory = os.path.dirname(path)
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        existing = None
    if mode is None:
        mode = (existing.st_mode & 0o7777) if existing else 0o644
    uid = owner if owner is not None else (existing.st_uid if existing else -1)
    gid = group if group is not None else (existing.st_gid if existing else -1)

    try:
        fd, temp_path = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.nodealloc.tmp',
                                         dir=directory)
    except OSError as exc:
        raise WriteError('%s: cannot create a temporary file in %s: %s'
                         % (path, directory, exc.strerror or exc))
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            if uid != -1 or gid != -1:
                os.fchown(fd, uid, gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp_path, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        reason = 'no space left on the device' if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        raise WriteError('%s: not written, the file is unchanged: %s' % (path, reason))
    _fsync_directory(directory)


def remove_durably(path):
    os.unlink(path)
    _fsync_directory(os.path.dirname(os.path.abspath(path)))


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
