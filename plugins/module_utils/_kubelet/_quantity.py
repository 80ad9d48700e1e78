# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Kubernetes ``resource.Quantity`` parsing and formatting, mirroring apimachinery.

This mirrors k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go,
amount.go, scale_int.go) so that a value we compare or write is the value
the kubelet would read:

* ``parseQuantityString``: an optional sign, leading zeros stripped, digits,
  an optional ``.`` and digits (``1.`` and ``.5`` are accepted, so are
  ``-`` and ``.``, which mean 0), then a suffix: ``Ki Mi Gi Ti Pi Ei``,
  ``n u m "" k M G T P E`` or ``e``/``E`` followed by a signed integer.
* ``ParseQuantity``: values that fit an int64 at a scale of at least 1e-9 are
  kept exactly (the "fast path"); everything else is rounded *away from
  zero* to a multiple of 1e-9 and binary-suffixed values are capped at
  2^63-1 (the "slow path", which also rejects a number with no digit).
* ``Value()`` / ``MilliValue()``: rounded away from zero whenever anything
  is dropped (1.5 -> 2, -1.5 -> -2; amount.go ``negativeScaleInt64``).
* ``String()``: ``CanonicalizeBytes``, including the cached input string
  that ``ParseQuantity`` keeps when the input is already canonical.

Text from a node or a user is bounded before any arithmetic (issue 35): the slow path never works on
more digits than its answer can hold (digits below 1e-9 only decide whether to round up; a binary
value of 10^19 or more is the cap whatever its digits), so ``1e999999`` or a million digits cost as
little as ``1``. A decimal value of 10^60 or more, which no int64 field of the kubelet can hold and
which apimachinery keeps only as an unbounded ``inf.Dec``, is refused (``ParseError``) rather than
computed. Every refusal is a ``ParseError``, which is also a ``ValueError``.
"""

from __future__ import annotations

import decimal
import re
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError

DECIMAL_SI = 'DecimalSI'
BINARY_SI = 'BinarySI'
DECIMAL_EXPONENT = 'DecimalExponent'

_INT64_MAX = (1 << 63) - 1
# maxInt64Factors in quantity.go: digits an int64 can always hold.
_MAX_INT64_FACTORS = 18
_NANO_EXPONENT = -9

_BINARY_SUFFIXES = {'Ki': 10, 'Mi': 20, 'Gi': 30, 'Ti': 40, 'Pi': 50, 'Ei': 60}
_DECIMAL_SUFFIXES = {'n': -9, 'u': -6, 'm': -3, '': 0, 'k': 3, 'M': 6, 'G': 9,
                     'T': 12, 'P': 15, 'E': 18}
_DECIMAL_SUFFIX_FOR_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_FOR_POWER = {v // 10: k for k, v in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset('eEinumkKMGTP')
_DIGITS = frozenset('0123456789')
_EXPONENT_RE = re.compile(r'^[+-]?[0-9]+$')

# Quantities are exact decimals: give the arithmetic room for any int64 and
# any exponent the grammar produces in practice.
_CONTEXT = decimal.Context(prec=4000, Emax=999999, Emin=-999999,
                           traps=[decimal.InvalidOperation, decimal.Overflow])
# Decimal values from 10^60 up are refused (see the module docstring); binary ones from 10^19 up are the cap.
_MAX_DECIMAL_ADJUSTED_EXPONENT = 59
_BINARY_CAPPED_ADJUSTED_EXPONENT = 19
# strconv.ParseInt(s, 10, 64): more significant digits than this cannot be an int64.
_INT64_DIGITS = 19
_NANO = decimal.Decimal(1).scaleb(_NANO_EXPONENT)

ParsedQuantity = namedtuple('ParsedQuantity', ['value', 'format', 'cached_string'])


def _scan(text):
    """Split ``text`` like parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in '+-':
        positive = text[0] == '+'
        pos += 1

    while pos < end and text[pos] == '0':
        pos += 1
    if pos >= end:
        return positive, '0', '0', '', ''

    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or '0'
    if pos >= end:
        return positive, text, num, '', ''

    denom = ''
    if text[pos] == '.':
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ''
    value = text[:pos]

    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in '+-':
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ParseError('quantities must match the regular expression '
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': %r" % text)
    return positive, value, num, denom, text[suffix_start:]


def _interpret_suffix(suffix):
    """Return (base, exponent, format) for a suffix, like suffixer.interpret."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in 'eE' and _EXPONENT_RE.match(suffix[1:]):
        sign, digits = (suffix[1], suffix[2:]) if suffix[1] in '+-' else ('+', suffix[1:])
        digits = digits.lstrip('0') or '0'
        # Counted before int(): a 5,000-digit exponent is no int64 (and int() of it would raise on Python's digit limit).
        exponent = int(sign + digits) if len(digits) <= _INT64_DIGITS else None
        if exponent is not None and -(1 << 63) <= exponent <= _INT64_MAX:
            # Go keeps int32(parsed): the exponent wraps like the kubelet's does.
            return 10, ((exponent + (1 << 31)) % (1 << 32)) - (1 << 31), DECIMAL_EXPONENT
    raise ParseError('unable to parse quantity\'s suffix: %r' % suffix)


def _fast_path(num, denom, base, exponent, fmt, positive):
    """The int64 fast path of ParseQuantity: an exact (value, scale) or None."""
    mantissa = 1
    if fmt == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < _NANO_EXPONENT:
        return None
    shifted = num + denom
    unscaled = int(shifted)
    if unscaled > _INT64_MAX or unscaled * mantissa > _INT64_MAX:
        return None
    result = unscaled * mantissa
    return (result if positive else -result), scale, shifted, unscaled


def _cached_string(text, fmt, exponent, shifted, scale, parsed_digits):
    """ParseQuantity keeps the input as String() when it is already canonical."""
    if fmt == BINARY_SI:
        if exponent % 10 == 0 and parsed_digits & 0x07 != 0:
            return text
        return None
    if scale % 3 == 0 and not shifted.endswith('000') and shifted[0] != '0':
        return text
    return None


def parse(text):
    """Parse a quantity string into ``ParsedQuantity(value, format, cached_string)``.

    Raises ``ParseError`` (a ``ValueError``) on anything ``resource.ParseQuantity`` rejects, and on a decimal value
    of 10^60 or more.
    """
    if not isinstance(text, str):
        raise ParseError('a quantity must be a string, not %s' % type(text).__name__)
    if not text:
        raise ParseError('a quantity must not be empty')
    if text == '0':
        return ParsedQuantity(decimal.Decimal(0), DECIMAL_SI, text)

    positive, value_text, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret_suffix(suffix)
    if base == 10:
        # Before any arithmetic, the fast path's too: 1e999999 is an int64 1 at scale 999999 there.
        digits = (num + denom).lstrip('0')
        if digits and len(digits) - 1 - len(denom) + exponent > _MAX_DECIMAL_ADJUSTED_EXPONENT:
            raise ParseError('quantity %r is out of range: 1e%d or more (no kubelet field holds more than 2^63)'
                             % (text, _MAX_DECIMAL_ADJUSTED_EXPONENT + 1))

    fast = _fast_path(num, denom, base, exponent, fmt, positive)
    if fast is not None:
        result, scale, shifted, parsed_digits = fast
        value = decimal.Decimal(result).scaleb(scale, context=_CONTEXT)
        cached = _cached_string(text, fmt, exponent, shifted, scale, parsed_digits)
        return ParsedQuantity(_normalise(value), fmt, cached)

    # Slow path: inf.Dec.SetString needs at least one digit.
    if not any(c in _DIGITS for c in value_text):
        raise ParseError('unable to parse numeric part of quantity: %r' % text)
    magnitude = _slow_magnitude(num, denom, base, exponent)
    if fmt == BINARY_SI and magnitude > _INT64_MAX:
        magnitude = decimal.Decimal(_INT64_MAX)
    if fmt == BINARY_SI and 0 < magnitude < 1:
        fmt = DECIMAL_SI
    value = magnitude if positive else -magnitude
    return ParsedQuantity(_normalise(value), fmt, None)


def _slow_magnitude(num, denom, base, exponent):
    """|value| rounded away from zero to a multiple of 1e-9, from at most a hundred digits of the input.

    The value is ``digits * 10**place`` (times ``2**exponent`` for a binary suffix). Only the digits down to the
    place that still matters after the multiplication are kept (1e-9 for base 10, 1e-(9+exponent) for base 2,
    since 2**exponent divides 10**exponent); when any digit below that is not 0, a 5 one place further down
    stands for it: rounded up to 1e-9 it gives what the whole number gives, and it never carries into a new
    multiple of 1e-9 by itself.
    """
    digits = (num + denom).lstrip('0')
    if not digits:
        return decimal.Decimal(0)
    place = -len(denom) + (exponent if base == 10 else 0)
    adjusted = place + len(digits) - 1  # the place of the first significant digit
    if base == 2 and adjusted >= _BINARY_CAPPED_ADJUSTED_EXPONENT:
        return decimal.Decimal(_INT64_MAX)  # 10^19 * 2^10 is past the cap whatever the other digits are
    lowest = _NANO_EXPONENT - (exponent if base == 2 else 0)
    drop = lowest - place
    if drop > 0:
        kept, dropped = digits[:max(0, len(digits) - drop)], digits[max(0, len(digits) - drop):]
        digits, place = kept or '0', lowest
        if dropped.strip('0'):
            digits, place = digits + '5', lowest - 1
    magnitude = decimal.Decimal((0, tuple(int(d) for d in digits), place))
    if base == 2:
        magnitude = _CONTEXT.multiply(magnitude, decimal.Decimal(1 << exponent))
    if magnitude != 0:
        magnitude = magnitude.quantize(_NANO, rounding=decimal.ROUND_UP, context=_CONTEXT)
    return magnitude


def _normalise(value):
    """Drop trailing zeros of the exponent form so equal values compare and print alike."""
    if value == 0:
        return decimal.Decimal(0)
    return value.normalize(_CONTEXT) if value != value.to_integral_value() \
        else decimal.Decimal(int(value))


def parse_quantity(text):
    """Return the exact value of a Kubernetes quantity string as a ``Decimal``.

    The value is the one apimachinery holds after parsing: exact where it fits
    its int64 form, otherwise rounded away from zero to a multiple of 1e-9,
    and binary-suffixed values capped at 2^63-1.
    """
    return parse(text).value


def scaled_value(value, scale):
    """Mirror ``Quantity.ScaledValue``: value / 10**scale as an integer, rounded away from zero.

    This is what a parsed quantity does (int64Amount.AsScaledInt64 and
    negativeScaleInt64): 1.5 -> 2 and -1.5 -> -2.
    """
    value = decimal.Decimal(value)
    scaled = value.scaleb(-scale, context=_CONTEXT)
    return int(scaled.to_integral_value(rounding=decimal.ROUND_UP))


def quantity_value(value):
    """Mirror ``Quantity.Value()``: the integer value, rounded up."""
    return scaled_value(value, 0)


def milli_value(value):
    """Mirror ``Quantity.MilliValue()``: the value in milli-units, rounded up."""
    return scaled_value(value, -3)


def _strip_factors(number, factor):
    times = 0
    while number and number % factor == 0:
        number //= factor
        times += 1
    return number, times


def canonical_string(value, fmt=DECIMAL_SI):
    """Mirror ``Quantity.CanonicalizeBytes`` for a value held in ``fmt``."""
    value = decimal.Decimal(value)
    if value == 0:
        return '0'
    if fmt == BINARY_SI:
        if -1024 < value < 1024:
            fmt = DECIMAL_SI
        else:
            rounded = value.to_integral_value(rounding=decimal.ROUND_UP)
            if rounded != value:
                fmt = DECIMAL_SI
            else:
                sign = -1 if rounded < 0 else 1
                mantissa, power = _strip_factors(abs(int(rounded)), 1024)
                return str(sign * mantissa) + _BINARY_SUFFIX_FOR_POWER.get(power, '')
    if fmt not in (DECIMAL_SI, DECIMAL_EXPONENT):
        fmt = DECIMAL_EXPONENT
    sign, digits, exponent = value.as_tuple()
    mantissa = int(''.join(map(str, digits)))
    mantissa, times = _strip_factors(mantissa, 10)
    exponent += times
    shift = exponent - (exponent // 3) * 3
    mantissa *= 10 ** shift
    exponent -= shift
    number = ('-' if sign else '') + str(mantissa)
    if fmt == DECIMAL_EXPONENT:
        return number + ('e%d' % exponent if exponent else '')
    return number + _DECIMAL_SUFFIX_FOR_EXPONENT.get(exponent, '')


def quantity_string(text):
    """Mirror ``ParseQuantity(text).String()``."""
    parsed = parse(text)
    if parsed.cached_string is not None:
        return parsed.cached_string
    return canonical_string(parsed.value, parsed.format)


def format_memory(value_bytes):
    """Canonical binary form of a byte count, as the kubelet prints memory (``933Mi``)."""
    return canonical_string(decimal.Decimal(int(value_bytes)), BINARY_SI)


def format_cpu(millicores):
    """Canonical form of a CPU amount given in millicores (``80m``, ``2``, ``1500m``)."""
    return canonical_string(decimal.Decimal(int(millicores)).scaleb(-3), DECIMAL_SI)
