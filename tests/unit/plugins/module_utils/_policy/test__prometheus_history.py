"""_prometheus_history: every way Prometheus' answer can be unusable gives a reason and no samples, never a guess.

The answers are shaped as Prometheus 2.42's /api/v1/query_range gives them (a matrix, values as [time, "string"]);
the real server is in tests/integration/test_prometheus_history.py.
"""

from __future__ import annotations

import io
import json
import ssl
import urllib.error
import urllib.parse

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_history as ph

MIB = 1 << 20
DAY = 86400
STEP = 60
NOW = 28_333_334 * STEP  # on the step grid, as query_range answers are


def matrix(*series):
    return {'status': 'success', 'data': {'resultType': 'matrix', 'result': [
        {'metric': labels, 'values': [[t, str(v)] for t, v in values]} for labels, values in series]}}


def steady(days=3, value=300 * MIB, skip=()):
    start = NOW - days * DAY
    return [(t, value) for t in range(start, NOW + 1, STEP) if t not in skip]


def test_a_full_window_gives_its_samples_and_no_reason():
    history = ph.parse([matrix(({'node': 'n1'}, steady()))], STEP, 3 * DAY, 'n1')
    assert history['reason'] is None and history['problems'] == []
    assert len(history['samples']) == 3 * DAY // STEP + 1 and history['span_seconds'] == 3 * DAY
    assert history['samples'][0] == [NOW - 3 * DAY, 300 * MIB]


@pytest.mark.parametrize('answer, words', [
    ({'status': 'error', 'errorType': 'bad_data', 'error': 'parse error at char 5'}, 'the query failed: bad_data'),
    (matrix(), 'no series for node n1'),
    (matrix(({'node': 'n1', 'instance': 'a'}, steady()), ({'node': 'n1', 'instance': 'b'}, steady())),
     '2 series for node n1'),
    (matrix(({'node': 'n1'}, steady()[:-1] + [(NOW, 'NaN')])), 'NaN, infinite or negative'),
    (matrix(({'node': 'n1'}, steady()[:10] + [(NOW - 3 * DAY + 600, '-5')] + steady()[11:])), 'NaN, infinite or negative'),
    (matrix(({'node': 'n1'}, [(NOW, '+Inf')])), 'NaN, infinite or negative'),
    ({'status': 'success', 'data': {'resultType': 'vector', 'result': []}}, 'not a range of values'),
    ('<html>', 'a JSON str, not an object'),
])
def test_an_unusable_answer_gives_a_reason_and_no_samples(answer, words):
    history = ph.parse([answer], STEP, 3 * DAY, 'n1')
    assert words in history['reason'] and history['samples'] == []


def test_too_many_steps_missing_is_a_reason():
    # A day missing out of three: a third of the window never seen, where a peak may have been.
    missing = set(range(NOW - 2 * DAY, NOW - DAY, STEP))
    history = ph.parse([matrix(({'node': 'n1'}, steady(skip=missing)))], STEP, 3 * DAY, 'n1')
    assert 'too much of the history is missing' in history['reason'] and history['samples'] == []


def test_a_short_gap_and_a_restart_are_named_and_the_history_used():
    # The node rebooted: 20 minutes without a value, then lower non-pod memory (a fresh boot) and the climb back.
    gap = set(range(NOW - DAY, NOW - DAY + 20 * 60, STEP))
    values = [(t, 200 * MIB if t > NOW - DAY else v) for t, v in steady(skip=gap)]
    history = ph.parse([matrix(({'node': 'n1'}, values))], STEP, 3 * DAY, 'n1')
    assert history['reason'] is None and len(history['samples']) == len(values)
    assert any('gaps in the series' in p and 'widest gap 1260 s' in p for p in history['problems'])


def test_fewer_days_than_the_window_is_named_and_the_history_used_as_a_short_one():
    history = ph.parse([matrix(({'node': 'n1'}, steady(days=1)))], STEP, 3 * DAY, 'n1')
    assert history['reason'] is None and history['span_seconds'] == DAY
    assert any('covers 1.0 d of the 3.0 d' in p for p in history['problems'])


def test_chunks_cover_the_window_on_the_step_grid_without_overlap():
    spans = ph.chunks(NOW + 17, 14 * DAY, STEP)
    assert len(spans) == 3  # 20 161 steps, at most 10 000 a request
    assert spans[0][0] == -(-(NOW + 17 - 14 * DAY) // STEP) * STEP and spans[-1][1] == (NOW + 17) // STEP * STEP
    assert all(b[0] == a[1] + STEP for a, b in zip(spans, spans[1:]))
    assert all((end - start) // STEP + 1 <= ph.MAX_POINTS_PER_REQUEST for start, end in spans)


def test_chunked_answers_join_into_one_series():
    values = steady(days=14)
    answers = [matrix(({'node': 'n1'}, [(t, v) for t, v in values if s <= t <= e]))
               for s, e in ph.chunks(NOW, 14 * DAY, STEP)]
    history = ph.parse(answers, STEP, 14 * DAY, 'n1')
    assert history['reason'] is None and len(history['samples']) == len(values)


def test_the_step_query_keeps_the_peak_within_each_step():
    assert ph.step_query('q{node="a"}', 60) == 'max_over_time((q{node="a"})[60s:15s])'


def test_render_escapes_the_node_name_for_a_promql_string():
    assert ph.render('m{node="$node"}', 'a"b\\c') == 'm{node="a\\"b\\\\c"}'


@pytest.mark.parametrize('query, words', [
    ('', 'must be a PromQL query'),
    ('http://prometheus:9090', 'not a URL'),
    ('node_memory_MemTotal_bytes{instance="n1"}', 'must name the node as $node'),
    ('node_memory_MemTotal_bytes{instance=$node}', 'inside a quoted label value'),
    ('sum(node_memory_MemTotal_bytes{node="$node"}', "'(' is not closed"),
    ('node_memory_MemTotal_bytes{node="$node"})', 'without its opening bracket'),
    ('node_memory_MemTotal_bytes{node="$node}', 'string is not closed'),
    ('42 + "$node"', 'names no metric'),
    ('up{node="$node"}; rm -rf /', "has ';'"),
])
def test_a_wrong_query_is_refused_by_the_options_check(query, words):
    assert words in _option_forms.query_problem(query)
    problems = _option_specs.check({'reservations_prometheus_query': query}, 'reservations_')
    assert len(problems) == 1 and words in problems[0]


@pytest.mark.parametrize('query', [_option_forms.DEFAULT_QUERY, _option_forms.PREFERRED_KUBEPODS_QUERY, _option_forms.NODEALLOC_QUERY,
                                   'nodealloc_memory_non_pod_bytes{instance=~"$node(:[0-9]+)?"}'])
def test_the_documented_queries_pass_the_check(query):
    assert _option_forms.query_problem(query) is None


class Answer(io.BytesIO):
    """A response as open_url returns it: a body read in pieces, and its headers."""

    def __init__(self, body, headers=None):
        super().__init__(body)
        self.headers = headers or {}


def opener(*answers):
    """An open_url stand-in giving ``answers`` in turn (an exception is raised), recording each request."""
    calls = []

    def open_url(url, **kwargs):
        calls.append(dict(kwargs, url=url))
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return Answer(answer if isinstance(answer, bytes) else json.dumps(answer).encode())
    open_url.calls = calls
    return open_url


SETTINGS = {'url': 'https://prom.example/', 'query': 'm{node="$node"}', 'node': 'n1', 'window_seconds': 3 * DAY,
            'step_seconds': STEP, 'timeout_seconds': 5, 'validate_certs': True, 'ca_file': '/ca.pem',
            'bearer_token': 'secret', 'username': '', 'password': ''}


def test_fetch_posts_the_step_query_with_the_credentials():
    open_url = opener(matrix(({'node': 'n1'}, steady())))
    history = ph.fetch(open_url, SETTINGS, NOW)
    assert history['reason'] is None and history['query'] == 'm{node="n1"}'
    call = open_url.calls[0]
    assert call['url'] == 'https://prom.example/api/v1/query_range' and call['method'] == 'POST'
    assert call['headers']['Authorization'] == 'Bearer secret' and call['ca_path'] == '/ca.pem'
    assert 'max_over_time' in call['data'] and 'n1' in call['data']


def http_error(status, body):
    return urllib.error.HTTPError('https://prom.example/api/v1/query_range', status, 'x', {}, io.BytesIO(body))


@pytest.mark.parametrize('failure, words', [
    (urllib.error.URLError(ConnectionRefusedError(111, 'Connection refused')), 'cannot reach'),
    (urllib.error.URLError(ssl.SSLCertVerificationError('certificate verify failed')), 'TLS to'),
    (http_error(401, b'Unauthorized'), 'refused the credentials (HTTP 401)'),
    (http_error(403, b'Forbidden'), 'refused the credentials (HTTP 403)'),
    (http_error(400, json.dumps({'status': 'error', 'errorType': 'bad_data', 'error': 'unknown function'}).encode()),
     'the query failed (HTTP 400): bad_data: unknown function'),
    (http_error(502, b'Bad Gateway'), 'HTTP 502'),
    (TimeoutError('timed out'), 'within the timeout'),
    (b'<html>login</html>', 'did not answer JSON'),
])
def test_fetch_turns_every_failure_into_a_reason(failure, words):
    history = ph.fetch(opener(failure), SETTINGS, NOW)
    assert words in history['reason'] and history['samples'] == []


def test_a_value_above_memtotal_is_a_reason():
    history = ph.parse([matrix(({'node': 'n1'}, steady(value=20 << 30)))], STEP, 3 * DAY, 'n1')
    assert 'more than the node has' in ph.not_above(history, 16 << 30)['reason']
    assert ph.not_above(history, 32 << 30) is history


def own(days, value=100 * MIB, cpu=200):
    return [{'t': t, 'non_pod_bytes': value, 'non_pod_millicores': cpu} for t, _value in steady(days=days)]


def test_choose_takes_the_longer_history_and_says_which():
    prometheus = ph.parse([matrix(({'node': 'n1'}, steady(days=3)))], STEP, 3 * DAY, 'n1')
    samples, source = ph.choose(own(1), prometheus, 250)
    assert source == 'prometheus' and samples[0] == {'t': NOW - 3 * DAY, 'non_pod_bytes': 300 * MIB,
                                                     'non_pod_millicores': 250}
    assert ph.choose(own(3), prometheus, 250) == (own(3), 'node')  # as long: the node's own
    assert ph.choose([], None, 250) == ([], 'none')


@pytest.mark.parametrize('answer', [matrix(), {'status': 'error', 'errorType': 'timeout', 'error': 'x'},
                                    matrix(({'node': 'n1'}, [(NOW, 'NaN')]))])
def test_an_unusable_prometheus_history_falls_back_to_the_nodes_own(answer):
    prometheus = ph.parse([answer], STEP, 3 * DAY, 'n1')
    assert ph.choose(own(1), prometheus, 250) == (own(1), 'node')
    assert ph.choose([], prometheus, 250) == ([], 'none')


@pytest.mark.parametrize('node', ['n1"} or vector(1e30) or m{x="', 'Node-1', 'a\nb', '-a', 'x' * 254])
def test_a_node_name_that_is_not_a_kubernetes_name_is_never_put_into_a_query(node):
    open_url = opener(matrix(({'node': 'n1'}, steady())))
    history = ph.fetch(open_url, dict(SETTINGS, node=node), NOW)
    assert 'not a Kubernetes node name' in history['reason'] and open_url.calls == []
    assert '\n' not in history['reason']


# Issue 45: the node's pods from Prometheus, read beside its memory and merged into the history lines.
PODS_SETTINGS = dict(SETTINGS, pods_query=_option_forms.DEFAULT_PODS_QUERY)


def by_query(memory, pods):
    """An open_url stand-in answering the memory query with ``memory`` and the pods query with ``pods``, per request."""
    calls = []

    def open_url(url, **kwargs):
        calls.append(dict(kwargs, url=url))
        answer = pods if 'kubelet_running_pods' in kwargs['data'] else memory
        if isinstance(answer, Exception):
            raise answer
        return Answer(answer if isinstance(answer, bytes) else json.dumps(answer).encode())
    open_url.calls = calls
    return open_url


def packing(days=3):
    """Pods rising by one an hour from 10, as an autoscaler packs a node."""
    return [(t, 10 + (t - (NOW - days * DAY)) // 3600) for t, _value in steady(days=days)]


def test_the_pods_query_is_read_at_the_same_steps_and_merged_into_the_history_lines():
    open_url = by_query(matrix(({'node': 'n1'}, steady())), matrix(({'node': 'n1'}, packing())))
    history = ph.fetch(open_url, PODS_SETTINGS, NOW)
    assert history['reason'] is None and history['problems'] == []
    assert history['pods']['query'] == 'kubelet_running_pods{job="kubelet", metrics_path="/metrics", node="n1"}'
    asked = urllib.parse.parse_qs(open_url.calls[1]['data'])['query']
    assert len(open_url.calls) == 2 and asked == ['max_over_time((%s)[60s:15s])' % history['pods']['query']]
    samples, source = ph.choose(own(1), json.loads(json.dumps(history)), 250)  # as the module receives it
    assert source == 'prometheus' and len(samples) == 3 * DAY // STEP + 1
    assert samples[0] == {'t': NOW - 3 * DAY, 'non_pod_bytes': 300 * MIB, 'non_pod_millicores': 250, 'pods': 10}
    assert samples[-1]['pods'] == 10 + 72


@pytest.mark.parametrize('pods, words', [
    (matrix(), 'no series for node n1'),
    (matrix(({'node': 'n1', 'instance': 'a'}, packing()), ({'node': 'n1', 'instance': 'b'}, packing())),
     '2 series for node n1'),
    (matrix(({'node': 'n1'}, packing()[:-1] + [(NOW, '12.5')])), 'fractional or above 65536'),
    (matrix(({'node': 'n1'}, packing()[:-1] + [(NOW, '70000')])), 'fractional or above 65536'),
    (matrix(({'node': 'n1'}, packing()[:-1] + [(NOW, '-1')])), 'negative'),
    (matrix(({'node': 'n1'}, packing()[:-1] + [(NOW, 'NaN')])), 'NaN'),
    (matrix(({'node': 'n1'}, packing()[:-1] + [(NOW, '1e400')])), 'infinite'),
    (matrix(({'node': 'n1'}, packing()[::2])), 'too much of the history is missing'),
    ({'status': 'error', 'errorType': 'bad_data', 'error': 'unknown metric'}, 'bad_data: unknown metric'),
    ({'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'histograms': []}]}},
     'native histograms'),
    (http_error(403, b'Forbidden'), 'refused the credentials'),
])
def test_pods_that_cannot_be_used_are_named_and_the_memory_history_is_used_without_them(pods, words):
    history = ph.fetch(by_query(matrix(({'node': 'n1'}, steady())), pods), PODS_SETTINGS, NOW)
    assert history['reason'] is None and history['pods'] is None
    assert any(p.startswith('pods (kubelet_running_pods') and 'not read' in p and words in p
               for p in history['problems']), history['problems']
    samples, source = ph.choose(own(1), history, 250)
    assert source == 'prometheus' and all('pods' not in line for line in samples)


def test_no_pods_query_asks_for_no_pods_and_an_unusable_memory_history_asks_for_none():
    open_url = by_query(matrix(({'node': 'n1'}, steady())), matrix(({'node': 'n1'}, packing())))
    history = ph.fetch(open_url, dict(PODS_SETTINGS, pods_query=''), NOW)
    assert 'pods' not in history and len(open_url.calls) == 1
    open_url = by_query(matrix(), matrix(({'node': 'n1'}, packing())))
    history = ph.fetch(open_url, PODS_SETTINGS, NOW)
    assert 'no series' in history['reason'] and len(open_url.calls) == 1


def test_a_gap_in_the_pods_leaves_those_lines_without_pods():
    gap = set(range(NOW - DAY, NOW - DAY + 20 * 60, STEP))
    pods = [(t, n) for t, n in packing() if t not in gap]
    history = ph.fetch(by_query(matrix(({'node': 'n1'}, steady())), matrix(({'node': 'n1'}, pods))), PODS_SETTINGS, NOW)
    assert any(p.startswith('pods (') and 'gaps in the series' in p for p in history['problems'])
    samples, _source = ph.choose([], history, 250)
    assert sum(1 for line in samples if 'pods' not in line) == len(gap)


@pytest.mark.parametrize('bad', [-1, 70000, 1.5, True, '3', None])
def test_choose_merges_only_counts_of_pods(bad):
    # The module's prometheus_history is an option anyone can pass: a value no history line may carry is left out.
    history = ph.parse([matrix(({'node': 'n1'}, steady(days=1)))], STEP, 3 * DAY, 'n1')
    history['pods'] = {'samples': [[NOW - DAY, bad], [NOW, 7], 'x', [NOW]]}
    samples, _source = ph.choose([], history, 250)
    assert 'pods' not in samples[0] and samples[-1]['pods'] == 7


@pytest.mark.parametrize('query', ['', 'count(kube_pod_info{node="$node"})', _option_forms.DEFAULT_PODS_QUERY])
def test_the_pods_query_may_be_empty_or_any_query_of_one_node(query):
    assert _option_specs.check({'reservations_prometheus_pods_query': query}, 'reservations_') == []


@pytest.mark.parametrize('query, words', [('kubelet_running_pods', 'must name the node as $node'),
                                          ('http://prometheus:9090', 'not a URL')])
def test_a_wrong_pods_query_is_refused_by_the_options_check(query, words):
    problems = _option_specs.check({'reservations_prometheus_pods_query': query}, 'reservations_')
    assert len(problems) == 1 and words in problems[0]
