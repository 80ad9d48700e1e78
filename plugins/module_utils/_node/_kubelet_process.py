# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Find the running kubelet and container runtime, and read the kubelet's flags.

The kubelet parses its command line with pflag (cmd/kubelet/app/options/options.go):
``--flag=value`` and ``--flag value`` are both accepted, map flags such as
``--kube-reserved`` take ``k=v,k=v`` and ``--eviction-hard`` takes ``k<v,k<v``.
Flags win over the config file and its drop-ins (cmd/kubelet/app/server.go,
``kubeletConfigFlagPrecedence``).

Trust (docs/security.md). A process is the kubelet or the runtime for us only when nobody but root can have made it
so, because root then runs its program (``--version``), reads the config its command line names and measures its
group as the kubelet's: it runs as root (every uid on its ``Uid:`` line 0: a user's program, a set-uid one a user
started, is not), its executable (``/proc/<pid>/exe``, never ``argv[0]``, which any user sets with ``exec -a``) and
every directory above it are root's and writable by nobody else, and where systemd runs the node it runs in a system
unit of the kubelet's or a runtime's (units_for). What is not verified: that root's kubelet is the kubelet (root may
replace it), and any process root starts by hand.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

DEFAULT_KUBELET_NAMES = ('kubelet',)
DEFAULT_RUNTIME_NAMES = ('containerd', 'crio', 'dockerd', 'cri-dockerd')
_INTERPRETERS = ('python', 'python3', 'sh', 'bash')
# The systemd units that run a kubelet: kubeadm's and the distributions' packages', k3s's (server, agent) and RKE2's
# (server, agent); k3s and RKE2 run their embedded containerd in the same unit.
DEFAULT_KUBELET_UNITS = ('kubelet.service', 'k3s.service', 'k3s-agent.service', 'rke2-server.service',
                         'rke2-agent.service')
DEFAULT_RUNTIME_UNITS = ('containerd.service', 'crio.service', 'docker.service', 'cri-docker.service')

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
# Whole-number flags: a value that is not one is left out (the kubelet would not start with it; the config's value or
# the default then stands).
_INT_FLAGS = {'--max-pods': 'maxPods'}
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
    line = _procfs.read_process_status_field(pid, 'NSpid', proc_root)
    return len(line.split()) if line else None


def _systemd_runs_the_node(proc_root):
    """Whether pid 1 (of this pid namespace) is systemd: ``comm`` is world-readable, and systemd names itself so."""
    return (_procfs.read_process_file(1, 'comm', proc_root) or b'').strip() == b'systemd'


def units_for(kubelet_unit=None):
    """The systemd units whose processes may be the kubelet or the runtime: the configured kubelet unit (else the
    usual ones: kubeadm's and the packages' ``kubelet.service``, k3s's and RKE2's, which run the kubelet and their
    embedded containerd in one unit) and the runtimes' own."""
    return ((kubelet_unit,) if kubelet_unit else DEFAULT_KUBELET_UNITS) + DEFAULT_RUNTIME_UNITS


def _unit_path_reason(process_cgroups, units):
    """Why a process's systemd cgroup is not one of ``units`` as a system service, or None when it is.

    The path is the ``name=systemd`` line's (v1, hybrid) or the unified one's: slices, then the unit (then the unit's
    own sub-groups). Only slices may come before the unit: a user's delegated subtree sits below ``user@<uid>.service``
    and may hold groups of any name, ``kubelet.service`` too.
    """
    path = (process_cgroups or {}).get('name=systemd') or (process_cgroups or {}).get('')
    if path is None:
        return 'its cgroup cannot be read'
    parts = [part for part in path.split('/') if part]
    while parts and parts[0].endswith('.slice') and parts[0] != 'user.slice' and not parts[0].startswith('user-'):
        parts.pop(0)
    if not parts or parts[0] not in units:
        return 'runs in cgroup %s, not in the unit of %s' % (_procfs.shown(path), ' or '.join(units))
    return None


def _owner_reason(path, what, directory=False):
    """Why ``path`` could be changed by someone other than root (owner, group or other write), or None."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return '%s %s cannot be examined (%s)' % (what, _procfs.shown(path), exc.strerror)
    if info.st_uid != 0:
        return '%s %s is owned by uid %d' % (what, _procfs.shown(path), info.st_uid)
    # A root-owned sticky directory (/tmp) lets nobody else rename or remove what root owns in it: an ancestor may be
    # one; the program's own directory may not be writable by anyone but root at all.
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (directory == 'ancestor' and info.st_mode & stat.S_ISVTX):
        return '%s %s is writable by group or others (mode %o)' % (what, _procfs.shown(path),
                                                                   stat.S_IMODE(info.st_mode))
    return None


def program_file_reason(path):
    """Why the program file ``path`` is not one only root can have put there, or None: the file and every directory
    above it owned by root and not writable by group or others (the file's own directory not even with the sticky
    bit). Who can change it or rename a directory on its way can change what root runs."""
    if not os.path.isabs(path):
        return '%s is not an absolute path' % _procfs.shown(path)
    reason = _owner_reason(path, 'the program')
    directory, kind = os.path.dirname(path), 'its directory'
    while reason is None:
        reason = _owner_reason(directory, kind, 'own' if kind == 'its directory' else 'ancestor')
        if directory == os.path.dirname(directory):
            break
        directory, kind = os.path.dirname(directory), 'the directory'
    return reason


def _executable(pid, proc_root):
    """(path of the program ``/proc/<pid>/exe`` names, errno or None). The running image may have been replaced on
    disk since (a package upgrade: `` (deleted)``): the path is what runs next, and what is verified."""
    try:
        path = os.readlink(os.path.join(proc_root, str(pid), 'exe'))
    except OSError as exc:
        return None, exc
    return (path[:-len(' (deleted)')] if path.endswith(' (deleted)') else path), None


def trusted_program(pid, argv, proc_root='/proc'):
    """(command prefix that runs this process's program, None) when its executable (and a stand-in's script, for a
    program run by an interpreter: ``python3 /usr/bin/kubelet``) is root's alone; (None, why not) otherwise."""
    path, error = _executable(pid, proc_root)
    if path is None:
        return None, 'its executable cannot be read (%s)' % (error.strerror or error)
    reason = program_file_reason(path)
    if reason:
        return None, reason
    command = [path]
    if _interpreted(argv):
        script = argv[1]
        reason = program_file_reason(os.path.realpath(script)) if os.path.isabs(script) else \
            'its script %s is not an absolute path' % _procfs.shown(script)
        if reason:
            return None, reason
        command.append(os.path.realpath(script))
    return command, None


def _interpreted(argv):
    return bool(argv) and os.path.basename(argv[0]).rstrip('0123456789.') in _INTERPRETERS and len(argv) > 1


def why_untrusted(pid, argv, proc_root='/proc', units=None, need_executable=True, systemd=None):
    """Why the process ``pid`` may not stand for the kubelet or the runtime, or None when it may (module docstring).

    ``need_executable``: the caller runs the program or reads a config path from its command line, so its
    executable must be read and verified. The sampler measures the process's group only and has no CAP_SYS_PTRACE
    (``/proc/<pid>/exe`` of a root process with capabilities is not readable to it, kernel/ptrace.c
    ``__ptrace_may_access``): an unreadable one is no reason then; a readable one is still verified.
    """
    uids = _procfs.read_process_uids(pid, proc_root)
    if uids is None:
        return 'its uid cannot be read'
    if any(uids):
        return 'uid %s' % (uids[0] if uids[0] else '/'.join(str(u) for u in uids))
    if systemd is None:
        systemd = _systemd_runs_the_node(proc_root)
    if systemd:
        reason = _unit_path_reason(_procfs.read_process_cgroups(pid, proc_root), units or units_for())
        if reason:
            return reason
    path, error = _executable(pid, proc_root)
    if path is None and not need_executable and error is not None and error.errno in (errno.EACCES, errno.EPERM):
        return None
    return trusted_program(pid, argv, proc_root)[1]


def find_processes(names, proc_root='/proc', cmdlines=None, units=None, ignored=None, need_executable=True):
    """This node's processes whose program name is one of ``names`` and which pass why_untrusted, lowest pid first.

    Only processes of this node count: a kubelet inside a container on this machine (kind, nspawn)
    names paths that mean something else here, and is not this node's. Told apart by its mount
    namespace where we may read it; ``/proc/<pid>/ns/mnt`` of a process with more capabilities than
    ours is not readable (kernel/ptrace.c ``__ptrace_may_access``, as for the sandboxed sampler, which
    has none, in a mount namespace of its own), so also by its pid namespace: a container's processes
    have more ids on their ``NSpid:`` line (``status`` is world-readable) than ours. ``cmdlines``:
    _procfs.read_cmdlines's answer where the caller reads it once for other searches too.

    A name is not a kubelet: any user can start a program called ``kubelet`` (``exec -a``), and what we find here is
    run (its ``--version``), its ``--config`` read and its group measured as the kubelet's. So a candidate counts only
    when it runs as root with a root-owned program in a unit of ``units`` (units_for; where systemd runs the node);
    each that does not is named in ``ignored`` (a list the caller shows, as not_found) and never used.
    """
    wanted = set(names)
    own_namespace = _mount_namespace('self', proc_root)
    own_depth = _pid_namespace_depth('self', proc_root)
    systemd = None
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
            if systemd is None:
                systemd = _systemd_runs_the_node(proc_root)
            reason = why_untrusted(pid, argv, proc_root, units, need_executable, systemd)
            if reason:
                if ignored is not None:
                    ignored.append('ignored a process named %s: pid %d (%s), %s' % (
                        _procfs.shown(program_name(argv))[:64], pid, _procfs.shown(' '.join(argv))[:120], reason))
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
    for flag, field in _INT_FLAGS.items():
        text = flags.get(flag)
        if text is not None and re.match(r'[0-9]{1,9}\Z', text.strip()):
            fields[field] = int(text.strip())
    return fields


# What a version probe runs with: no variable of ours (LD_PRELOAD, PYTHONPATH, a PATH of the become user's) reaches
# the program, and a C locale keeps its answer in the words _version_rules parses.
PROBE_ENVIRONMENT = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C'}


def version_command(argv, pid=None, proc_root='/proc', which=None, problems=None):
    """The command that asks this kubelet's binary its version (``[binary, '--version']``), or None.

    The binary ``/proc/<pid>/exe`` names, verified as root's alone (trusted_program), never ``argv[0]``: a command
    line is what its process says it is. The binary on disk, not the running process's image: the next start, after a
    write, runs what is on disk now (after a package upgrade the running kubelet may still be the old one). A stand-in
    run through an interpreter (``python3 /usr/bin/kubelet``) is asked through the same interpreter, its script
    verified too. Without a running kubelet, ``kubelet`` on the PATH, verified the same way. Each refusal is added to
    ``problems`` (a list) where given. Run it without a shell, with PROBE_ENVIRONMENT and a timeout.
    """
    if pid is not None:
        command, reason = trusted_program(pid, argv, proc_root)
        if command:
            return command + ['--version']
        if problems is not None:
            problems.append('not asking pid %d its version: %s' % (pid, reason))
        return None
    found = which('kubelet') if which else None
    if not found:
        return None
    found = os.path.realpath(found)
    reason = program_file_reason(found)
    if reason:
        if problems is not None:
            problems.append('not asking %s its version: %s' % (_procfs.shown(found), reason))
        return None
    return [found, '--version']


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
