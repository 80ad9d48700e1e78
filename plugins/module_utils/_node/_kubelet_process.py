# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Find the running kubelet and container runtime, and read the kubelet's flags.

The kubelet parses its command line with pflag (cmd/kubelet/app/options/options.go):
``--flag=value`` and ``--flag value`` are both accepted, map flags such as
``--kube-reserved`` take ``k=v,k=v`` and ``--eviction-hard`` takes ``k<v,k<v``.
Flags win over the config file and its drop-ins (cmd/kubelet/app/server.go,
``kubeletConfigFlagPrecedence``).
"""

from __future__ import annotations

import os
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

DEFAULT_KUBELET_NAMES = ('kubelet',)
DEFAULT_RUNTIME_NAMES = ('containerd', 'crio', 'dockerd', 'cri-dockerd')
_INTERPRETERS = ('python', 'python3', 'sh', 'bash')

Process = namedtuple('Process', ['pid', 'argv'])

# Flags whose values map onto KubeletConfiguration fields we read.
_MAP_FLAGS = {
    '--kube-reserved': ('kubeReserved', '='),
    '--system-reserved': ('systemReserved', '='),
    '--eviction-hard': ('evictionHard', '<'),
    '--eviction-soft': ('evictionSoft', '<'),
    '--eviction-soft-grace-period': ('evictionSoftGracePeriod', '='),
    '--eviction-minimum-reclaim': ('evictionMinimumReclaim', '='),
}
_LIST_FLAGS = {'--enforce-node-allocatable': 'enforceNodeAllocatable'}
_STRING_FLAGS = {
    '--cgroup-driver': 'cgroupDriver',
    '--kube-reserved-cgroup': 'kubeReservedCgroup',
    '--system-reserved-cgroup': 'systemReservedCgroup',
    '--cgroup-root': 'cgroupRoot',
}


def program_name(argv):
    """The program a command line runs, looking through an interpreter (``python3 /usr/bin/kubelet``)."""
    if not argv:
        return None
    first = os.path.basename(argv[0])
    if first.rstrip('0123456789.') in _INTERPRETERS and len(argv) > 1:
        return os.path.basename(argv[1])
    return first


def _mount_namespace(pid, proc_root):
    try:
        return os.readlink(os.path.join(proc_root, str(pid), 'ns', 'mnt'))
    except OSError:
        return None


def _pid_namespace_depth(pid, proc_root):
    """How many pid namespaces deep ``pid`` is, seen from ours: the ids on its ``NSpid:`` line (Linux >= 4.1)."""
    try:
        with open(os.path.join(proc_root, str(pid), 'status'), 'r', encoding='utf-8', errors='replace') as handle:
            for line in handle:
                if line.startswith('NSpid:'):
                    return len(line.split()) - 1
    except OSError:
        pass
    return None


def find_processes(names, proc_root='/proc', cmdlines=None):
    """Processes whose program name is one of ``names``, lowest pid first.

    Only processes of this node count: a kubelet inside a container on this machine (kind, nspawn)
    names paths that mean something else here, and is not this node's. Told apart by its mount
    namespace where we may read it; ``/proc/<pid>/ns/mnt`` of a process with more capabilities than
    ours is not readable (kernel/ptrace.c ``__ptrace_may_access``, as for the sandboxed sampler, which
    has none, in a mount namespace of its own), so also by its pid namespace: a container's processes
    have more ids on their ``NSpid:`` line (``status`` is world-readable) than ours. ``cmdlines``:
    _procfs.read_cmdlines's answer where the caller reads it once for other searches too.
    """
    wanted = set(names)
    own_namespace = _mount_namespace('self', proc_root)
    own_depth = _pid_namespace_depth('self', proc_root)
    found = []
    if cmdlines is None:
        cmdlines = _procfs.read_cmdlines(proc_root)
    for pid, argv in sorted(cmdlines.items()):
        if argv and program_name(argv) in wanted:
            namespace = _mount_namespace(pid, proc_root)
            if own_namespace and namespace and namespace != own_namespace:
                continue
            depth = _pid_namespace_depth(pid, proc_root)
            if own_depth and depth and depth > own_depth:
                continue
            found.append(Process(pid, argv))
    return found


def flag_values(argv):
    """Return {flag: last value} for every ``--flag=value`` or ``--flag value`` in argv."""
    values = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg.startswith('--'):
            name, sep, value = arg.partition('=')
            if not sep and index + 1 < len(argv) and not argv[index + 1].startswith('--'):
                value = argv[index + 1]
                index += 1
            values[name] = value
        index += 1
    return values


def _parse_map(text, separator):
    result = {}
    for item in text.split(','):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition(separator)
        if not sep:
            raise ValueError('%r is not key%svalue' % (item, separator))
        result[key.strip()] = value.strip()
    return result


def config_from_flags(argv):
    """KubeletConfiguration fields set on the command line, keyed by their config names."""
    flags = flag_values(argv)
    fields = {}
    for flag, (field, separator) in _MAP_FLAGS.items():
        if flag in flags:
            fields[field] = _parse_map(flags[flag], separator)
    for flag, field in _LIST_FLAGS.items():
        if flag in flags:
            fields[field] = [v.strip() for v in flags[flag].split(',') if v.strip()]
    for flag, field in _STRING_FLAGS.items():
        if flag in flags:
            fields[field] = flags[flag]
    return fields


def version_command(argv, pid=None, proc_root='/proc', which=None):
    """The command that asks this kubelet's binary its version (``[binary, '--version']``), or None.

    The binary on disk, not the running process's image: the next start, after a write, runs what is on disk now
    (after a package upgrade the running kubelet may still be the old one). A stand-in run through an interpreter
    (``python3 /usr/bin/kubelet``) is asked through the same interpreter. Without a running kubelet (or with a
    relative argv[0]), the binary is the one ``/proc/<pid>/exe`` names, else ``kubelet`` on the PATH.
    """
    if argv:
        first = os.path.basename(argv[0])
        if first.rstrip('0123456789.') in _INTERPRETERS and len(argv) > 1:
            return [argv[0], argv[1], '--version']
        if os.path.isabs(argv[0]):
            return [argv[0], '--version']
        if pid is not None:
            try:
                exe = os.readlink(os.path.join(proc_root, str(pid), 'exe'))
            except OSError:
                exe = None
            if exe:
                return [exe[:-len(' (deleted)')] if exe.endswith(' (deleted)') else exe, '--version']
    found = which('kubelet') if which else None
    return [found, '--version'] if found else None


def environment_names(pid, proc_root='/proc'):
    """The names (not the values) in a process's environment, or None where it cannot be read."""
    raw = _procfs.read_process_file(pid, 'environ', proc_root)
    if raw is None:
        return None
    return sorted({item.split(b'=', 1)[0].decode('utf-8', 'replace') for item in raw.split(b'\0') if item})


def config_paths(argv):
    """(--config, --config-dir) of a kubelet command line; either may be None."""
    flags = flag_values(argv)
    return flags.get('--config') or None, flags.get('--config-dir') or None


def systemd_unit(process_cgroups):
    """The systemd unit a process runs in (``kubelet.service``), from its name=systemd or v2 cgroup path."""
    if not process_cgroups:
        return None
    for key in ('name=systemd', ''):
        path = process_cgroups.get(key) or ''
        for part in reversed(path.split('/')):
            if part.endswith('.service'):
                return part
    return None
