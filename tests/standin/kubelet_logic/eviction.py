"""Eviction thresholds, as the kubelet parses them at start-up and reserves them from allocatable.

Upstream (kubernetes/kubernetes):
* pkg/kubelet/eviction/helpers.go ``ParseThresholdConfig``, ``parseThresholdStatement`` (``0%`` and
  ``100%`` disable a threshold: it is dropped, so a soft one needs no grace period),
  ``parsePercentage`` (float32), ``parseGracePeriods``, ``parseMinimumReclaims``, ``validSignal``,
  ``addAllocatableThresholds``;
* pkg/kubelet/eviction/api/types.go ``GetThresholdQuantity`` (a percentage is
  ``int64(float64(capacity) * float64(float32 percentage))``);
* pkg/kubelet/eviction/defaults_linux.go ``DefaultEvictionHard`` and
  pkg/kubelet/apis/config/v1beta1/defaults.go (applied only when the config has no evictionHard);
* Go's time.ParseDuration (src/time/format.go) for grace periods.
"""

from __future__ import annotations

import math
import re
import struct

from . import quantity

SIGNALS = ('memory.available', 'allocatableMemory.available', 'nodefs.available', 'nodefs.inodesFree',
           'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree',
           'pid.available')
DEFAULT_EVICTION_HARD = {'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%',
                         'imagefs.available': '15%', 'imagefs.inodesFree': '5%'}
# strconv.ParseFloat's decimal syntax (hexadecimal floats are not handled here).
GO_FLOAT = re.compile(r'^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$', re.IGNORECASE)
GO_DURATION_UNITS = {'ns': 1, 'us': 1000, '\u00b5s': 1000, '\u03bcs': 1000, 'ms': 10 ** 6, 's': 10 ** 9,
                     'm': 60 * 10 ** 9, 'h': 3600 * 10 ** 9}
GO_DURATION_PART = re.compile(r'([0-9]*)(?:\.([0-9]*))?([^0-9.]+)')


class EvictionError(ValueError):
    pass


def float32(number):
    return struct.unpack('f', struct.pack('f', number))[0]


def parse_percentage(text):
    """parsePercentage: strconv.ParseFloat(s, 32) of the text before '%', divided by 100 in float32."""
    body = text.rstrip('%')
    if not GO_FLOAT.match(body):
        raise EvictionError('strconv.ParseFloat: parsing %r: invalid syntax' % body)
    try:
        parsed = float32(float(body))
    except OverflowError:
        raise EvictionError('strconv.ParseFloat: parsing %r: value out of range' % body)
    return float32(parsed / 100)


def parse_go_duration_ns(text):
    """time.ParseDuration: '30s', '1m30s', '1.5h', '-30s', '0'; returns nanoseconds."""
    rest, negative = text, False
    if rest[:1] in ('-', '+'):
        negative, rest = rest[0] == '-', rest[1:]
    if rest == '0':
        return 0
    if not rest:
        raise EvictionError('time: invalid duration %r' % text)
    total, pos = 0, 0
    while pos < len(rest):
        match = GO_DURATION_PART.match(rest, pos)
        if not match or not (match.group(1) or match.group(2)) or match.group(3) not in GO_DURATION_UNITS:
            raise EvictionError('time: invalid duration %r' % text)
        whole, fraction, unit = match.group(1) or '0', match.group(2) or '', match.group(3)
        total += int(whole) * GO_DURATION_UNITS[unit]
        if fraction:
            total += int(fraction) * GO_DURATION_UNITS[unit] // 10 ** len(fraction)
        pos = match.end()
    if total > 2 ** 63 - 1:
        raise EvictionError('time: invalid duration %r' % text)
    return -total if negative else total


def _valid_signal(signal):
    if signal not in SIGNALS:
        raise EvictionError('unsupported eviction signal %s' % signal)


def parse_threshold(signal, text):
    """parseThresholdStatement: a threshold dict, or None for a disabled one (0% or 100%)."""
    _valid_signal(signal)
    if text.endswith('%'):
        if text in ('0%', '100%'):
            return None
        percentage = parse_percentage(text)
        if percentage < 0:
            raise EvictionError('eviction percentage threshold %s must be >= 0%%: %s' % (signal, text))
        if percentage > 1:
            raise EvictionError('eviction percentage threshold %s must be <= 100%%: %s' % (signal, text))
        return {'signal': signal, 'percentage': percentage}
    try:
        amount = quantity.parse(text)
    except quantity.QuantityError as exc:
        raise EvictionError(str(exc))
    if amount <= 0:
        raise EvictionError('eviction threshold %s must be positive: %s' % (signal, text))
    return {'signal': signal, 'quantity': amount}


def parse_threshold_config(enforce_node_allocatable, hard, soft, soft_grace_period, minimum_reclaim):
    """ParseThresholdConfig: the list of thresholds, or EvictionError for what stops the kubelet."""
    hard_thresholds = [t for t in (parse_threshold(s, v) for s, v in sorted((hard or {}).items())) if t]
    soft_thresholds = [t for t in (parse_threshold(s, v) for s, v in sorted((soft or {}).items())) if t]
    grace_ns = {}
    for signal, text in sorted((soft_grace_period or {}).items()):
        _valid_signal(signal)
        grace_ns[signal] = parse_go_duration_ns(text)
        if grace_ns[signal] < 0:
            raise EvictionError('invalid eviction grace period specified: %s, must be a positive value' % text)
    reclaims = {}
    for signal, text in sorted((minimum_reclaim or {}).items()):
        _valid_signal(signal)
        if text.endswith('%'):
            percentage = parse_percentage(text)
            if percentage <= 0:
                raise EvictionError('eviction percentage minimum reclaim %s must be positive: %s' % (signal, text))
            reclaims[signal] = {'percentage': percentage}
            continue
        try:
            amount = quantity.parse(text)
        except quantity.QuantityError as exc:
            raise EvictionError(str(exc))
        if amount < 0:
            raise EvictionError('negative eviction minimum reclaim specified for %s' % signal)
        reclaims[signal] = {'quantity': amount}
    for threshold in soft_thresholds:
        if threshold['signal'] not in grace_ns:
            raise EvictionError('grace period must be specified for the soft eviction threshold %s' % threshold['signal'])
        threshold['grace_period_ns'] = grace_ns[threshold['signal']]
    results = hard_thresholds + soft_thresholds
    for threshold in results:
        if threshold['signal'] in reclaims:
            threshold['min_reclaim'] = reclaims[threshold['signal']]
    if 'pods' in (enforce_node_allocatable or []):
        results += [dict(t, signal='allocatableMemory.available') for t in hard_thresholds
                    if t['signal'] == 'memory.available']
    return results


def threshold_bytes(threshold, capacity_bytes):
    """GetThresholdQuantity: a quantity is its value; a percentage is taken of capacity in float64."""
    if 'quantity' in threshold:
        return quantity.value(threshold['quantity'])
    return int(math.trunc(float(capacity_bytes) * threshold['percentage']))


def hard_eviction_memory_bytes(thresholds, capacity_bytes):
    """hardEvictionReservation (pkg/kubelet/cm/helpers.go): what the memory.available hard threshold reserves."""
    reserved = 0
    for threshold in thresholds:
        if threshold['signal'] == 'memory.available' and 'grace_period_ns' not in threshold:
            reserved = threshold_bytes(threshold, capacity_bytes)
    return reserved


def effective_eviction_hard(config):
    """The evictionHard map the kubelet runs with: the v1beta1 default only when the config sets none."""
    hard = config.get('evictionHard')
    if hard is None:
        return dict(DEFAULT_EVICTION_HARD)
    if config.get('mergeDefaultEvictionSettings'):
        return dict(DEFAULT_EVICTION_HARD, **hard)
    return hard
