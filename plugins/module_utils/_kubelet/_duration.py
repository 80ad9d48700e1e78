# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Durations: Go ``time.ParseDuration``, which the kubelet uses for eviction grace periods, and our windows.

A possibly signed sequence of decimal numbers, each with an optional fraction
and a unit suffix (``ns``, ``us``/``µs``/``μs``, ``ms``, ``s``, ``m``, ``h``);
``"0"`` alone needs no unit. Returns seconds as a Decimal. ``parse_window`` adds whole days (``7d``) for the
history windows, which the kubelet does not have.
"""

from __future__ import annotations

import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError

# Seconds per unit, as decimal strings: decimal is imported only when a Go duration is parsed, since the sampler
# parses nothing but its day window once a minute and decimal was a twentieth of its run.
_UNITS = {'ns': '1e-9', 'us': '1e-6', '\u00b5s': '1e-6', '\u03bcs': '1e-6', 'ms': '1e-3', 's': '1', 'm': '60', 'h': '3600'}
_TERM = re.compile(r'([0-9]*(?:\.[0-9]*)?)([a-z\u00b5\u03bc]+)')
# [0-9], not \d: Python's \d takes any script's digits, which neither Go nor systemd reads.
_DAYS = re.compile(r'^([0-9]+(?:\.[0-9]+)?)d$')
_MAX_NANOSECONDS = (1 << 63) - 1


def parse_duration(text):
    import decimal

    if not isinstance(text, str):
        raise ParseError('time: invalid duration %r' % (text,))
    original = text
    sign = 1
    if text and text[0] in '+-':
        sign = -1 if text[0] == '-' else 1
        text = text[1:]
    if text == '0':
        return decimal.Decimal(0)
    if not text:
        raise ParseError('time: invalid duration %r' % original)
    total = decimal.Decimal(0)
    position = 0
    while position < len(text):
        match = _TERM.match(text, position)
        if not match or match.group(1) in ('', '.'):
            raise ParseError('time: invalid duration %r' % original)
        unit = _UNITS.get(match.group(2))
        if unit is None:
            raise ParseError('time: unknown unit %r in duration %r' % (match.group(2), original))
        total += decimal.Decimal(match.group(1)) * decimal.Decimal(unit)
        position = match.end()
    # Durations are int64 nanoseconds: -2^63 ns is the most negative, 2^63-1 ns the most positive.
    limit = decimal.Decimal(_MAX_NANOSECONDS + (1 if sign < 0 else 0)) * decimal.Decimal('1e-9')
    if total > limit:
        raise ParseError('time: invalid duration %r' % original)
    return sign * total


def parse_window(text):
    """Seconds in a window such as ``7d``, ``24h``, ``90m`` (Go durations, plus whole days)."""
    text = str(text).strip()
    match = _DAYS.match(text)
    if match:
        seconds = float(match.group(1)) * 86400
        # As long as a Go duration can be (a 400-digit day count is an infinite float, which no window can use).
        if seconds > _MAX_NANOSECONDS / 1e9:
            raise ParseError('a window of more than 2^63 ns (292 years) is out of range: %r' % text)
        return seconds
    seconds = float(parse_duration(text))
    if seconds < 0:
        raise ParseError('a window cannot be negative: %r' % text)
    return seconds
