"""The fuzz suite's time limit per example, in this process's CPU time (issue 35 item 6: slower than 100 ms fails).

CPU time, not wall time: make test runs this suite beside QEMU guests on two cores, with another process allocating
and freeing 2 GiB, where an example waits for a CPU far longer than it runs; hypothesis' own deadline counts that wait
and failed examples that took 20 ms of CPU. What the limit is for (an input that makes a parser loop or backtrack) is
CPU spent, which a busy machine does not inflate.

The thread's CPU time, with the garbage collector held off while the example runs: under pytest-xdist a worker's
other threads (execnet's I/O) count in the process's time, and a collection of what earlier examples left behind
is not this example's cost (test_history_line spent 153 ms of process time on an example that parses in 17 ms, one
run in three with two workers on a busy machine).
"""

from __future__ import annotations

import functools
import gc
import time

DEADLINE_MS = 100


def cpu_deadline(test):
    """Fail an example whose run spends more than DEADLINE_MS of CPU (goes right under ``@given``)."""
    @functools.wraps(test)
    def timed(*args, **kwargs):
        result, spent_ms = _timed(test, args, kwargs)
        assert spent_ms <= DEADLINE_MS, 'the example spent %.0f ms of CPU (limit %d ms)' % (spent_ms, DEADLINE_MS)
        return result
    return timed


def _timed(function, args, kwargs):
    """``function``'s result and the CPU ms this thread spent in it, the garbage collector held off meanwhile."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        result = function(*args, **kwargs)
        return result, (time.thread_time() - started) * 1000
    finally:
        if collecting:
            gc.enable()


def within_deadline(function, *args, **kwargs):
    """``function(*args, **kwargs)``, failing if it spends more than DEADLINE_MS of CPU: for a test whose oracle (a
    Markdown or HTML parser checking the output) costs more than the code under test, and is not what is timed."""
    result, spent_ms = _timed(function, args, kwargs)
    assert spent_ms <= DEADLINE_MS, '%s spent %.0f ms of CPU (limit %d ms)' % (function.__name__, spent_ms, DEADLINE_MS)
    return result
