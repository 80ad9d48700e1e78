"""Run a call under a CPU-time limit (SIGPROF): a test of "fast" fails in seconds on code that takes minutes.

CPU time, not wall-clock time: on a busy machine (make test runs six lines on two CPUs) a call that needs 0.2 s of
CPU can wait seconds for it, and a wall-clock limit then failed a fast parser (2026-11-27, `within(1)` in
test__config_file.py under ansible-test units). What the tests guard against, work that grows without bound
(``1e999999``, a billion laughs), costs CPU, which this counts and waiting does not.
"""

from __future__ import annotations

import contextlib
import signal


class TooSlow(AssertionError):
    pass


@contextlib.contextmanager
def within(seconds):
    """Fail with TooSlow once the process has used ``seconds`` of CPU (user and system) inside the block."""
    def expire(_signum, _frame):
        raise TooSlow('took more than %s s of CPU' % seconds)

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
