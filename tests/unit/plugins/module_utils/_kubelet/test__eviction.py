"""Eviction thresholds, with cases from pkg/kubelet/eviction/helpers_test.go (TestParseThresholdConfig)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction as ev

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
