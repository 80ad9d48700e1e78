# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The node's tasks (processes and their threads) outside the pods, and the kernel's limits on them.

A PID is spent per task, thread or process: the kernel gives every thread an id from the same space, and both the
pids cgroup controller and the kubelet count threads. What the kubelet reads (pkg/kubelet/stats/pidlimit/
pidlimit_linux.go ``Stats``, kubernetes/kubernetes; openshift/kubernetes 5f1b46ea holds the same file):

* its PID capacity, ``MaxPID``, is the smaller of ``/proc/sys/kernel/pid_max`` and ``/proc/sys/kernel/threads-max``
  ("both specify the system-wide limit on the number of tasks"); the container manager puts it in its
  ``internalCapacity`` as ``pid`` (pkg/kubelet/cm/container_manager_linux.go);
* the tasks running, ``NumOfRunningProcesses``, from the fourth field of ``/proc/loadavg`` (``running/total``: the
  total, the kernel's ``nr_threads``), which it prefers to sysinfo(2)'s 16-bit count (kubernetes/kubernetes#107107);
* ``pid.available`` = MaxPID - that count (pkg/kubelet/eviction/helpers.go ``makeSignalObservations``).

Outside the pods = that total - the tasks in the kubepods cgroup - the measuring tool's own (this module's process
and its threads: a reading must not count the tool that takes it). The tasks in kubepods are its ``pids.current``
(the pids controller counts every task of the subtree: Documentation/admin-guide/cgroup-v2.rst "PID"), on cgroup v2
in the kubepods group itself, on v1 in the ``pids`` hierarchy beside the memory one; where the controller is not
there, the threads of every process whose cgroup is under kubepods, counted in ``/proc/<pid>/task``.

Every file is read whole as bytes (_procfs.read_bytes, as the other /proc and cgroup readers do) and parsed by a
reader that takes only the kernel's form (a ``ParseError`` otherwise): a limit or a count is a decimal whole number.
A reading that fails leaves its figure None and says why in ``problems``; nothing here raises for a node's file.
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError, ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

# include/linux/threads.h PID_MAX_LIMIT on 64-bit (4 Mi) bounds pid_max; threads-max is bounded by FUTEX_TID_MASK
# (kernel/fork.c sysctl_max_threads: at most 0x3fffffff). No count of tasks is larger.
MAX_TASKS = 0x3fffffff
PID_MAX_PATH = 'sys/kernel/pid_max'
THREADS_MAX_PATH = 'sys/kernel/threads-max'
LOADAVG_PATH = 'loadavg'
PIDS_CURRENT = 'pids.current'


def parse_count(text, path):
    """A file holding one whole number (pid_max, threads-max, pids.current): ASCII digits, one trailing newline at
    most, 0 to MAX_TASKS. Raises ParseError naming ``path``."""
    body = text[:-1] if text.endswith('\n') else text
    if not body or len(body) > 10 or not all('0' <= c <= '9' for c in body):
        raise ParseError('%s: expected one whole number, found %r' % (path, text[:40]))
    value = int(body)
    if value > MAX_TASKS:
        raise ParseError('%s: %d is above the most tasks a kernel allows (%d)' % (path, value, MAX_TASKS))
    return value


def parse_loadavg_tasks(text, path='/proc/loadavg'):
    """The total of ``running/total``, the fourth of /proc/loadavg's five fields (fs/proc/loadavg.c: three averages,
    running/total tasks, the last pid), as the kubelet's ``runningTaskCount`` reads it. Raises ParseError."""
    fields = text.split(' ')
    if len(fields) != 5 or not text.endswith('\n'):
        raise ParseError('%s: expected five fields ending in a newline, found %r' % (path, text[:60]))
    running, sep, total = fields[3].partition('/')
    if not sep:
        raise ParseError('%s: expected running/total as the fourth field, found %r' % (path, fields[3][:30]))
    running_count = parse_count(running, path)
    total_count = parse_count(total, path)
    if running_count > total_count or total_count == 0:
        raise ParseError('%s: %d running of %d tasks cannot be' % (path, running_count, total_count))
    return total_count


def _read(path, parse, problems, what):
    try:
        return parse(_procfs.read_bytes(path).decode('ascii'), path)
    except (OSError, UnicodeDecodeError, ParseError) as exc:
        problems.append('%s not read from %s: %s' % (what, path, getattr(exc, 'strerror', None) or exc))
        return None


def pids_controller_dir(layout, kubepods):
    """The kubepods group's directory in the pids controller: the group itself on v2, on v1 the ``pids`` hierarchy
    mounted beside the memory one (/sys/fs/cgroup/pids)."""
    if layout.version == 'v2':
        return _procfs.joined(layout.memory_root, kubepods)
    return _procfs.joined(_procfs.joined(os.path.dirname(layout.memory_root.rstrip('/')), 'pids'), kubepods)


def task_count(pid, proc_root='/proc'):
    """The threads of one process (its entries in /proc/<pid>/task), 0 when it has gone."""
    try:
        return len(os.listdir(_procfs.joined(_procfs.joined(proc_root, str(pid)), 'task')))
    except OSError:
        return 0


def _under(groups, controller, kubepods):
    path = (groups or {}).get(controller)
    prefix = '/' + kubepods.strip('/')
    return path is not None and (path == prefix or path.startswith(prefix + '/'))


def count_tasks_in(kubepods, controller, proc_root='/proc'):
    """The threads of every process whose ``controller`` cgroup ('' on v2) is kubepods or under it: where no
    pids.current says it. A process gone while listed counts nothing."""
    return sum(task_count(pid, proc_root) for pid in _procfs.list_pids(proc_root)
               if _under(_procfs.read_process_cgroups(pid, proc_root), controller, kubepods))


def pod_tasks(layout, kubepods, proc_root, problems):
    """(tasks in kubepods, how they were counted); (0, None) without a kubepods group, (None, None) where they could
    not be counted (said in ``problems``)."""
    if not kubepods:
        return 0, None
    path = _procfs.joined(pids_controller_dir(layout, kubepods), PIDS_CURRENT)
    try:
        return parse_count(_procfs.read_bytes(path).decode('ascii'), path), path
    except FileNotFoundError:
        pass  # no pids controller there: count by process
    except (OSError, UnicodeDecodeError, ParseError) as exc:
        problems.append('%s not read (%s): the pods\' tasks are counted by process' % (path, exc))
    controller = 'pids' if layout.version == 'v1' else ''
    try:
        return count_tasks_in(kubepods, controller, proc_root), '/proc/<pid>/task of the processes in /%s' % kubepods
    except MeasurementError as exc:
        problems.append('the pods\' tasks not counted: %s' % exc)
        return None, None


def own_tasks(own_pids, layout, kubepods, proc_root='/proc'):
    """The threads of the measuring processes outside kubepods (one in a pod, an AWX job's, is in the pods' count)."""
    controller = 'pids' if layout is not None and layout.version == 'v1' else ''
    total = 0
    for pid in own_pids:
        if kubepods and _under(_procfs.read_process_cgroups(pid, proc_root), controller, kubepods):
            continue
        total += task_count(pid, proc_root)
    return total


def measure(layout, kubepods, proc_root='/proc', own_pids=()):
    """The node's tasks and its limits.

    Returns {pid_max, threads_max, capacity (min of the two, the kubelet's MaxPID), tasks_total (/proc/loadavg),
    kubepods_tasks, kubepods_source (the file or the count it came from), measuring_tool_tasks, non_pod_tasks
    (tasks_total - kubepods_tasks - measuring_tool_tasks, at least 0; None when the total was not read), available
    (capacity - tasks_total, the kubelet's pid.available), problems}.
    """
    problems = []
    pid_max = _read(_procfs.joined(proc_root, PID_MAX_PATH), parse_count, problems, 'kernel.pid_max')
    threads_max = _read(_procfs.joined(proc_root, THREADS_MAX_PATH), parse_count, problems, 'kernel.threads-max')
    limits = [v for v in (pid_max, threads_max) if v is not None]
    total = _read(_procfs.joined(proc_root, LOADAVG_PATH), parse_loadavg_tasks, problems, 'the tasks running')
    in_pods, source = pod_tasks(layout, kubepods, proc_root, problems)
    own = own_tasks(own_pids, layout, kubepods, proc_root)
    capacity = min(limits) if limits else None
    return {
        'pid_max': pid_max, 'threads_max': threads_max, 'capacity': capacity,
        'tasks_total': total, 'kubepods_tasks': in_pods, 'kubepods_source': source, 'measuring_tool_tasks': own,
        'non_pod_tasks': None if total is None or in_pods is None else max(0, total - in_pods - own),
        'available': None if capacity is None or total is None else capacity - total,
        'problems': problems,
    }
