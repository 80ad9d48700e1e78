# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Readers for /proc files: meminfo, stat, and per-process cmdline, cgroup, stat, status.

Bytes are bytes: a process's name (``comm``, in ``stat`` and ``status``), its command line and its cgroup's path are
whatever bytes its owner chose (a user names a cgroup in their delegated ``user@.service`` subtree, or a program,
with any byte but ``/`` and NUL). Per-process files are decoded with ``surrogateescape`` (PEP 383): no byte stops a
reading, and a path read from them (a cgroup's, a ``--config``) names the same file when it is opened again. The
kernel's own files (meminfo, stat's counters) are ASCII.
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _shown_text
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError

# /proc/meminfo prints kB, which the kernel means as KiB (fs/proc/meminfo.c, show_val_kb).
_MEMINFO_UNIT_BYTES = 1024


# What one read asks for: a kernel file is a page or a few (a dense node's mountinfo, more: read until the end).
_READ_SIZE = 65536


def read_bytes(path):
    """A whole small file's bytes, read to its end. Raises OSError.

    By os.open and os.read, not open(): for each file open() makes a file object and a buffer, and nine system calls
    (openat, fstat, an ioctl asking whether it is a terminal, two lseek, fstat, read, read, close); this makes four
    (openat, read until a read returns nothing, close). Measured on this collection's test machine: 4.9 against 7.8
    us for /proc/meminfo, 2.9 against 5.7 for a command line; a gathering reads some 120 files.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, _READ_SIZE)
        if data:
            chunk = os.read(fd, _READ_SIZE)
            if chunk:
                chunks = [data, chunk]
                while chunk:
                    chunk = os.read(fd, _READ_SIZE)
                    chunks.append(chunk)
                data = b''.join(chunks)
    finally:
        os.close(fd)
    return data


def joined(directory, relative):
    """``os.path.join(directory, relative)``, the same string, without its generic work (a gathering joins some
    hundred paths of cgroups, /proc and unit files, and os.path.join was a tenth of the measurement's own work)."""
    if relative[:1] == '/':
        return os.path.join(directory, relative)  # an absolute one replaces the directory: as os.path.join does
    if not directory or directory[-1] == '/':
        return directory + relative
    return directory + '/' + relative


def read_file_text(path, errors='replace'):
    """A whole small file's text, read as bytes and decoded: what text mode gives (its newline translation too),
    without a text wrapper per file, which cost as much as the reading of a kernel file. Raises OSError."""
    text = read_bytes(path).decode('utf-8', errors)
    return text.replace('\r\n', '\n').replace('\r', '\n') if '\r' in text else text


def read_text(path):
    """Read a whole small kernel file, turning OS errors into MeasurementError."""
    try:
        return read_file_text(path)
    except OSError as exc:
        raise MeasurementError(path, 'a readable file', exc.strerror or exc)


def parse_meminfo(text, path='/proc/meminfo'):
    """Parse /proc/meminfo into a dict of byte counts (HugePages_* stay page counts)."""
    values = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(':')
        fields = rest.split()
        if not sep or not fields:
            continue
        try:
            number = int(fields[0])
        except ValueError:
            raise MeasurementError(path, 'an integer after %r' % name)
        values[name.strip()] = number * _MEMINFO_UNIT_BYTES if len(fields) == 2 and fields[1] == 'kB' else number
    for required in ('MemTotal', 'MemAvailable'):
        if required not in values:
            raise MeasurementError(path, 'a %s line (Linux 3.14 or later)' % required)
    return values


def read_meminfo(proc_root='/proc'):
    path = os.path.join(proc_root, 'meminfo')
    return parse_meminfo(read_text(path), path)


def parse_cpu_times(text, path='/proc/stat'):
    """Return (busy_jiffies, total_jiffies) from the aggregate ``cpu`` line of /proc/stat.

    Idle time is ``idle + iowait``, as top and the kernel's own accounting count it;
    guest time is already inside user time, so it is not added twice. Steal time
    (the hypervisor ran another guest while this vCPU wanted to run) is not work
    done on this node, so it is not busy; it stays in the total because the total
    stands for the wall-clock time elapsed on every CPU, the same clock the
    kubepods cgroup's CPU time is divided by (fs/proc/stat.c, show_stat).
    """
    # The kernel writes the aggregate line first: that line alone is split before the whole file (its per-CPU lines
    # and its interrupt counts, thousands of numbers on a large machine) would be.
    first = text.partition('\n')[0].splitlines()[:1]
    for line in (first if first and first[0].split()[:1] == ['cpu'] else text.splitlines()):
        fields = line.split()
        if fields and fields[0] == 'cpu':
            return _busy_and_total(fields, path)
    raise MeasurementError(path, 'an aggregate "cpu" line')


def _busy_and_total(fields, path):
    """(busy_jiffies, total_jiffies) of the fields of /proc/stat's ``cpu`` line."""
    try:
        numbers = [int(f) for f in fields[1:]]
    except ValueError:
        raise MeasurementError(path, 'integers on the cpu line')
    if len(numbers) < 4:
        raise MeasurementError(path, 'at least 4 counters on the cpu line')
    # user nice system idle iowait irq softirq steal guest guest_nice
    total = sum(numbers[:8])
    idle = numbers[3] + (numbers[4] if len(numbers) > 4 else 0)
    steal = numbers[7] if len(numbers) > 7 else 0
    return total - idle - steal, total


def read_cpu_times(proc_root='/proc'):
    path = os.path.join(proc_root, 'stat')
    return parse_cpu_times(read_text(path), path)


def list_pids(proc_root='/proc'):
    try:
        names = os.listdir(proc_root)
    except OSError as exc:
        raise MeasurementError(proc_root, 'a readable procfs directory', exc.strerror)
    return sorted(int(n) for n in names if n.isdigit())


def read_process_file(pid, name, proc_root='/proc'):
    """The bytes of /proc/<pid>/<name>, or None when the process has gone or the file cannot be read."""
    try:
        return read_bytes(joined(joined(proc_root, str(pid)), name))
    except OSError:
        return None


def read_cmdlines(proc_root='/proc'):
    """{pid: argv} of every process but kernel threads and those gone while listed: one pass over /proc for the
    searches that read every command line (_kubelet_process.find_processes, _tool_processes.find)."""
    found = {}
    # read_cmdline's reading, inlined: a node runs thousands of processes, and a call and a path join for each were a
    # fifth of this pass.
    prefix = os.path.join(proc_root, '')
    for pid in list_pids(proc_root):
        try:
            raw = read_bytes('%s%d/cmdline' % (prefix, pid))
        except OSError:
            continue
        if raw:
            # Decoded whole, then split: the same parts (no UTF-8 sequence spans a NUL), one decode per process.
            found[pid] = raw.rstrip(b'\0').decode('utf-8', 'replace').split('\0')
    return found


# Per-process files: any byte survives the decoding, and encodes back to itself (os.fsencode).
PROCESS_TEXT_ERRORS = 'surrogateescape'


def decode(raw):
    """Text of bytes read from a per-process file or a cgroup name: any byte kept (``surrogateescape``)."""
    return raw.decode('utf-8', PROCESS_TEXT_ERRORS)


def shown(text):
    """``text`` for a message or a result: a byte that is not UTF-8 (a lone surrogate from ``decode``) as ``\\xNN``,
    so what is shown can be encoded and printed anywhere; the path itself stays exact where it is used. The one
    escaping of node text (_shown_text, which every module's result also goes through)."""
    return _shown_text.shown(text)


def _status_value(pid, name, proc_root):
    """The bytes after ``<name>:`` on the first such line of /proc/<pid>/status, or None when the process has gone or
    has no such line. Each line follows a '\n' (the first, the file's start), and no value holds one (the kernel
    escapes the name's, fs/proc/array.c), so a '\x1c' or '\x85' in a name, which str.splitlines would take for a line
    break, starts no line either; only that line is looked at."""
    raw = read_process_file(pid, 'status', proc_root)
    if raw is None:
        return None
    key = ('\n%s:' % name).encode('utf-8', PROCESS_TEXT_ERRORS)
    start = (b'\n' + raw).find(key)
    if start < 0:
        return None
    return raw[start + len(key) - 1:].split(b'\n', 1)[0]


def read_process_status_field(pid, name, proc_root='/proc'):
    """The value text of the first ``<name>:`` line of /proc/<pid>/status (stripped, any byte kept), or None when the
    process has gone or has no such line (_status_value: only that line is decoded)."""
    value = _status_value(pid, name, proc_root)
    return None if value is None else decode(value).strip()


def read_cmdline(pid, proc_root='/proc'):
    """argv of a process, or None when it has gone or is a kernel thread."""
    raw = read_process_file(pid, 'cmdline', proc_root)
    if not raw:
        return None
    return [decode(part) for part in raw.rstrip(b'\0').split(b'\0')]


def parse_process_cgroups(text):
    """Parse /proc/<pid>/cgroup into {controller: path}; the v2 line is keyed ''.

    Lines end at '\n' only, which no cgroup's name may hold (kernel/cgroup/cgroup.c ``cgroup_mkdir``): other line
    breaks str.splitlines knows (\x1c, \x85, ...) may be in a name, and must not start a line of its own.
    """
    result = {}
    for line in text.split('\n'):
        parts = line.split(':', 2)
        if len(parts) != 3:
            continue
        controllers = parts[1].split(',') if parts[1] else ['']
        for controller in controllers:
            result[controller] = parts[2]
    return result


def read_process_cgroups(pid, proc_root='/proc'):
    """{controller: path} of a process (parse_process_cgroups), or None when it has gone; any byte in a path kept."""
    raw = read_process_file(pid, 'cgroup', proc_root)
    return None if raw is None else parse_process_cgroups(decode(raw))


def read_process_parent(pid, proc_root='/proc'):
    """The parent's pid from the ``PPid:`` line of /proc/<pid>/status, or None when the process has gone or the line
    is not a number. Only that line is looked at: a walk up a process's ancestors reads one status per step."""
    value = (_status_value(pid, 'PPid', proc_root) or b'').strip()
    return int(value) if value.isdigit() else None


def read_process_uids(pid, proc_root='/proc'):
    """(real, effective, saved, filesystem) uid of a process from its ``Uid:`` status line (world-readable), or None
    when it has gone or the line is not four numbers (fs/proc/array.c task_state)."""
    fields = (read_process_status_field(pid, 'Uid', proc_root) or '').split()
    if len(fields) != 4 or not all(field.isdigit() for field in fields):
        return None
    return tuple(int(field) for field in fields)


def parse_process_cpu_ticks(text):
    """utime + stime (clock ticks) from /proc/<pid>/stat; comm may hold spaces and parens."""
    after_comm = text.rsplit(')', 1)[1].split()
    # Fields after comm start at field 3 (state); utime and stime are fields 14 and 15.
    return int(after_comm[11]) + int(after_comm[12])


def read_process_cpu_ticks(pid, proc_root='/proc'):
    raw = read_process_file(pid, 'stat', proc_root)
    try:
        return None if raw is None else parse_process_cpu_ticks(decode(raw))
    except (IndexError, ValueError):
        return None


def read_process_rss_bytes(pid, proc_root='/proc'):
    """Resident set size from /proc/<pid>/status (VmRSS, KiB), or None if gone."""
    raw = read_process_file(pid, 'status', proc_root)
    if raw is None:
        return None
    try:
        for line in decode(raw).split('\n'):
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * _MEMINFO_UNIT_BYTES
    except (ValueError, IndexError):
        return None
    return 0


def read_hugepages_bytes(sys_root='/sys'):
    """Memory held as pre-allocated huge pages, every size: what cAdvisor reports as hugepages-<size>.

    Sums nr_hugepages x page size under /sys/kernel/mm/hugepages (0 where the directory is absent).
    """
    base = os.path.join(sys_root, 'kernel', 'mm', 'hugepages')
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    total = 0
    for name in names:
        if not (name.startswith('hugepages-') and name.endswith('kB')):
            continue
        try:
            size_kib = int(name[len('hugepages-'):-2])
            total += int(read_file_text(os.path.join(base, name, 'nr_hugepages'), 'strict').strip()) \
                * size_kib * _MEMINFO_UNIT_BYTES
        except (OSError, ValueError):
            continue
    return total
