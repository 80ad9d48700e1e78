"""Kubernetes resource quantities, as apimachinery parses and prints them.

Upstream: k8s.io/apimachinery pkg/api/resource/quantity.go (``parseQuantityString``,
``ParseQuantity``, ``Quantity.Value``/``MilliValue``, ``CanonicalizeBytes``) and suffix.go (the
suffixes and what they mean). Values are kept exact, as fractions; apimachinery keeps them exact too
(int64Amount or inf.Dec), rounded up to a multiple of 1n when parsed.
"""

from __future__ import annotations

import math
from fractions import Fraction

# suffix.go: binary suffixes are powers of 2, decimal SI suffixes powers of 10.
BINARY = {'Ki': 10, 'Mi': 20, 'Gi': 30, 'Ti': 40, 'Pi': 50, 'Ei': 60}
DECIMAL = {'n': -9, 'u': -6, 'm': -3, '': 0, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18}
SUFFIX_CHARS = 'eEinumkKMGTP'
DIGITS = '0123456789'
# quantity.go ErrFormatWrong / ErrSuffix, word for word.
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_WRONG = "unable to parse quantity's suffix"
NANO = Fraction(1, 10 ** 9)
MAX_INT64 = 2 ** 63 - 1


class QuantityError(ValueError):
    pass


def _scan(text):
    """quantity.go parseQuantityString: (negative, num digits, denom digits, suffix)."""
    pos, end, negative = 0, len(text), False
    if text[:1] in ('-', '+'):
        negative = text[0] == '-'
        pos = 1
    while pos < end and text[pos] == '0':  # leading zeros go
        pos += 1
    start = pos
    while pos < end and text[pos] in DIGITS:
        pos += 1
    num = text[start:pos] or '0'
    denom = ''
    if pos < end and text[pos] == '.':
        pos += 1
        start = pos
        while pos < end and text[pos] in DIGITS:
            pos += 1
        denom = text[start:pos]  # "1." is accepted upstream (a TODO there says it may not be one day)
    suffix_start = pos
    while pos < end and text[pos] in SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in '+-':
        pos += 1
    while pos < end and text[pos] in DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    return negative, num, denom, text[suffix_start:]


def _interpret(suffix):
    """suffix.go quantitySuffixer.interpret: (base, exponent, binary?) or QuantityError."""
    if suffix in BINARY:
        return 2, BINARY[suffix], True
    if suffix in DECIMAL:
        return 10, DECIMAL[suffix], False
    if len(suffix) > 1 and suffix[0] in 'eE':
        digits = suffix[1:].lstrip('+-')
        if digits and all(c in DIGITS for c in digits) and suffix[1:].count('-') + suffix[1:].count('+') <= 1:
            exponent = int(suffix[1:])
            if -2 ** 31 <= exponent < 2 ** 31:
                return 10, exponent, False
    raise QuantityError(SUFFIX_WRONG)


def parse(text):
    """ParseQuantity: the exact value of ``text`` as a Fraction, rounded up (away from zero) to 1n."""
    if not isinstance(text, str):
        raise QuantityError('a quantity is a string, not %s' % type(text).__name__)
    if text == '':
        raise QuantityError(FORMAT_WRONG)
    negative, num, denom, suffix = _scan(text)
    base, exponent, binary = _interpret(suffix)
    magnitude = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** exponent
    if magnitude % NANO:
        magnitude = math.ceil(magnitude / NANO) * NANO
    if binary and magnitude > MAX_INT64:
        magnitude = Fraction(MAX_INT64)  # quantity.go caps BinarySI amounts at maxAllowed
    return -magnitude if negative else magnitude


def _round_away(value):
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def value(amount):
    """Quantity.Value(): the integer value, rounded up away from zero (0.1 -> 1)."""
    return _round_away(Fraction(amount))


def milli_value(amount):
    """Quantity.MilliValue(): the value in thousandths, rounded up away from zero."""
    return _round_away(Fraction(amount) * 1000)


def _decimal_si(number, exponent=0):
    """CanonicalizeBytes for DecimalSI: the exponent a multiple of 3 with no trailing zero groups."""
    if number == 0:
        return '0'
    while number % 1000 == 0:
        number //= 1000
        exponent += 3
    # suffix.go has decimal suffixes up to E (10^18). Above that, suffixHandler.constructBytes(DecimalSI) finds
    # none and CanonicalizeBytes ignores its ok flag, so the mantissa is printed bare (10^21 prints as "1").
    suffix = {v: k for k, v in DECIMAL.items()}.get(exponent, '')
    return '%d%s' % (number, suffix)


def format_bytes(byte_count):
    """String() of a BinarySI quantity of whole bytes, as node status shows memory: 933Mi, 1Gi, 1023."""
    if -1024 < byte_count < 1024:
        return _decimal_si(byte_count)
    number, exponent = byte_count, 0
    while number % 1024 == 0 and exponent < 60:
        number //= 1024
        exponent += 10
    suffix = {v: k for k, v in BINARY.items()}.get(exponent, '')
    return '%d%s' % (number, suffix)


def format_millicores(millicores):
    """String() of a DecimalSI CPU quantity: 1500m, 2, 80m."""
    if millicores % 1000 == 0:
        return _decimal_si(millicores // 1000)
    return _decimal_si(millicores, -3)
