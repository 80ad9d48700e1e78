"""Run a call under a wall-clock limit (SIGALRM): a test of "fast" fails in seconds on code that takes minutes."""

from __future__ import annotations

import contextlib
import signal


class TooSlow(AssertionError):
    pass


@contextlib.contextmanager
def within(seconds):
    def expire(_signum, _frame):
        raise TooSlow('took more than %s s' % seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
