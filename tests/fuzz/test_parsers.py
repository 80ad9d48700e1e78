"""Every parser of node- or user-supplied text: an answer in range, or the collection's own error, fast."""

from __future__ import annotations

import decimal
import json
import math
import unicodedata

from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError, ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _config_file, _config_rules, _duration, _eviction, _quantity)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store, _sample_once
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import deep, hostile_text, json_values, quantity_text

INT64_MAX = (1 << 63) - 1
NOW = 1700000000.0


@given(quantity_text)
@cpu_deadline
def test_quantity(text):
    try:
        parsed = _quantity.parse(text)
    except NodeallocError:
        return
    value = parsed.value
    assert value.is_finite() and abs(value) < decimal.Decimal('1e60')
    assert value == value.quantize(decimal.Decimal('1e-9'), context=decimal.Context(prec=200)), value
    if parsed.format == _quantity.BINARY_SI:
        assert abs(value) <= INT64_MAX
    # What the callers then do with it: every one of these stays an answer.
    _quantity.quantity_value(value), _quantity.milli_value(value)
    _quantity.canonical_string(value, parsed.format)
    _quantity.quantity_string(text)


@given(st.one_of(st.text(max_size=40), st.lists(st.sampled_from(
    ['1', '9' * 30, '.', '5', 'h', 'm', 's', 'ms', 'us', '\u00b5s', 'ns', 'd', '-', '+', '0', ' ', '_', 'e5']),
    max_size=12).map(''.join)))
@cpu_deadline
def test_go_duration_and_window(text):
    for parse in (_duration.parse_duration, _duration.parse_window):
        try:
            seconds = parse(text)
        except NodeallocError:
            continue
        assert math.isfinite(float(seconds)) and abs(float(seconds)) <= INT64_MAX / 1e9 + 1


@given(st.sampled_from(_eviction.KNOWN_SIGNALS), st.one_of(
    st.text(max_size=20), quantity_text,
    st.tuples(st.one_of(st.text(max_size=12), st.sampled_from(['nan', '-nan', 'inf', '5_0', '0x1p-2', '1e39', '٥', ' 5'])),
              st.just('%')).map(''.join)))
@cpu_deadline
def test_eviction_threshold(signal, value):
    try:
        parsed = _eviction.parse_threshold(signal, value)
    except NodeallocError:
        return
    if parsed is None:
        return
    kind, amount = parsed
    if kind == 'percentage':
        assert 0 <= amount <= 1
        assert 0 <= _eviction.threshold_bytes(parsed, 8 << 30) <= 8 << 30
    else:
        assert amount > 0


@given(st.one_of(
    json_values.map(json.dumps),
    json_values.map(lambda v: json.dumps({'apiVersion': _config_file.API_VERSION, 'kind': _config_file.KIND,
                                          'kubeReserved': v, 'evictionHard': v})),
    st.text(max_size=200),
    st.integers(1, 3000).map(lambda n: deep('[', ']', n)),
    st.integers(1, 3000).map(lambda n: 'a: ' + deep('{b: ', '}', n)),
    st.integers(1, 3000).map(lambda n: '- ' * n),
    st.integers(1, 3000).map(lambda n: '{"a":' * n + '1' + '}' * n),
))
@cpu_deadline
def test_kubelet_config_document(text):
    try:
        data, _fmt = _config_file.parse_document(text, '/etc/kubernetes/kubelet.conf')
        _config_file.check_kind(data, '/etc/kubernetes/kubelet.conf')
        _config_rules.validate(data, 8 << 30, 4000)
    except (NodeallocError, ValidationError):
        return


@given(st.one_of(
    json_values.map(json.dumps),
    st.dictionaries(st.sampled_from(_history_store.FIELDS + _history_store.MEMORY_FIELDS + ('pods',)),
                    st.one_of(st.integers(-(10 ** 400), 10 ** 400), st.floats(), st.text(max_size=5))).map(json.dumps),
    st.integers(1, 3000).map(lambda n: deep('[', ']', n)),
    st.text(max_size=100),
))
@cpu_deadline
def test_history_line(line):
    sample, reason = _history_store.parse_line(line, NOW, 8 << 30, 4000)
    assert (sample is None) != (reason is None)
    if sample is not None:
        for field in _history_store.FIELDS:
            assert 0 <= sample[field] < 1 << 63 and math.isfinite(sample[field])
        # Issue 45: a line's pods, where it has them, are a count no node exceeds.
        pods = sample.get('pods', 0)
        assert isinstance(pods, int) and not isinstance(pods, bool) and 0 <= pods <= _history_store.MAX_PODS


@given(st.one_of(json_values, st.fixed_dictionaries({'version': st.just(_sample_once.STATE_VERSION)}, optional={
    'hours_valid': st.booleans(), 'hours': json_values, 'totals': json_values, 'offset': json_values,
    'inode': json_values, 'rejected': json_values, 'cpu': json_values})).map(json.dumps))
@cpu_deadline
def test_sampler_state_file(tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / 'fuzz-state.json'  # one file for every example: no directory per example
    path.write_text(text)
    state, problem = _sample_once.load_state(str(path))
    assert isinstance(state, dict) and state.get('version') == _sample_once.STATE_VERSION
    assert problem is None or (isinstance(problem, str) and not path.exists())


OPTION_VALUES = st.one_of(json_values, hostile_text, st.floats(), st.sampled_from(
    ['nan', 'inf', '-inf', 'Infinity', '1e999', '\n1min', '1min\x0b', '\uff12\uff10%', '/history.jsonl', '/', ' /x/y']))


@given(st.sampled_from(sorted(_option_specs.OPTIONS)), OPTION_VALUES)
@cpu_deadline
def test_option_value(name, value):
    reason = _option_specs.problem(name, value)
    assert reason is None or isinstance(reason, str)
    option = _option_specs.OPTIONS[name]
    if reason is None and option['type'] == 'float' and value is not None:
        assert math.isfinite(float(value))
    if reason is None and option['rule'] in _option_forms.RULES and str(value) and \
            option['rule'] not in ('node_path', 'http_url', 'header_value'):
        assert all(32 <= ord(c) < 127 for c in str(value)) and str(value) == str(value).strip()
    if reason is None and option['rule'] == 'header_value':
        # A user name or password may be any text (basic authentication sends it base64-encoded): no control character
        # (C0, DEL or C1), nothing around it.
        assert not any(unicodedata.category(c) == 'Cc' for c in str(value)) and str(value) == str(value).strip()
