# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Eviction thresholds as the kubelet parses and accounts them.

Mirrors pkg/kubelet/eviction/helpers.go (``ParseThresholdConfig``,
``parseThresholdStatement``, ``parsePercentage``) and
pkg/kubelet/cm/helpers.go ``hardEvictionReservation`` with
pkg/kubelet/eviction/api/types.go ``GetThresholdQuantity``:

* signals must be known; ``"0%"`` and ``"100%"`` mean "no threshold";
  other percentages must lie in [0%, 100%]; quantities must be positive;
* a percentage is parsed as a float32 and divided by 100 in float32, then
  ``int64(float64(capacity) * float64(percentage))``;
* only the hard ``memory.available`` threshold reduces allocatable memory,
  and only the hard ``nodefs.available`` one allocatable ephemeral-storage
  (``hardEvictionReservation`` has these two cases and no other: an
  ``imagefs.available`` threshold evicts, and collects images, but reserves
  nothing); neither lowers the kubepods cgroup limit
  (node_container_manager_linux.go).
"""

from __future__ import annotations

import math
import re
import struct

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity

# pkg/kubelet/eviction/api/types.go: every signal the kubelet accepts on Linux.
KNOWN_SIGNALS = (
    'memory.available', 'allocatableMemory.available', 'nodefs.available', 'nodefs.inodesFree',
    'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree',
    'pid.available',
)


# strconv.ParseFloat's syntax (atof.go readFloat), which Python's float() is wider than: no surrounding
# whitespace, no "5_0" (Go takes underscores only after a 0x prefix), no digits of other scripts, no "-nan".
# Hex floats are taken without underscores; "inf" and "nan" are named and refused below. Each optional part is one
# group, so a failed match does not try every split of a long run of digits (quadratic: 100,000 took ten minutes).
_GO_DECIMAL_FLOAT = re.compile(r'^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')
_GO_HEX_FLOAT = re.compile(r'^[+-]?0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+$')
_GO_SPECIAL = re.compile(r'^(?:[+-]?(?:inf|infinity)|nan)$', re.IGNORECASE)


def _float32(value):
    if math.isinf(value):
        raise ParseError('value out of range for a float32: %r' % value)
    try:
        return struct.unpack('f', struct.pack('f', value))[0]
    except OverflowError:
        # ParseFloat(s, 32) returns ErrRange for a value past float32's largest.
        raise ParseError('value out of range for a float32: %r' % value)


def parse_percentage(text):
    """parsePercentage: float32(ParseFloat(s without '%', 32)) / 100, in float32.

    Raises ``ParseError`` (a ``ValueError``) where ParseFloat fails, and for NaN and infinities, which ParseFloat
    takes (not "-nan") but which no threshold can be: the kubelet refuses the infinities as out of [0%, 100%] and
    would compare with NaN as with nothing.
    """
    number = text[:-1] if text.endswith('%') else text
    if _GO_SPECIAL.match(number):
        raise ParseError('invalid percentage %r: not a finite number' % text)
    if _GO_DECIMAL_FLOAT.match(number):
        value = float(number)
    elif _GO_HEX_FLOAT.match(number):
        value = float.fromhex(number)
    else:
        raise ParseError('invalid percentage %r' % text)
    return _float32(_float32(value) / _float32(100.0))


def parse_threshold(signal, value):
    """Return None (ignored), ('percentage', float) or ('quantity', Decimal); raise ParseError (a ValueError)."""
    if signal not in KNOWN_SIGNALS:
        raise ParseError('unsupported eviction signal %s' % signal)
    if not isinstance(value, str):
        raise ParseError('eviction threshold %s must be a string, not %r' % (signal, value))
    if value.endswith('%'):
        if value in ('0%', '100%'):
            return None
        percentage = parse_percentage(value)
        if percentage < 0:
            raise ParseError('eviction percentage threshold %s must be >= 0%%: %s' % (signal, value))
        if percentage > 1:
            raise ParseError('eviction percentage threshold %s must be <= 100%%: %s' % (signal, value))
        return 'percentage', percentage
    quantity = _quantity.parse_quantity(value)
    if quantity <= 0:
        raise ParseError('eviction threshold %s must be positive: %s' % (signal, value))
    return 'quantity', quantity


def parse_thresholds(statements):
    """Parse a {signal: value} map; returns {signal: parsed} without ignored entries."""
    parsed = {}
    for signal, value in (statements or {}).items():
        result = parse_threshold(signal, value)
        if result is not None:
            parsed[signal] = result
    return parsed


def threshold_bytes(parsed, capacity_bytes):
    """GetThresholdQuantity for a parsed threshold against a capacity in bytes."""
    kind, amount = parsed
    if kind == 'percentage':
        return int(float(capacity_bytes) * float(amount))
    return _quantity.quantity_value(amount)


def hard_eviction_bytes(eviction_hard, signal, capacity_bytes):
    """The bytes the hard threshold of ``signal`` stands for against ``capacity_bytes`` (GetThresholdQuantity); 0
    when the map sets none (or "0%"/"100%", which the kubelet ignores)."""
    parsed = parse_thresholds(eviction_hard)
    if signal not in parsed:
        return 0
    return threshold_bytes(parsed[signal], capacity_bytes)


def hard_eviction_memory_bytes(eviction_hard, capacity_bytes):
    """The memory the hard ``memory.available`` threshold takes out of allocatable."""
    return hard_eviction_bytes(eviction_hard, 'memory.available', capacity_bytes)
