# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Open the files root keeps on a node without following another user's links: the directory first, then the file.

A directory another user can write lets that user put a symbolic link, or a file of their own, at a name root is
about to open: root then appended to, cut or replaced the link's target (a root-owned 0640 file had its last line cut
and JSON appended; a ``.prom`` link made root replace its target and chmod it 0644), or used the user's samples as the
node's history (issue 44). So the history, the sampler's state and textfile, the step's journal and records and the
status files are reached in two steps:

* ``open_directory``: the directory, opened with ``O_DIRECTORY | O_NOFOLLOW`` and checked with ``fstat``: owned by
  this process's user (root on a node; the euid, so that a test run by another user works alike) and writable by
  neither group nor others. Only its owner can then add, remove or rename a name in it, so what the next step finds
  there was put there by root.
* ``open_in``: the file, opened relative to that directory's descriptor (``dir_fd``) with ``O_NOFOLLOW`` (a link is
  refused, never followed) and checked with ``fstat`` before a byte is read, cut or appended: a regular file, owned by
  this process's user, writable by neither group nor others. ``O_TRUNC`` is refused: it would cut before the check.

A refusal is an ``UnsafePathError`` that names the path, what was found (its owner's uid and its mode) and why it is
not used. Nothing found is ever chmod'ed or chown'ed. The directories above are the operator's choice (the role's
options name them) and are not walked. The system calls (openat, newfstatat, fstat, readlinkat, close) are all in the
sandboxed sampler's ``@system-service`` set (_sampler/_systemd_units.py).
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_WRITABLE_BY_OTHERS = stat_module.S_IWGRP | stat_module.S_IWOTH


class UnsafePathError(NodeallocError):
    """A file or directory root would open is not root's alone: a symbolic link, another user's, or writable by
    group or others. The message names the path, what was found and why it is not used."""


def _found(stat):
    return 'owner uid %d, mode %04o' % (stat.st_uid, stat.st_mode & 0o7777)


def not_ours(stat):
    """Why a file or directory with ``stat`` is not this process's user's alone; None when it is."""
    if stat.st_uid != os.geteuid():
        return 'owned by uid %d, not by uid %d who writes it' % (stat.st_uid, os.geteuid())
    writable = stat.st_mode & _WRITABLE_BY_OTHERS
    if writable:
        who = {stat_module.S_IWGRP: 'its group', stat_module.S_IWOTH: 'others'}.get(writable, 'its group and others')
        return 'writable by %s (mode %04o)' % (who, stat.st_mode & 0o7777)
    return None


def _link_refusal(path, target):
    return UnsafePathError('%s is a symbolic link (to %s): not followed, nothing read or written there; nodealloc '
                           'opens only files it can reach at their own name' % (path, target))


def _readlink(name, dir_fd=None):
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return '?'


def _checked(fd, is_kind, not_kind, refusal, path):
    """``fd`` once ``fstat`` says it is of the kind (``is_kind``) and this process's user's alone; else it is closed
    and ``UnsafePathError`` (``refusal`` % (path, what is wrong, what was found)) raised."""
    try:
        stat = os.fstat(fd)
        problem = None if is_kind(stat.st_mode) else not_kind
        problem = problem or not_ours(stat)
        if problem:
            raise UnsafePathError(refusal % (path, problem, _found(stat)))
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_directory(directory):
    """A descriptor of ``directory`` once it is root's alone; ``UnsafePathError`` otherwise.

    A missing directory raises ``FileNotFoundError`` (callers say what they do about it).
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOW)
    except OSError as exc:
        # O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR, not ELOOP: lstat says which it was.
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and os.path.islink(directory):
            raise _link_refusal(directory, _readlink(directory))
        raise
    return _checked(fd, stat_module.S_ISDIR, 'not a directory',
                    '%s: the directory is %s (%s): not used, nothing read or written there; only a directory root '
                    'alone can write keeps another user from putting a link or a file of their own at a name root '
                    'opens', directory)


def open_in(dir_fd, name, flags, mode=0o600, path=None):
    """A descriptor of ``name`` in the checked directory ``dir_fd``, opened with ``flags`` (``O_NOFOLLOW`` and
    ``O_NONBLOCK`` added: a fifo put there does not hang the open) once it is a regular file root alone can write.

    ``path`` names the file in a refusal. ``O_CREAT`` creates it with ``mode`` (the umask applies) where missing.
    """
    if flags & os.O_TRUNC:
        raise ValueError('O_TRUNC would cut the file before it is checked')
    path = path or name
    try:
        fd = os.open(name, flags | _NO_FOLLOW | os.O_NONBLOCK, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refusal(path, _readlink(name, dir_fd))
        raise
    return _checked(fd, stat_module.S_ISREG, 'not a regular file', '%s is %s (%s): not used, nothing read or written '
                    'there', path)


def open_file(path, flags, mode=0o600):
    """``open_directory`` on the directory of ``path``, then ``open_in`` for the file: its descriptor."""
    directory, name = os.path.split(os.path.abspath(path))
    dir_fd = open_directory(directory)
    try:
        return open_in(dir_fd, name, flags, mode, path)
    finally:
        os.close(dir_fd)


def read_bytes(path, max_bytes=None):
    """The bytes of ``path`` once it and its directory are root's alone (``FileNotFoundError`` when absent); with
    ``max_bytes``, at most ``max_bytes + 1`` of them, so that a caller can tell a file larger than its limit."""
    fd = open_file(path, os.O_RDONLY)
    try:
        chunks, size = [], 0
        while max_bytes is None or size <= max_bytes:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def entry(dir_fd, name, path=None):
    """``lstat`` of ``name`` in ``dir_fd`` (None when absent); a link or anything but a regular file is refused.

    For a writer about to replace the name: what is there is never followed, and its mode and owner are copied only
    from a regular file in a directory root alone can write (which only root can have put there).
    """
    try:
        stat = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat_module.S_ISLNK(stat.st_mode):
        raise _link_refusal(path or name, _readlink(name, dir_fd))
    if not stat_module.S_ISREG(stat.st_mode):
        raise UnsafePathError('%s is not a regular file (%s): not replaced' % (path or name, _found(stat)))
    return stat
