# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Go ``time.ParseDuration``, which the kubelet uses for eviction grace periods.

A possibly signed sequence of decimal numbers, each with an optional fraction
and a unit suffix (``ns``, ``us``/``µs``/``μs``, ``ms``, ``s``, ``m``, ``h``);
``"0"`` alone needs no unit. Returns seconds as a Decimal.
"""

from __future__ import annotations

import decimal
import re

_UNITS = {
    'ns': decimal.Decimal('1e-9'), 'us': decimal.Decimal('1e-6'), '\u00b5s': decimal.Decimal('1e-6'),
    '\u03bcs': decimal.Decimal('1e-6'), 'ms': decimal.Decimal('1e-3'), 's': decimal.Decimal(1),
    'm': decimal.Decimal(60), 'h': decimal.Decimal(3600),
}
_TERM = re.compile(r'([0-9]*(?:\.[0-9]*)?)([a-z\u00b5\u03bc]+)')
_MAX_SECONDS = decimal.Decimal((1 << 63) - 1) * decimal.Decimal('1e-9')


def parse_duration(text):
    if not isinstance(text, str):
        raise ValueError('time: invalid duration %r' % (text,))
    original = text
    sign = 1
    if text and text[0] in '+-':
        sign = -1 if text[0] == '-' else 1
        text = text[1:]
    if text == '0':
        return decimal.Decimal(0)
    if not text:
        raise ValueError('time: invalid duration %r' % original)
    total = decimal.Decimal(0)
    position = 0
    while position < len(text):
        match = _TERM.match(text, position)
        if not match or match.group(1) in ('', '.'):
            raise ValueError('time: invalid duration %r' % original)
        unit = _UNITS.get(match.group(2))
        if unit is None:
            raise ValueError('time: unknown unit %r in duration %r' % (match.group(2), original))
        total += decimal.Decimal(match.group(1)) * unit
        position = match.end()
    # Durations are int64 nanoseconds: -2^63 ns is the most negative, 2^63-1 ns the most positive.
    limit = _MAX_SECONDS + (decimal.Decimal('1e-9') if sign < 0 else 0)
    if total > limit:
        raise ValueError('time: invalid duration %r' % original)
    return sign * total
