"""The documented shape of Prometheus' answers, checked before use (issue 44)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_answer as pa

OK = {'status': 'success', 'data': {'resultType': 'matrix',
                                    'result': [{'metric': {'node': 'n1'}, 'values': [[100, '1'], [160.5, '2']]}]}}


def test_a_documented_range_answer_is_read():
    series, warnings, dropped = pa.matrix(dict(OK, warnings=['partial data']))
    assert series == [({'node': 'n1'}, [(100.0, '1'), (160.5, '2')])] and warnings == ['partial data'] and dropped == 0


def test_points_outside_the_asked_span_are_dropped_and_counted():
    series, _warnings, dropped = pa.matrix(OK, span=(150, 200))
    assert series == [({'node': 'n1'}, [(160.5, '2')])] and dropped == 1


def test_a_documented_instant_answer_is_read():
    answer = {'status': 'success', 'data': {'resultType': 'vector', 'result': [{'metric': {}, 'value': [1, '3']}]}}
    assert pa.vector(answer) == [({}, '3')]


@pytest.mark.parametrize('answer, words', [
    ([], 'a JSON list, not an object'),
    ({'status': 'error', 'errorType': 'bad_data', 'error': 'x\ny'}, 'the query failed: bad_data: x\\ny'),
    ({'status': 'weird'}, 'status is weird'),
    ({'status': 'success', 'data': 5}, 'data is a JSON int'),
    ({'status': 'success', 'data': {'resultType': 'vector', 'result': []}}, 'not a range of values'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': {}}}, 'result is a JSON dict, not a list'),
    ({'status': 'success', 'warnings': [1], 'data': {'resultType': 'matrix', 'result': []}}, 'warnings are not'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [5]}}, 'series 0 is a JSON int'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {'a': 1}, 'values': []}]}},
     'labels are not an object of strings'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': 7}]}},
     "values are a JSON int"),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'histograms': []}]}},
     'native histograms'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': [[1]]}]}},
     'not a [time, "value"] pair'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': [[True, '1']]}]}},
     'time that is not a finite number'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': [[1, 1]]}]}},
     'value that is not a number in a string'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': [[1, '9' * 65]]}]}},
     'value that is not a number in a string'),
])
def test_anything_else_is_an_answer_error_saying_what_and_where(answer, words):
    with pytest.raises(pa.AnswerError) as caught:
        pa.matrix(answer)
    assert words in str(caught.value)


def test_the_caps_on_series_and_points_name_the_figures(monkeypatch):
    monkeypatch.setattr(pa, 'MAX_SERIES_PER_ANSWER', 2)
    many = {'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': []}] * 3}}
    with pytest.raises(pa.AnswerError, match='3 series, more than the 2'):
        pa.matrix(many)
    monkeypatch.setattr(pa, 'MAX_POINTS_PER_ANSWER', 3)
    points = {'status': 'success', 'data': {'resultType': 'matrix',
                                            'result': [{'metric': {}, 'values': [[t, '1'] for t in range(4)]}]}}
    with pytest.raises(pa.AnswerError, match='more than 3 points .* more than the 3 read at most'):
        pa.matrix(points)


def test_quoted_text_is_one_bounded_line():
    assert pa.quoted('a\nb\x1b') == 'a\\nb\\x1b'
    assert pa.quoted('x' * 500) == 'x' * pa.QUOTED_CHARACTERS + ' ...'
