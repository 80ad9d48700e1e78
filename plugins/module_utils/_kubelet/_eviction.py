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
* only the hard ``memory.available`` threshold reduces allocatable memory
  (``nodefs.available`` reduces ephemeral-storage); it does *not* lower the
  kubepods cgroup limit (node_container_manager_linux.go).
"""

from __future__ import annotations

import struct

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity

# pkg/kubelet/eviction/api/types.go: every signal the kubelet accepts on Linux.
KNOWN_SIGNALS = (
    'memory.available', 'allocatableMemory.available', 'nodefs.available', 'nodefs.inodesFree',
    'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree',
    'pid.available',
)


def _float32(value):
    return struct.unpack('f', struct.pack('f', value))[0]


def parse_percentage(text):
    """parsePercentage: float32(ParseFloat(s without '%', 32)) / 100, in float32."""
    number = text.rstrip('%')
    try:
        value = float(number)
    except ValueError:
        raise ValueError('invalid percentage %r' % text)
    if number.strip() != number or number.lower() in ('nan', 'inf', '+inf', '-inf', 'infinity'):
        raise ValueError('invalid percentage %r' % text)
    return _float32(_float32(value) / _float32(100.0))


def parse_threshold(signal, value):
    """Return None (ignored), ('percentage', float) or ('quantity', Decimal); raise ValueError."""
    if signal not in KNOWN_SIGNALS:
        raise ValueError('unsupported eviction signal %s' % signal)
    if not isinstance(value, str):
        raise ValueError('eviction threshold %s must be a string, not %r' % (signal, value))
    if value.endswith('%'):
        if value in ('0%', '100%'):
            return None
        percentage = parse_percentage(value)
        if percentage < 0:
            raise ValueError('eviction percentage threshold %s must be >= 0%%: %s' % (signal, value))
        if percentage > 1:
            raise ValueError('eviction percentage threshold %s must be <= 100%%: %s' % (signal, value))
        return 'percentage', percentage
    quantity = _quantity.parse_quantity(value)
    if quantity <= 0:
        raise ValueError('eviction threshold %s must be positive: %s' % (signal, value))
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


def hard_eviction_memory_bytes(eviction_hard, capacity_bytes):
    """The memory the hard ``memory.available`` threshold takes out of allocatable."""
    parsed = parse_thresholds(eviction_hard)
    if 'memory.available' not in parsed:
        return 0
    return threshold_bytes(parsed['memory.available'], capacity_bytes)
