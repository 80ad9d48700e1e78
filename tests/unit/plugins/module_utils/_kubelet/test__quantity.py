"""parse_quantity and formatting against apimachinery's own test tables.

Cases and expected results are taken from k8s.io/apimachinery
pkg/api/resource/quantity_test.go (TestQuantityParse, TestQuantityString,
TestQuantityParseEmit, TestQuantityRoundUp), as of commit eed236ce (2026-07).
"""

from __future__ import annotations

import decimal

import pytest
from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity as q
from ansible_collections.nodealloc.kubelet.tests.unit.utils.time_limit import within

D = decimal.Decimal
KI, MI, GI, TI, PI, EI = (1 << 10), (1 << 20), (1 << 30), (1 << 40), (1 << 50), (1 << 60)
MAX = (1 << 63) - 1

# (input, exact value, format) from TestQuantityParse.
PARSE_TABLE = [
    ('0', D(0), 'DecimalSI'), ('0n', D(0), 'DecimalSI'), ('0u', D(0), 'DecimalSI'),
    ('0m', D(0), 'DecimalSI'), ('0Ki', D(0), 'BinarySI'), ('0k', D(0), 'DecimalSI'),
    ('0Mi', D(0), 'BinarySI'), ('0M', D(0), 'DecimalSI'), ('0Gi', D(0), 'BinarySI'),
    ('0G', D(0), 'DecimalSI'), ('0Ti', D(0), 'BinarySI'), ('0T', D(0), 'DecimalSI'),
    ('1', D(1), 'DecimalSI'),
    ('1Ki', D(KI), 'BinarySI'), ('8Ki', D(8 * KI), 'BinarySI'), ('7Mi', D(7 * MI), 'BinarySI'),
    ('6Gi', D(6 * GI), 'BinarySI'), ('5Ti', D(5 * TI), 'BinarySI'), ('4Pi', D(4 * PI), 'BinarySI'),
    ('3Ei', D(3 * EI), 'BinarySI'), ('10Ti', D(10 * TI), 'BinarySI'), ('100Ti', D(100 * TI), 'BinarySI'),
    ('5n', D('5e-9'), 'DecimalSI'), ('4u', D('4e-6'), 'DecimalSI'), ('3m', D('3e-3'), 'DecimalSI'),
    ('9', D(9), 'DecimalSI'), ('8k', D(8000), 'DecimalSI'), ('50k', D(50000), 'DecimalSI'),
    ('7M', D(7 * 10**6), 'DecimalSI'), ('6G', D(6 * 10**9), 'DecimalSI'), ('5T', D(5 * 10**12), 'DecimalSI'),
    ('40T', D(4 * 10**13), 'DecimalSI'), ('300T', D(3 * 10**14), 'DecimalSI'), ('2P', D(2 * 10**15), 'DecimalSI'),
    ('1E', D(10**18), 'DecimalSI'),
    ('1E-3', D('1e-3'), 'DecimalExponent'), ('1e3', D(1000), 'DecimalExponent'),
    ('1E6', D(10**6), 'DecimalExponent'), ('1e9', D(10**9), 'DecimalExponent'),
    ('1E12', D(10**12), 'DecimalExponent'), ('1e15', D(10**15), 'DecimalExponent'),
    ('1E18', D(10**18), 'DecimalExponent'), ('1e14', D(10**14), 'DecimalExponent'),
    ('1e13', D(10**13), 'DecimalExponent'), ('100.035k', D(100035), 'DecimalSI'),
    ('0.001', D('0.001'), 'DecimalSI'), ('0.0005k', D('0.5'), 'DecimalSI'), ('0.005', D('0.005'), 'DecimalSI'),
    ('0.05', D('0.05'), 'DecimalSI'), ('0.5', D('0.5'), 'DecimalSI'), ('0.00050k', D('0.5'), 'DecimalSI'),
    ('0.00500', D('0.005'), 'DecimalSI'), ('0.05000', D('0.05'), 'DecimalSI'), ('0.50000', D('0.5'), 'DecimalSI'),
    ('0.5e0', D('0.5'), 'DecimalExponent'), ('0.5e-1', D('0.05'), 'DecimalExponent'),
    ('0.5e-2', D('0.005'), 'DecimalExponent'), ('10.035M', D(10035000), 'DecimalSI'),
    ('1.2e3', D(1200), 'DecimalExponent'), ('1.3E+6', D(1300000), 'DecimalExponent'),
    ('1.40e9', D(1400000000), 'DecimalExponent'), ('1.53E12', D(1530000000000), 'DecimalExponent'),
    ('1.6e15', D(16 * 10**14), 'DecimalExponent'), ('1.7E18', D(17 * 10**17), 'DecimalExponent'),
    ('9.01', D('9.01'), 'DecimalSI'), ('8.1k', D(8100), 'DecimalSI'), ('7.123456M', D(7123456), 'DecimalSI'),
    ('6.987654321G', D(6987654321), 'DecimalSI'), ('5.444T', D(5444 * 10**9), 'DecimalSI'),
    ('40.1T', D(401 * 10**11), 'DecimalSI'), ('300.2T', D(3002 * 10**11), 'DecimalSI'),
    ('2.5P', D(25 * 10**14), 'DecimalSI'), ('1.01E', D(101 * 10**16), 'DecimalSI'),
    # Things that saturate or round.
    ('3.001n', D('4e-9'), 'DecimalSI'), ('1.1E-9', D('2e-9'), 'DecimalExponent'),
    ('0.0000000001', D('1e-9'), 'DecimalSI'), ('0.0000000005', D('1e-9'), 'DecimalSI'),
    ('0.00000000050', D('1e-9'), 'DecimalSI'), ('0.5e-9', D('1e-9'), 'DecimalExponent'),
    ('0.9n', D('1e-9'), 'DecimalSI'), ('0.00000012345', D('124e-9'), 'DecimalSI'),
    ('0.00000012354', D('124e-9'), 'DecimalSI'), ('9Ei', D(MAX), 'BinarySI'),
    ('9223372036854775807Ki', D(MAX), 'BinarySI'), ('12E', D(12 * 10**18), 'DecimalSI'),
    # Fractional binary values.
    ('100.035Ki', D('102435.84'), 'BinarySI'), ('0.5Mi', D(MI // 2), 'BinarySI'),
    ('0.05Gi', D('53687091.2'), 'BinarySI'), ('0.025Ti', D('27487790694.4'), 'BinarySI'),
    # "Things written by trolls".
    ('0.000000000001Ki', D('2e-9'), 'DecimalSI'), ('.001', D('0.001'), 'DecimalSI'),
    ('.0001k', D('0.1'), 'DecimalSI'), ('1.', D(1), 'DecimalSI'), ('1.G', D(10**9), 'DecimalSI'),
]

INVALID = ['1.1.M', '1+1.0M', '0.1mi', '0.1am', 'aoeu', '.5i', '1i', '-3.01i', '-3.01e-', ' 1', '1 ', '']


@pytest.mark.parametrize('text,value,fmt', PARSE_TABLE)
def test_parse_matches_apimachinery(text, value, fmt):
    parsed = q.parse(text)
    assert parsed.value == value
    assert parsed.format == fmt


@pytest.mark.parametrize('text,value,fmt', PARSE_TABLE)
def test_signed_forms_parse_to_the_signed_value(text, value, fmt):
    # TestQuantityParse: "-" + input is the negation and "+" + input the same value, same format.
    assert q.parse('-' + text).value == -value
    assert q.parse('-' + text).format == fmt
    assert q.parse('+' + text).value == value


# (input, value, String()) around the int64 limits, from TestParseQuantity.
LIMITS_TABLE = [
    ('-999999999999999999', '-999999999999999999', '-999999999999999999'),
    ('999999999999999999', '999999999999999999', '999999999999999999'),
    ('-999999999999999999.0', '-999999999999999999', '-999999999999999999'),
    ('999999999999999999.0', '999999999999999999', '999999999999999999'),
    ('-999999999999999999.1', '-999999999999999999.1', '-999999999999999999100m'),
    ('999999999999999999.1', '999999999999999999.1', '999999999999999999100m'),
    ('-9999999999999999999', '-9999999999999999999', '-9999999999999999999'),
    ('9999999999999999999', '9999999999999999999', '9999999999999999999'),
    ('-1E', '-1000000000000000000', '-1E'),
    ('1E', '1000000000000000000', '1E'),
    ('-1000000000000000000', '-1000000000000000000', '-1E'),
    ('1000000000000000000', '1000000000000000000', '1E'),
    ('-9999999999999999999.0', '-9999999999999999999', '-9999999999999999999'),
    ('9999999999999999999.0', '9999999999999999999', '9999999999999999999'),
    ('-1.0E', '-1000000000000000000', '-1E'),
    ('1.0E', '1000000000000000000', '1E'),
    ('-1000000000000000000.0', '-1000000000000000000', '-1E'),
    ('1000000000000000000.0', '1000000000000000000', '1E'),
    ('-9999999999999999999000m', '-9999999999999999999', '-9999999999999999999'),
    ('9999999999999999999000m', '9999999999999999999', '9999999999999999999'),
    ('-9999999999999999999.1', '-9999999999999999999.1', '-9999999999999999999100m'),
    ('9999999999999999999.1', '9999999999999999999.1', '9999999999999999999100m'),
    ('-1.0000000000000000001E', '-1000000000000000000.1', '-1000000000000000000100m'),
    ('1.0000000000000000001E', '1000000000000000000.1', '1000000000000000000100m'),
    ('-1000000000000000000.1', '-1000000000000000000.1', '-1000000000000000000100m'),
    ('1000000000000000000.1', '1000000000000000000.1', '1000000000000000000100m'),
    ('-1.000000000000000001E', '-1000000000000000001', '-1000000000000000001'),
    ('1.000000000000000001E', '1000000000000000001', '1000000000000000001'),
    ('-1000000000000000001', '-1000000000000000001', '-1000000000000000001'),
    ('1000000000000000001', '1000000000000000001', '1000000000000000001'),
    ('-10E', '-10000000000000000000', '-10E'),
    ('10E', '10000000000000000000', '10E'),
    ('-10000000000000000000', '-10000000000000000000', '-10E'),
    ('10000000000000000000', '10000000000000000000', '10E'),
    ('-10.0E', '-10000000000000000000', '-10E'),
    ('10.0E', '10000000000000000000', '10E'),
    ('-10000000000000000000.0', '-10000000000000000000', '-10E'),
    ('10000000000000000000.0', '10000000000000000000', '10E'),
    ('-10000000000000000000000m', '-10000000000000000000', '-10E'),
    ('10000000000000000000000m', '10000000000000000000', '10E'),
    ('-10.0000000000000000001E', '-10000000000000000000.1', '-10000000000000000000100m'),
    ('10.0000000000000000001E', '10000000000000000000.1', '10000000000000000000100m'),
    ('-10000000000000000000.1', '-10000000000000000000.1', '-10000000000000000000100m'),
    ('10000000000000000000.1', '10000000000000000000.1', '10000000000000000000100m'),
    ('-10.000000000000000001E', '-10000000000000000001', '-10000000000000000001'),
    ('10.000000000000000001E', '10000000000000000001', '10000000000000000001'),
    ('-10000000000000000001', '-10000000000000000001', '-10000000000000000001'),
    ('10000000000000000001', '10000000000000000001', '10000000000000000001'),
    ('-9223372036854775809', '-9223372036854775809', '-9223372036854775809'),
    ('9223372036854775806', '9223372036854775806', '9223372036854775806'),
    ('-9223372036854775809.0', '-9223372036854775809', '-9223372036854775809'),
    ('9223372036854775806.0', '9223372036854775806', '9223372036854775806'),
    ('-9223372036854775809000m', '-9223372036854775809', '-9223372036854775809'),
    ('9223372036854775806000m', '9223372036854775806', '9223372036854775806'),
    ('-9223372036854775809.1', '-9223372036854775809.1', '-9223372036854775809100m'),
    ('9223372036854775806.1', '9223372036854775806.1', '9223372036854775806100m'),
    ('-9223372036854775808', '-9223372036854775808', '-9223372036854775808'),
    ('9223372036854775807', '9223372036854775807', '9223372036854775807'),
    ('-9223372036854775808.0', '-9223372036854775808', '-9223372036854775808'),
    ('9223372036854775807.0', '9223372036854775807', '9223372036854775807'),
    ('-9223372036854775808000m', '-9223372036854775808', '-9223372036854775808'),
    ('9223372036854775807000m', '9223372036854775807', '9223372036854775807'),
    ('-9223372036854775808.1', '-9223372036854775808.1', '-9223372036854775808100m'),
    ('9223372036854775807.1', '9223372036854775807.1', '9223372036854775807100m'),
    ('-9223372036854775807', '-9223372036854775807', '-9223372036854775807'),
    ('9223372036854775808', '9223372036854775808', '9223372036854775808'),
    ('-9223372036854775807.0', '-9223372036854775807', '-9223372036854775807'),
    ('9223372036854775808.0', '9223372036854775808', '9223372036854775808'),
    ('-9223372036854775807000m', '-9223372036854775807', '-9223372036854775807'),
    ('9223372036854775808000m', '9223372036854775808', '9223372036854775808'),
    ('-9223372036854775807.1', '-9223372036854775807.1', '-9223372036854775807100m'),
    ('9223372036854775808.1', '9223372036854775808.1', '9223372036854775808100m'),
]


@pytest.mark.parametrize('text,value,string', LIMITS_TABLE)
def test_values_and_strings_around_int64_limits(text, value, string):
    assert q.parse_quantity(text) == D(value)
    assert q.quantity_string(text) == string


@pytest.mark.parametrize('text', INVALID)
def test_invalid_quantities_are_rejected(text):
    with pytest.raises(ValueError):
        q.parse_quantity(text)


@pytest.mark.parametrize('text', [None, 5, 1.5])
def test_non_strings_are_rejected(text):
    with pytest.raises(ValueError):
        q.parse_quantity(text)


# (expected canonical, an alternate spelling that canonicalises to it) from TestQuantityString.
STRING_TABLE = [
    ('1Gi', '1024Mi'), ('300Mi', '307200Ki'), ('6Ki', None), ('1001Gi', '1025024Mi'), ('1Ti', '1024Gi'),
    ('1G', '1000M'), ('1G', '0.001T'), ('1m', '1000u'), ('80m', None), ('1080m', '1.08'),
    ('1080m', '1080000000n'), ('300M', None), ('1T', None), ('1234567M', None), ('3k', None),
    ('1025', None), ('0', None), ('1e9', '.001e12'), ('1e-3', '0.001e0'), ('1e-9', '1000e-12'),
    ('80e-3', None), ('300e6', None), ('1e12', None), ('1e3', None), ('3e3', None), ('0', '00'),
    ('1n', None), ('80n', None), ('1080n', None), ('1u', None), ('80u', None), ('1080u', None),
]


@pytest.mark.parametrize('canonical,alternate', STRING_TABLE)
def test_string_is_canonical(canonical, alternate):
    assert q.quantity_string(canonical) == canonical
    if alternate is not None:
        assert q.quantity_string(alternate) == canonical


@pytest.mark.parametrize('text,expected', [
    ('1Ki', '1Ki'), ('1Mi', '1Mi'), ('1Gi', '1Gi'), ('1024Mi', '1Gi'), ('1000M', '1G'),
    ('.001Ki', '1024m'), ('.000001Ki', '1024u'), ('.000000001Ki', '1024n'), ('.000000000001Ki', '2n'),
])
def test_parse_emit(text, expected):
    # TestQuantityParseEmit, including the negated forms.
    assert q.quantity_string(text) == expected
    assert q.quantity_string('-' + text) == '-' + expected


@pytest.mark.parametrize('text,scale,expected', [
    ('9.01', -3, 9010), ('9.01', -2, 901), ('9.01', -1, 91), ('9.01', 0, 10), ('9.01', 1, 1), ('9.01', 2, 1),
    ('-9.01', -3, -9010), ('-9.01', -2, -901), ('-9.01', -1, -91), ('-9.01', 0, -10), ('-9.01', 1, -1),
])
def test_scaled_values_round_away_from_zero(text, scale, expected):
    # TestQuantityRoundUp: 9.01 rounded to scale 0 is 10, -9.01 is -10.
    assert q.scaled_value(q.parse_quantity(text), scale) == expected


@pytest.mark.parametrize('text,value,milli', [
    ('1', 1, 1000), ('100m', 1, 100), ('1.5', 2, 1500), ('1n', 1, 1), ('1Gi', GI, GI * 1000), ('0', 0, 0),
])
def test_value_and_milli_value_round_up(text, value, milli):
    parsed = q.parse_quantity(text)
    assert q.quantity_value(parsed) == value
    assert q.milli_value(parsed) == milli


def test_odd_but_accepted_forms_mean_zero():
    # parseQuantityString returns "0" for a bare sign, a bare point, or a bare suffix.
    for text in ('-', '+', '.', 'Mi', 'k', 'e3'):
        assert q.parse_quantity(text) == 0
    # ... but the slow path needs a digit: a sub-nano scale with no digit is rejected.
    with pytest.raises(ValueError):
        q.parse_quantity('e-10')


@pytest.mark.parametrize('value,expected', [(0, '0'), (1024, '1Ki'), (978321408, '933Mi'), (GI, '1Gi'),
                                            (1536 * MI, '1536Mi'), (1000, '1k'), (1025, '1025')])
def test_format_memory(value, expected):
    assert q.format_memory(value) == expected


@pytest.mark.parametrize('millicores,expected', [(0, '0'), (80, '80m'), (1000, '1'), (1500, '1500m'),
                                                 (2000, '2'), (100000, '100')])
def test_format_cpu(millicores, expected):
    assert q.format_cpu(millicores) == expected


binary_suffix = st.sampled_from(['', 'Ki', 'Mi', 'Gi', 'Ti', 'm', 'k', 'M', 'G', 'n', 'u'])


@given(st.integers(min_value=0, max_value=10**12 - 1), binary_suffix)
def test_integer_quantities_round_trip_exactly(number, suffix):
    # Kept below 1e21 (999999999999G at most): apimachinery has no decimal suffix above E and prints such
    # values without one, so they do not round-trip there either (test_decimal_si_above_exa_prints_bare).
    text = '%d%s' % (number, suffix)
    value = q.parse_quantity(text)
    fmt = q.parse(text).format
    assert q.parse_quantity(q.canonical_string(value, fmt)) == value


@given(st.integers(min_value=0, max_value=2**40))
def test_memory_formatting_is_exact(byte_count):
    assert q.parse_quantity(q.format_memory(byte_count)) == byte_count


@given(st.integers(min_value=0, max_value=10**9))
def test_cpu_formatting_is_exact(millicores):
    assert q.milli_value(q.parse_quantity(q.format_cpu(millicores))) == millicores


@given(st.decimals(min_value=-10**6, max_value=10**6, places=12, allow_nan=False, allow_infinity=False))
def test_values_are_multiples_of_a_nanounit_and_rounded_away_from_zero(number):
    text = format(number, 'f')
    value = q.parse_quantity(text)
    assert value == value.quantize(D('1e-9'), rounding=decimal.ROUND_UP)
    assert abs(value) >= abs(number)
    assert abs(value - number) < D('1e-9')


def test_decimal_si_above_exa_prints_bare():
    # suffix.go constructBytes(DecimalSI) has no suffix for 10^21 and CanonicalizeBytes ignores its ok flag.
    value = q.parse_quantity('1000000000000G')
    assert value == 10 ** 21
    assert q.canonical_string(value, q.parse('1000000000000G').format) == '1'


# Issue 35: bounded before any arithmetic. 1e999999 (a form apimachinery accepts) took over two minutes;
# 1e999999999 and a 4,001-digit number raised decimal.InvalidOperation/Overflow, outside every caller's except.
@pytest.mark.parametrize('text', ['1e999999', '1e999999999', '1' * 4001, '-1' + '0' * 4000, '1E2147483647',
                                  '0.' + '1' * 100000 + 'e100000'])
def test_values_no_kubelet_field_holds_are_refused_fast_with_the_collections_error(text):
    with within(1):
        with pytest.raises(ParseError, match='out of range'):
            q.parse_quantity(text)


@pytest.mark.parametrize('text, value', [
    ('1' * 4001 + 'Ki', D((1 << 63) - 1)),  # binary values are capped at 2^63-1 whatever their digits
    ('-' + '9' * 5000 + '.5Ei', D(-((1 << 63) - 1))),
    ('1e-999999', D('1e-9')),  # anything above zero rounds up to 1n
    ('0.' + '0' * 100000 + '1', D('1e-9')),
    ('1.' + '0' * 100000 + '1', D('1.000000001')),  # a digit far below 1n still rounds up
    ('1.' + '0' * 100000 + 'Ki', D(1024)),
    ('1e4294967296', D(1)),  # Go keeps int32(exponent): it wraps
    ('1e' + '0' * 5000 + '3', D(1000)),  # leading zeros in the exponent, as strconv.ParseInt takes them
])
def test_huge_inputs_keep_apimachinerys_answer_fast(text, value):
    with within(1):
        assert q.parse_quantity(text) == value
