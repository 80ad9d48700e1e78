"""Eviction thresholds, with cases from pkg/kubelet/eviction/helpers_test.go (TestParseThresholdConfig)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction as ev
from ansible_collections.nodealloc.kubelet.tests.unit.utils.time_limit import within

GI = 1 << 30


@pytest.mark.parametrize('signal,value', [
    ('memory.available', '150Mi'), ('nodefs.available', '10%'), ('imagefs.inodesFree', '5%'),
    ('allocatableMemory.available', '150Mi'), ('pid.available', '1k'), ('containerfs.available', '5%'),
])
def test_valid_thresholds(signal, value):
    assert ev.parse_threshold(signal, value) is not None


@pytest.mark.parametrize('value', ['0%', '100%'])
def test_zero_and_full_percent_are_ignored(value):
    assert ev.parse_threshold('memory.available', value) is None


@pytest.mark.parametrize('signal,value,message', [
    ('mem.available', '150Mi', 'unsupported eviction signal'),
    ('memory.available', '-150Mi', 'must be positive'),
    ('memory.available', '0', 'must be positive'),
    ('memory.available', '-15%', 'must be >= 0%'),
    ('memory.available', '115%', 'must be <= 100%'),
    ('memory.available', 'abc%', 'invalid percentage'),
    ('memory.available', 'lots', 'regular expression'),
])
def test_invalid_thresholds(signal, value, message):
    with pytest.raises(ValueError, match=message):
        ev.parse_threshold(signal, value)


def test_quantity_threshold_reserves_its_value():
    assert ev.hard_eviction_memory_bytes({'memory.available': '100Mi'}, 8 * GI) == 100 << 20


def test_percentage_threshold_is_float32_arithmetic_on_capacity():
    # GetThresholdQuantity: int64(float64(capacity) * float64(float32(10)/100)); float32(0.1) is not 0.1.
    capacity = 10 * GI
    expected = int(capacity * 0.10000000149011612)
    assert ev.hard_eviction_memory_bytes({'memory.available': '10%'}, capacity) == expected
    assert expected != capacity // 10


def test_no_memory_threshold_reserves_nothing():
    assert ev.hard_eviction_memory_bytes({'nodefs.available': '10%'}, GI) == 0
    assert ev.hard_eviction_memory_bytes({}, GI) == 0


def test_the_default_memory_threshold_in_bytes_is_the_one_the_kubelet_parses():
    # The sampler's metrics use the byte form without parsing; it must be what the kubelet makes of the map's 100Mi.
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
    assert ev.hard_eviction_memory_bytes(_defaults.EVICTION_HARD, 8 << 30) \
        == _defaults.EVICTION_HARD_MEMORY_AVAILABLE_BYTES == 100 * 1024 * 1024


# Issue 35: Python's float() is wider than Go's ParseFloat, which the kubelet uses: these passed here and fail there.
@pytest.mark.parametrize('value', ['-nan%', 'nan%', '5_0%', ' 5%', '5 %', '\u0665%', '\uff15%', '1e39%', '1e400%',
                                   'inf%', '-Infinity%', '0x_1p-2%'])
def test_percentages_the_kubelet_refuses_are_refused_with_the_collections_error(value):
    with pytest.raises(ParseError):
        ev.parse_threshold('memory.available', value)


def test_a_long_run_of_digits_is_refused_fast():
    with within(1):
        with pytest.raises(ParseError):
            ev.parse_percentage('1' * 100000 + 'x%')


@pytest.mark.parametrize('value, fraction', [('5.%', 0.05), ('.5%', 0.005), ('1e1%', 0.1), ('0x1p-2%', 0.0025)])
def test_forms_parsefloat_takes_are_taken(value, fraction):
    assert ev.parse_threshold('memory.available', value) == ('percentage', pytest.approx(fraction, rel=1e-6))


@pytest.mark.parametrize('hard,signal,expected', [
    ({'nodefs.available': '1Gi'}, 'nodefs.available', GI),
    ({'imagefs.available': '50%'}, 'imagefs.available', 5 * GI),
    ({'nodefs.available': '0%'}, 'nodefs.available', 0),  # "0%" is no threshold
    ({'memory.available': '1Gi'}, 'nodefs.available', 0),
])
def test_hard_eviction_bytes_of_any_signal(hard, signal, expected):
    assert ev.hard_eviction_bytes(hard, signal, 10 * GI) == expected
