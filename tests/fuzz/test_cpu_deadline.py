"""The fuzz suite's limit itself: CPU spent past it fails, time spent waiting does not."""

from __future__ import annotations

import time

import pytest

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import DEADLINE_MS, cpu_deadline, within_deadline


def _spin(milliseconds):
    started = time.thread_time()
    while (time.thread_time() - started) * 1000 < milliseconds:
        pass


def test_an_example_spending_more_cpu_than_the_limit_fails():
    with pytest.raises(AssertionError, match='of CPU'):
        cpu_deadline(_spin)(DEADLINE_MS * 1.5)
    with pytest.raises(AssertionError, match='_spin spent'):
        within_deadline(_spin, DEADLINE_MS * 1.5)


def test_waiting_is_not_spending():
    # A busy machine makes an example wait for a CPU; a sleep stands for that wait.
    assert cpu_deadline(time.sleep)(DEADLINE_MS * 3 / 1000.0) is None
