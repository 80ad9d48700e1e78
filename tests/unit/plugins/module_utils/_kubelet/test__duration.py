"""Go duration parsing, with cases from Go's src/time/time_test.go (parseDurationTests)."""

from __future__ import annotations

import decimal

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._duration import parse_duration, parse_window

D = decimal.Decimal


@pytest.mark.parametrize('text,seconds', [
    ('0', D(0)), ('5s', D(5)), ('30s', D(30)), ('1478s', D(1478)), ('-5s', D(-5)), ('+5s', D(5)),
    ('-0', D(0)), ('+0', D(0)), ('5.0s', D(5)), ('5.6s', D('5.6')), ('5.s', D(5)), ('.5s', D('0.5')),
    ('1.004s', D('1.004')), ('100.00100s', D('100.001')), ('10ns', D('1e-8')), ('11us', D('1.1e-5')),
    ('12\u00b5s', D('1.2e-5')), ('12\u03bcs', D('1.2e-5')), ('13ms', D('0.013')), ('15m', D(900)),
    ('16h', D(57600)), ('3h30m', D(12600)), ('10.5s4m', D('250.5')), ('-2m3.4s', D('-123.4')),
    ('1h2m3s4ms5us6ns', D('3723.004005006')), ('39h9m14.425s', D('140954.425')),
    ('52763797000ns', D('52.763797')), ('9223372036854775807ns', D('9223372036.854775807')),
    ('-9223372036854775808ns', D('-9223372036.854775808')),
])
def test_valid_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize('text', ['', '3', '-', 's', '.', '-.', '.s', '+.s', '1d', '1.5', '9223372036854775808ns',
                                  '3000000h', ' 1s', '1s '])
def test_invalid_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


# Issue 35: \d took other scripts' digits, and a 400-digit day count was an infinite window.
@pytest.mark.parametrize('text', ['\u0663d', '9' * 400 + 'd', '1e5d', '-1h', 'h', '1x'])
def test_windows_out_of_form_or_range_fail_with_the_collections_error(text):
    with pytest.raises(ParseError):
        parse_window(text)
