"""What each test costs the machine: wall seconds and the CPU seconds the whole machine spent meanwhile.

A pytest plugin (tests/conftest.py loads it): with ``NODEALLOC_TEST_COST=<file>`` every test appends one JSON line
to that file, with its node id, its wall seconds (setup, call and teardown) and the machine's busy CPU seconds over
the same span, read from ``/proc/stat`` (user, nice, system, irq, softirq of every CPU). The machine's, not this
process's: a test's cost is mostly in what it starts and does not wait for itself (nspawn nodes, QEMU guests, the
stand-in kubelets, ansible-playbook's workers). So the figures are a test's own only when nothing else runs beside
it: docs/testing.md's table ("Where the CPU goes") comes from each line run alone. No timing is asserted.
"""

from __future__ import annotations

import json
import os
import time

import pytest

_CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


def machine_busy_seconds():
    """The machine's busy CPU seconds since boot: user, nice, system, irq and softirq of every CPU."""
    with open('/proc/stat', encoding='ascii') as handle:
        fields = handle.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields[1:8])
    return (user + nice + system + irq + softirq) / _CLOCK_TICKS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.environ.get('NODEALLOC_TEST_COST')
    if not path:
        yield
        return
    started, busy = time.monotonic(), machine_busy_seconds()
    yield
    line = {'test': item.nodeid, 'wall_seconds': round(time.monotonic() - started, 1),
            'machine_cpu_seconds': round(machine_busy_seconds() - busy, 1)}
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write(json.dumps(line) + '\n')
