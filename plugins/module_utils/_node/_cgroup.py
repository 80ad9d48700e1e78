# Private to nodealloc.kubelet: not a public API, may change without notice.
"""cgroup discovery and reading, for cgroup v1 (legacy and hybrid) and v2 (unified).

What the kubelet reads, and so what we read:
* working set, as cAdvisor computes it (container/libcontainer/handler.go,
  setMemoryStats): usage minus inactive file pages, never below zero; v1
  usage is ``memory.usage_in_bytes`` less ``total_inactive_file`` from
  ``memory.stat``, v2 usage is ``memory.current`` less ``inactive_file``;
* CPU time: v1 ``cpuacct.usage`` (ns), v2 ``usage_usec`` in ``cpu.stat``;
* the node-allocatable cgroup is ``kubepods`` with the cgroupfs driver and
  ``kubepods.slice`` with the systemd driver (pkg/kubelet/cm/cgroup_manager_linux.go,
  ``ToSystemd``), directly under the cgroup root by default.
"""

from __future__ import annotations

import os
import posixpath
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError, MeasurementError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._procfs import read_text

KUBEPODS_BY_DRIVER = (('systemd', 'kubepods.slice'), ('cgroupfs', 'kubepods'))

# version: 'v1' or 'v2'; mode: 'legacy', 'hybrid' or 'unified'.
# memory_root / cpu_root: directories holding the memory and CPU-accounting files;
# mount_roots: {directory: root of the mount inside the hierarchy} to map
# /proc/<pid>/cgroup paths onto directories (a node may see a bind-mounted subtree).
CgroupLayout = namedtuple('CgroupLayout', ['version', 'mode', 'memory_root', 'cpu_root', 'mount_roots'])


def parse_mountinfo(text):
    """Return [(mount_root, mount_point, fstype, super_options)] from /proc/self/mountinfo."""
    return _parse_mount_lines(text.splitlines())


def _parse_mount_lines(lines):
    mounts = []
    for line in lines:
        left, sep, right = line.partition(' - ')
        if not sep:
            continue
        left_fields = left.split()
        right_fields = right.split()
        if len(left_fields) < 5 or len(right_fields) < 3:
            continue
        mount_root = _unescape(left_fields[3])
        mount_point = _unescape(left_fields[4])
        mounts.append((mount_root, mount_point, right_fields[0], right_fields[2].split(',')))
    return mounts


def _unescape(field):
    # mountinfo escapes space, tab, newline and backslash as octal (fs/proc_namespace.c).
    if '\\' not in field:
        return field
    return field.replace('\\040', ' ').replace('\\011', '\t').replace('\\012', '\n').replace('\\134', '\\')


def _preferred(candidates):
    """Of several mounts of one hierarchy, the one under /sys/fs/cgroup (where the kubelet looks).

    A mount listed later at the same point covers an earlier one (a bind over a read-only
    controller, as on our test nodes), so the last one there is the one in use.
    """
    under_sysfs = [c for c in candidates if c[1].startswith('/sys/fs/cgroup')]
    return under_sysfs[-1] if under_sysfs else candidates[0]


def layout_from_mountinfo(text):
    """Work out the layout the kubelet would see from the mount table."""
    memory, cpuacct, unified = [], [], []
    # Only cgroup mounts matter: their lines hold ' - cgroup' (the separator, then the type cgroup or cgroup2; a path's
    # spaces are escaped as \040, so no other field can). A node's pods add hundreds of other mounts, not parsed.
    cgroup_lines = [line for line in text.splitlines() if ' - cgroup' in line]
    for mount_root, mount_point, fstype, options in _parse_mount_lines(cgroup_lines):
        if fstype == 'cgroup':
            if 'memory' in options:
                memory.append((mount_root, mount_point))
            if 'cpuacct' in options:
                cpuacct.append((mount_root, mount_point))
        elif fstype == 'cgroup2':
            unified.append((mount_root, mount_point))
    if memory:
        if not cpuacct:
            raise LayoutError('cgroup v1 memory controller at %s but no cpuacct controller mounted; '
                              'the kubelet needs both' % memory[0][1])
        memory_mount, cpu_mount = _preferred(memory), _preferred(cpuacct)
        return CgroupLayout('v1', 'hybrid' if unified else 'legacy', memory_mount[1], cpu_mount[1],
                            {memory_mount[1]: memory_mount[0], cpu_mount[1]: cpu_mount[0]})
    if unified:
        mount_root, mount_point = _preferred(unified)
        return CgroupLayout('v2', 'unified', mount_point, mount_point, {mount_point: mount_root})
    raise LayoutError('no cgroup v1 memory controller and no cgroup2 mount in the mount table; '
                      'expected a Linux node with cgroups mounted under /sys/fs/cgroup')


def layout_from_root(cgroup_root):
    """Layout of a cgroup tree given by path: a v2 tree or a v1 tree of controller directories."""
    if os.path.isfile(os.path.join(cgroup_root, 'cgroup.controllers')):
        controllers = read_text(os.path.join(cgroup_root, 'cgroup.controllers')).split()
        if 'memory' not in controllers:
            raise LayoutError('%s is cgroup v2 but the memory controller is not enabled there '
                              '(cgroup.controllers: %s)' % (cgroup_root, ' '.join(controllers) or 'empty'))
        return CgroupLayout('v2', 'unified', cgroup_root, cgroup_root, {cgroup_root: '/'})
    memory_root = os.path.join(cgroup_root, 'memory')
    if os.path.isfile(os.path.join(memory_root, 'memory.usage_in_bytes')):
        for name in ('cpuacct', 'cpu,cpuacct', 'cpuacct,cpu'):
            cpu_root = os.path.join(cgroup_root, name)
            if os.path.isfile(os.path.join(cpu_root, 'cpuacct.usage')):
                unified = os.path.isdir(os.path.join(cgroup_root, 'unified'))
                return CgroupLayout('v1', 'hybrid' if unified else 'legacy', memory_root, cpu_root,
                                    {memory_root: '/', cpu_root: '/'})
        raise LayoutError('%s has a v1 memory controller but no cpuacct controller' % cgroup_root)
    raise LayoutError('%s is neither a cgroup v2 root (no cgroup.controllers) nor a cgroup v1 root '
                      '(no memory/memory.usage_in_bytes)' % cgroup_root)


def discover_layout(cgroup_root=None, proc_root='/proc'):
    if cgroup_root:
        return layout_from_root(cgroup_root)
    # Bytes are bytes: a mount point is any path (a user's FUSE mount under their home shows here too); kept exact
    # (_procfs.decode), so no byte stops the reading and a cgroup mount's path opens as it is.
    path = os.path.join(proc_root, 'self', 'mountinfo')
    raw = _procfs.read_process_file('self', 'mountinfo', proc_root)
    if raw is None:
        read_text(path)  # raises the MeasurementError naming why
    return layout_from_mountinfo(_procfs.decode(raw))


def normalise_cgroup_name(name):
    """'/kubepods.slice/' -> 'kubepods.slice'; cgroup paths are relative to the controller root."""
    return name.strip('/')


def find_kubepods(layout, override=None, driver_hint=None):
    """Return (driver, relative path) of the node-allocatable cgroup, or (None, None)."""
    if override:
        relative = normalise_cgroup_name(override)
        if not os.path.isdir(os.path.join(layout.memory_root, relative)):
            raise LayoutError('kubepods_cgroup %r does not exist under %s' % (override, layout.memory_root))
        return ('systemd' if relative.endswith('.slice') else 'cgroupfs'), relative
    candidates = [(driver, name) for driver, name in KUBEPODS_BY_DRIVER
                  if os.path.isdir(_procfs.joined(layout.memory_root, name))]
    if driver_hint:
        preferred = [c for c in candidates if c[0] == driver_hint]
        candidates = preferred or candidates
    if candidates:
        return candidates[0]
    return None, None


def _read_int(path):
    text = read_text(path).strip()
    try:
        return int(text)
    except ValueError:
        raise MeasurementError(path, 'an integer, found %r' % text[:40])


def parse_flat_keyed(text, path):
    """Parse 'key value' lines (memory.stat, cpu.stat) into {key: int}."""
    values = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 2:
            continue
        try:
            values[fields[0]] = int(fields[1])
        except ValueError:
            raise MeasurementError(path, 'an integer for %r' % fields[0])
    return values


def memory_limit_file(layout):
    """The name of a group's memory limit file: the one the kubelet writes kubepods' limit to.

    (libcontainer cgroups/fs/memory.go: memory.limit_in_bytes on v1; cgroups/fs2/memory.go: memory.max on v2.)
    """
    return 'memory.limit_in_bytes' if layout.version == 'v1' else 'memory.max'


def memory_limit_path(layout, relative):
    """The absolute path of a group's memory limit file."""
    return _procfs.joined(_procfs.joined(layout.memory_root, relative), memory_limit_file(layout))


def memory_working_set(layout, relative, stats=None):
    """Return a dict: usage, inactive_file, working_set bytes, and the files read.

    ``stats``: a dict that keeps the parsed memory.stat by group, for the pass's other reader of it (_swap.measure's
    swap cache), which then does not read and parse the file again."""
    directory = _procfs.joined(layout.memory_root, relative)
    stat_path = _procfs.joined(directory, 'memory.stat')
    if layout.version == 'v1':
        usage_path = _procfs.joined(directory, 'memory.usage_in_bytes')
        inactive_key = 'total_inactive_file'
    else:
        usage_path = _procfs.joined(directory, 'memory.current')
        inactive_key = 'inactive_file'
    usage_bytes = _read_int(usage_path)
    stat = parse_flat_keyed(read_text(stat_path), stat_path)
    if stats is not None:
        stats[relative] = stat
    if inactive_key not in stat:
        raise MeasurementError(stat_path, 'a %s line' % inactive_key)
    inactive_bytes = stat[inactive_key]
    return {
        'cgroup': '/' + relative,
        'usage_bytes': usage_bytes,
        'inactive_file_bytes': inactive_bytes,
        # For _memory_accounting: the cache MemAvailable also counts as available.
        'active_file_bytes': stat.get('total_active_file' if layout.version == 'v1' else 'active_file', 0),
        'slab_reclaimable_bytes': stat.get('slab_reclaimable', 0) if layout.version == 'v2' else 0,
        'working_set_bytes': max(0, usage_bytes - inactive_bytes),
        'usage_file': usage_path,
        'stat_file': stat_path,
    }


def cpu_usage_ns(layout, relative):
    """Cumulative CPU time of a cgroup in nanoseconds."""
    directory = _procfs.joined(layout.cpu_root, relative)
    if layout.version == 'v1':
        return _read_int(_procfs.joined(directory, 'cpuacct.usage'))
    path = _procfs.joined(directory, 'cpu.stat')
    stat = parse_flat_keyed(read_text(path), path)
    if 'usage_usec' not in stat:
        raise MeasurementError(path, 'a usage_usec line')
    return stat['usage_usec'] * 1000


def cpu_controller_dir(layout, relative):
    """The directory holding a group's cpu.shares (v1) or cpu.weight (v2), or None.

    On v1 ``layout.cpu_root`` is the cpuacct mount; cpu.shares lives in the cpu controller, co-mounted with
    it (cpu,cpuacct) or its sibling ``cpu``.
    """
    if layout.version == 'v2':
        return _procfs.joined(layout.cpu_root, relative)
    for root in cpu_controller_roots(layout):
        directory = _procfs.joined(root, relative)
        if os.path.isfile(_procfs.joined(directory, 'cpu.shares')):
            return directory
    return None


def cpu_controller_roots(layout):
    """Where a v1 group's cpu.shares may be, in the order looked at: the cpuacct mount, co-mounted with cpu
    (cpu,cpuacct), or its sibling ``cpu``."""
    return (layout.cpu_root, _procfs.joined(os.path.dirname(layout.cpu_root.rstrip('/')), 'cpu'))


def cgroup_exists(layout, relative):
    return os.path.isdir(_procfs.joined(layout.memory_root, relative))


def process_memory_cgroup(layout, process_cgroups):
    """Map a process's /proc/<pid>/cgroup entries to a path relative to layout.memory_root."""
    if process_cgroups is None:
        return None
    key = 'memory' if layout.version == 'v1' else ''
    path = process_cgroups.get(key)
    if path is None:
        return None
    # A cgroup mounted from outside the reader's cgroup namespace shows its root as '/../../x': normalise.
    mount_root = posixpath.normpath(layout.mount_roots.get(layout.memory_root, '/'))
    if mount_root not in ('/', '') and path.startswith(mount_root):
        path = path[len(mount_root):]
    return normalise_cgroup_name(path)
