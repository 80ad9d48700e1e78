"""The property tests under tests/unit run without hypothesis' wall-clock deadline (tests/conftest.py)."""

from __future__ import annotations

from hypothesis import settings


def test_the_unit_tests_have_no_wall_clock_deadline():
    assert settings.default.deadline is None
