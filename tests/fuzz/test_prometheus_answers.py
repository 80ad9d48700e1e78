"""What a Prometheus server sends, of any shape (issue 44): a reading or a reason, never an exception, never a secret."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (_prometheus_answer, _prometheus_class,
                                                                                _prometheus_history, _prometheus_http)
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import hostile_text, json_values

NOW = 1700000000
STEP = 60

# Answers near the documented shape, each part replaced by anything at times: most examples reach deep checks.
points = st.lists(st.one_of(st.tuples(st.one_of(st.integers(NOW - 7200, NOW + 60), st.floats(), json_values),
                                      st.one_of(st.sampled_from(['1', '5e8', 'NaN', '+Inf', '-1', '1e30', '110', '2.5', '70000']), json_values))
                            .map(list), json_values), max_size=8)
series = st.fixed_dictionaries({'metric': st.one_of(st.dictionaries(hostile_text, hostile_text, max_size=3), json_values),
                                'values': st.one_of(points, json_values),
                                'value': st.one_of(points.map(lambda p: p[0] if p else None), json_values)})
answers = st.one_of(json_values, st.fixed_dictionaries({
    'status': st.one_of(st.sampled_from(['success', 'error']), json_values),
    'data': st.one_of(st.fixed_dictionaries({'resultType': st.sampled_from(['matrix', 'vector', 'scalar']),
                                             'result': st.one_of(st.lists(series, max_size=3), json_values)}),
                      json_values),
    'warnings': st.one_of(st.lists(hostile_text, max_size=2), json_values),
    'errorType': hostile_text, 'error': hostile_text}))


@given(answers)
@cpu_deadline
def test_a_range_answer_gives_samples_or_a_reason(answer):
    history = _prometheus_history.parse([answer], STEP, 7200, 'n1', spans=[(NOW - 7200, NOW)])
    assert history['reason'] is None or history['samples'] == []
    assert all(isinstance(t, float) and isinstance(v, int) and v >= 0 for t, v in history['samples'])
    for text in [history['reason'] or ''] + history['problems']:
        assert '\n' not in text and '\r' not in text


@given(answers)
@cpu_deadline
def test_a_pods_answer_gives_counts_or_a_reason(answer):
    # Issue 45: a series of pods gives whole numbers no node exceeds, or a reason.
    history = _prometheus_history.parse([answer], STEP, 7200, 'n1', spans=[(NOW - 7200, NOW)],
                                        kind=_prometheus_history.PODS)
    assert history['reason'] is None or history['samples'] == []
    assert all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _prometheus_history.MAX_PODS for _t, v in history['samples'])
    for text in [history['reason'] or ''] + history['problems']:
        assert '\n' not in text and '\r' not in text


@given(answers)
@cpu_deadline
def test_an_instant_answer_gives_values_or_a_value_error(answer):
    try:
        read = _prometheus_class.vector(answer)
    except _prometheus_answer.AnswerError:
        return
    assert all(isinstance(labels, dict) and isinstance(value, float) for labels, value in read)


_NOT_MARKER = st.characters(blacklist_characters='\uffff')


@given(st.text(_NOT_MARKER, min_size=1, max_size=30), st.text(_NOT_MARKER, max_size=30))
@cpu_deadline
def test_no_secret_survives_redaction(secret, around):
    settings = {'bearer_token': secret, 'password': '', 'username': ''}
    text = _prometheus_http.redact(around + secret + around + 'Bearer %s' % secret, settings)
    # The marker stands for a cut secret: with it as one character that no secret holds, none is left.
    assert secret not in text.replace('<hidden>', '\uffff')
