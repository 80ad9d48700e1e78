# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A directory's disk use counted as du and cAdvisor count it, and a filesystem's size as statfs gives it; bounded,
never following a link.

Two measures, each where the kubelet uses its own:

* ``filesystem``: statfs of the directory's filesystem, as cAdvisor's ``getVfsStats`` (google/cadvisor fs/fs.go at
  0087906c): capacity ``f_frsize * f_blocks`` (the kubelet's ephemeral-storage capacity), available
  ``f_frsize * f_bavail`` (what the eviction manager compares ``nodefs.available``/``imagefs.available`` with), free
  ``f_frsize * f_bfree``. The eviction manager acts on these, not on any sum of files.
* ``usage``: the blocks the files under a directory hold, as cAdvisor's ``GetDirUsage`` (the same file; the kubelet's
  per-volume and per-pod accounting) and ``du -s -x``: ``st_blocks * 512`` of every entry, the directory included,
  so a sparse file counts the blocks it holds, not its length; an inode with more than one link counted once; a
  mount point below (another ``st_dev``) not entered; a symbolic link counted as itself (its own blocks, usually
  none) and never followed.

Every directory is opened relative to its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY`` (``open_path`` from
``/``, component by component): a name another user replaced with a link is refused, not followed, and a directory
swapped between the listing and the open (its device and inode differ from the listing's) is not entered. Nothing
but directories is opened, nothing is read or written.

A walk is bounded (``Limits``): at most ``entries`` entries, ``depth`` levels below the start, ``seconds`` of the
clock. Past the depth limit a directory's own blocks count but its contents do not, and the walk goes on elsewhere;
at the entry or time limit the walk stops. Either way the result says ``complete: False`` and which limit stopped it
(``stopped``): its bytes are then a lower bound.
"""

from __future__ import annotations

import collections
import errno
import os
import stat as stat_module
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

# stat(2): st_blocks counts 512-byte units whatever the filesystem's block size (cAdvisor's statBlockSize).
STAT_BLOCK_BYTES = 512
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

Limits = collections.namedtuple('Limits', 'entries depth seconds')
# A node's /var/log and /var/lib/kubelet hold thousands of entries, not millions: 200,000 is far above them and still
# a second or two of lstat calls; 64 levels is deeper than any tree there; 10 s a walk keeps a run's measurement short.
DEFAULT_LIMITS = Limits(entries=200000, depth=64, seconds=10.0)


class UnsafeDirectoryError(NodeallocError):
    """A directory to measure is reached through a symbolic link or is not a directory: not measured."""


def open_path(path):
    """A descriptor of the directory ``path``, each component opened relative to the last with ``O_NOFOLLOW``.

    Raises ``UnsafeDirectoryError`` where a component is a link or not a directory, ``FileNotFoundError`` where one
    is missing.
    """
    if not os.path.isabs(path):
        raise UnsafeDirectoryError('%s: not an absolute path' % path)
    parts = [part for part in path.split('/') if part]
    if any(part in ('.', '..') for part in parts):
        raise UnsafeDirectoryError('%s: a path with . or .. is not measured' % path)
    fd = os.open('/', _DIRECTORY)
    try:
        for index, part in enumerate(parts):
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeDirectoryError('%s: %s is a symbolic link or not a directory: not followed, not '
                                               'measured' % (path, '/' + '/'.join(parts[:index + 1])))
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def filesystem(dir_fd):
    """statfs of the filesystem holding ``dir_fd``, as cAdvisor reads it; ``device`` is its ``st_dev``."""
    vfs = os.fstatvfs(dir_fd)
    capacity = vfs.f_frsize * vfs.f_blocks
    free = vfs.f_frsize * vfs.f_bfree
    return {'device': os.fstat(dir_fd).st_dev, 'capacity_bytes': capacity, 'free_bytes': free,
            'available_bytes': vfs.f_frsize * vfs.f_bavail, 'used_bytes': capacity - free}


class _Walk:
    def __init__(self, device, limits, clock):
        self.device = device
        self.limits = limits
        self.clock = clock
        self.deadline = clock() + limits.seconds
        self.linked = set()
        self.bytes = 0
        self.entries = 0
        self.parts = {}
        self.mounts_not_entered = 0
        self.vanished = 0
        self.too_deep = 0
        self.stopped = None

    def count(self, stat, part):
        if not stat_module.S_ISDIR(stat.st_mode) and stat.st_nlink > 1:
            key = (stat.st_dev, stat.st_ino)
            if key in self.linked:
                return
            self.linked.add(key)
        held = stat.st_blocks * STAT_BLOCK_BYTES
        self.bytes += held
        if part is not None:
            self.parts[part] = self.parts.get(part, 0) + held

    def out_of_budget(self):
        if self.entries >= self.limits.entries:
            self.stopped = 'entries: more than %d entries' % self.limits.entries
        elif self.clock() > self.deadline:
            self.stopped = 'seconds: walked longer than %g s' % self.limits.seconds
        return self.stopped is not None


def _enter(walk, dir_fd, listed, name):
    """A descriptor of the directory ``name`` if it is still the one listed (None if it went or was replaced)."""
    try:
        child = os.open(name, _DIRECTORY, dir_fd=dir_fd)
    except OSError:
        walk.vanished += 1
        return None
    found = os.fstat(child)
    if (found.st_dev, found.st_ino) != (listed.st_dev, listed.st_ino):
        os.close(child)
        walk.vanished += 1
        return None
    return child


def _walk(walk, dir_fd, depth, skip, parts, part):
    with os.scandir(dir_fd) as listing:
        for entry in listing:
            if walk.stopped or walk.out_of_budget():
                return
            walk.entries += 1
            if depth == 0 and entry.name in skip:
                continue
            here = entry.name if depth == 0 and entry.name in parts else part
            try:
                listed = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                walk.vanished += 1
                continue
            if listed.st_dev != walk.device:
                walk.mounts_not_entered += 1  # another filesystem mounted here: not this one's use (du -x)
                continue
            walk.count(listed, here)
            if not stat_module.S_ISDIR(listed.st_mode):
                continue
            if depth + 1 > walk.limits.depth:
                walk.too_deep += 1  # its own blocks counted, its contents not; the walk goes on elsewhere
                continue
            child = _enter(walk, dir_fd, listed, entry.name)
            if child is None:
                continue
            try:
                _walk(walk, child, depth + 1, skip, parts, here)
            finally:
                os.close(child)


def usage(dir_fd, skip=(), parts=(), limits=DEFAULT_LIMITS, clock=time.monotonic):
    """The blocks held under the directory ``dir_fd`` (itself included), as ``du -s -x`` and cAdvisor count them.

    ``skip``: names directly under it left out (the pods' own directories); ``parts``: names directly under it whose
    bytes are also given apart (``parts_bytes``). Returns {bytes, entries, parts_bytes, mounts_not_entered, vanished,
    complete, stopped} (``stopped``: which limit, 'entries', 'seconds' or 'depth', and by how much; None when
    complete).
    """
    top = os.fstat(dir_fd)
    walk = _Walk(top.st_dev, limits, clock)
    walk.count(top, None)
    _walk(walk, dir_fd, 0, frozenset(skip), frozenset(parts), None)
    stopped = walk.stopped
    if stopped is None and walk.too_deep:
        stopped = 'depth: %d directories deeper than %d levels not entered' % (walk.too_deep, limits.depth)
    return {'bytes': walk.bytes, 'entries': walk.entries, 'parts_bytes': walk.parts,
            'mounts_not_entered': walk.mounts_not_entered, 'vanished': walk.vanished,
            'complete': stopped is None, 'stopped': stopped}
