"""What each test costs: wall seconds, the CPU seconds of everything it started, and the machine's.

A pytest hook (tests/conftest.py imports it): with ``NODEALLOC_TEST_COST=<file>`` every test appends one JSON line
to that file: its node id, its wall seconds (setup, call and teardown), ``tree_cpu_seconds``, the CPU seconds this
pytest process and every process under it used meanwhile (the nspawn nodes, whose systemd-nspawn is its child; the
QEMU guests; ansible-playbook and its workers; the stand-in servers), and ``machine_cpu_seconds``, the machine's busy
seconds from ``/proc/stat``. The tree's figure is the test's own even beside make test's other lines (a session
fixture's boot counts for the first test that needs it); the machine's is, only when nothing else runs. Not counted:
a process that left the tree (ssh's ControlPersist master daemonizes), small. docs/testing.md, "Where the CPU goes".
No timing is asserted anywhere.
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

_CLOCK_TICKS = os.sysconf('SC_CLK_TCK')
# The tests that start processes, boot nodes or run playbooks; the thousands of plain unit and fuzz tests, each a
# few milliseconds, would mostly measure the walk over /proc.
MEASURED = ('scenarios', 'vm', 'integration', 'unit/roles')


def machine_busy_seconds():
    """The machine's busy CPU seconds since boot: user, nice, system, irq and softirq of every CPU."""
    with open('/proc/stat', encoding='ascii') as handle:
        fields = handle.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields[1:8])
    return (user + nice + system + irq + softirq) / _CLOCK_TICKS


def _processes():
    """{pid: (parent pid, CPU seconds of the process and its reaped children)} for every process readable now."""
    found = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as handle:
                text = handle.read()
        except OSError:
            continue  # gone meanwhile
        fields = text[text.rindex(b')') + 2:].split()
        # After the command: state, ppid, ... utime (14th field of the line), stime, cutime, cstime.
        found[int(name)] = (int(fields[1]), sum(int(value) for value in fields[11:15]) / _CLOCK_TICKS)
    return found


def tree_cpu_seconds(root=None):
    """CPU seconds used so far by this process, its reaped children and every live process under it. A process is
    counted once: live, by its own stat; ended, in its parent's reaped-children times (or this process's rusage)."""
    root = root or os.getpid()
    processes = _processes()
    children = {}
    for pid, (parent, _seconds) in processes.items():
        children.setdefault(parent, []).append(pid)
    total, pending = 0.0, list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        total += processes[pid][1]
        pending.extend(children.get(pid, ()))
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.environ.get('NODEALLOC_TEST_COST')
    if not path or not any('/tests/%s/' % part in str(item.path) for part in MEASURED):
        yield
        return
    started, tree, busy = time.monotonic(), tree_cpu_seconds(), machine_busy_seconds()
    yield
    line = {'test': item.nodeid, 'wall_seconds': round(time.monotonic() - started, 1),
            'tree_cpu_seconds': round(tree_cpu_seconds() - tree, 1),
            'machine_cpu_seconds': round(machine_busy_seconds() - busy, 1)}
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write(json.dumps(line) + '\n')
