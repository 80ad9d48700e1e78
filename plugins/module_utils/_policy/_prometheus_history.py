# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A node's history of non-pod memory read from Prometheus, on the controller (issue 36).

The same samples the node's history file holds (``{'t', 'non_pod_bytes', 'non_pod_millicores'}``), from where the
fleet already keeps them, for nodes whose file is short or gone (check-mode runs record nothing; Karpenter, Cluster
API and managed node groups replace nodes). They feed the same policy as the file (_headroom.basis through
_gather.history_basis): one recommendation, two sources; ``choose`` takes the longer.

Here: the ``query_range`` requests
(``max_over_time`` over a subquery per step, so that a peak between two steps is kept; Prometheus answers at most
11 000 points per series, so a long window is asked in chunks), the reading of the answers, and every reason a
history from Prometheus is not used. Every request goes through _prometheus_http.post (bounded in time and size,
no redirect followed) and every answer through _prometheus_answer (its documented shape) before it is read; the
opener itself is the action plugin's (``fetch`` takes it), so that nothing here needs the network to be tested.
The query template, its default and its check are _option_forms' (the options check runs it on the controller
before any node is touched, without loading this file).

With a pods query (``pods_query``, issue 45) the node's pods are read at the same steps, through the same requests,
shape checks and reasons, and ``choose`` merges them into the history lines it builds (``pods``, as the node's own
history records them). The pods are extra: a pods series that cannot be used is named in the problems and the
memory history is used without it.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _names
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._overcommit import MAX_PODS, is_pod_count
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_forms import NODE_PLACEHOLDER
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_answer, _prometheus_http

# Prometheus refuses a query_range of more than 11 000 points per series (web/api/v1: "exceeded maximum resolution
# of 11,000 points per timeseries"); a chunk stays under it.
MAX_POINTS_PER_REQUEST = 10000
# A history with fewer of its steps present than this share is not used: too much of the window was never seen
# (scrapes failed, the node was down, the exporter restarted), and a peak may be in what is missing.
MIN_COVERAGE = 0.9
# A gap of more than this many steps is named in the problems even when coverage is enough.
GAP_STEPS_REPORTED = 5


def render(template, node):
    """The query for ``node``: ``$node`` replaced by the name as a PromQL double-quoted string's content."""
    escaped = str(node).replace('\\', '\\\\').replace('"', '\\"')
    return template.replace(NODE_PLACEHOLDER, escaped)


def step_query(query, step_seconds):
    """``query`` as the largest value within each step: a subquery at a quarter of the step (at least 1 s).

    Without it each step would take the one value at its end and a peak between steps would be lost. A quarter of the
    sampler's minute is 15 s, as often as kube-prometheus-stack scrapes the cAdvisor (10 s) and node_exporter (30 s)
    endpoints usefully differ.
    """
    resolution = max(1, int(step_seconds) // 4)
    return 'max_over_time((%s)[%ds:%ds])' % (query, int(step_seconds), resolution)


def chunks(now, window_seconds, step_seconds):
    """The (start, end) of each query_range request covering the window, on multiples of the step, none overlapping.

    Times on multiples of the step give every run and every chunk the same grid; ``end`` is the last step at or
    before ``now``.
    """
    step = int(step_seconds)
    end = int(now) // step * step
    start = -(-int(now - window_seconds) // step) * step
    spans = []
    while start <= end:
        last = min(end, start + (MAX_POINTS_PER_REQUEST - 1) * step)
        spans.append((start, last))
        start = last + step
    return spans


def request_body(query, start, end, step_seconds, timeout_seconds):
    """The form-encoded body of a POST to /api/v1/query_range (a long query does not fit every proxy's URL limit)."""
    return urlencode({'query': query, 'start': start, 'end': end, 'step': '%ds' % int(step_seconds),
                      'timeout': '%ds' % max(1, int(timeout_seconds))})


def _series_name(metric):
    return '{%s}' % ', '.join('%s="%s"' % (_prometheus_answer.quoted(name), _prometheus_answer.quoted(value))
                              for name, value in sorted((metric or {}).items()))


# What a series holds, for its checks and its reasons: non-pod memory in bytes, or a number of pods (a whole number
# from 0 to _overcommit.MAX_PODS, as a history line's ``pods``).
MEMORY = 'memory'
PODS = 'pods'
_WHAT = {MEMORY: 'non-pod memory in bytes', PODS: 'a number of pods (a whole number from 0 to %d)' % MAX_PODS}


def parse(answers, step_seconds, window_seconds, node, min_coverage=MIN_COVERAGE, spans=None, kind=MEMORY):
    """The history in ``answers`` (each a decoded query_range answer, one per chunk, oldest first).

    Returns {'samples': [[t, non_pod_bytes], ...], 'span_seconds', 'reason': why the history cannot be used (None when
    it can), 'problems': what is worth knowing but does not stop it}. A reason is given for an answer that is not of
    the documented shape (_prometheus_answer), an error answer, no series, more than one series for the node, a value
    that is not a number, infinite, NaN or negative (a query that does not compute non-pod memory; dropping the point
    could drop the peak), and too few steps present (``min_coverage``; a class's history passes 0: a step where none
    of its nodes ran is no reading lost, _prometheus_class). ``spans``: the (start, end) each answer was asked for;
    a point outside it is dropped and counted in the problems. ``kind``: PODS for a series of pods, whose every value
    must also be a whole number no larger than MAX_PODS (a count cannot be rounded to a reading, and the kubelet's
    gauge is one: another value means the query counts something else).
    """
    result = {'samples': [], 'span_seconds': 0, 'reason': None, 'problems': []}
    series, points, dropped = set(), {}, 0
    for index, answer in enumerate(answers):
        try:
            read, warnings, outside = _prometheus_answer.matrix(answer, spans[index] if spans else None)
        except _prometheus_answer.AnswerError as exc:
            result['reason'] = str(exc)
            return result
        dropped += outside
        for metric, values in read:
            series.add(_series_name(metric))
            for when, text in values:
                points.setdefault(when, []).append(text)
        result['problems'].extend('Prometheus warned: %s' % warning for warning in warnings)
    if dropped:
        result['problems'].append('%d sample(s) outside the asked window dropped (a server that does not answer what '
                                  'it was asked)' % dropped)
    if not series:
        result['reason'] = 'no series for node %s in the window (a node Prometheus never saw, or a query whose ' \
                           'labels do not match this Prometheus)' % node
        return result
    if len(series) > 1:
        result['reason'] = '%d series for node %s, the query must give one: %s' % (
            len(series), node, '; '.join(sorted(series)[:3]) + ('; ...' if len(series) > 3 else ''))
        return result
    samples = []
    for t in sorted(points):
        text = points[t][0]
        try:
            value = float(text)
        except (TypeError, ValueError):
            result['reason'] = 'the value %r at %s is not a number' % (_prometheus_answer.quoted(text), _when(t))
            return result
        if _not_a_value(text, kind):
            bad = [u for u in sorted(points) if _not_a_value(points[u][0], kind)]
            result['reason'] = ('%d value(s) are %s, the first %r at %s: the query does not give %s'
                                % (len(bad), 'NaN, infinite or negative' if kind == MEMORY
                                   else 'NaN, infinite, negative, fractional or above %d' % MAX_PODS,
                                   _prometheus_answer.quoted(points[bad[0]][0]), _when(bad[0]), _WHAT[kind]))
            return result
        samples.append([t, int(round(value))])
    first, last = samples[0][0], samples[-1][0]
    expected = int(round((last - first) / step_seconds)) + 1
    coverage = len(samples) / float(expected)
    widest = max([b[0] - a[0] for a, b in zip(samples, samples[1:])] or [step_seconds])
    if coverage < min_coverage:
        result['reason'] = ('only %d of the %d steps from %s to %s have a value (%.0f %%, less than %.0f %%; the '
                            'widest gap %.1f h): too much of the history is missing'
                            % (len(samples), expected, _when(first), _when(last), 100 * coverage,
                               100 * min_coverage, widest / 3600.0))
        return result
    if widest > GAP_STEPS_REPORTED * step_seconds:
        result['problems'].append('gaps in the series (a restart, failed scrapes): %d of %d steps have a value, the '
                                  'widest gap %.0f s' % (len(samples), expected, widest))
    result['samples'] = samples
    result['span_seconds'] = last - first
    if result['span_seconds'] < window_seconds - step_seconds:
        result['problems'].append('the series covers %.1f d of the %.1f d history window (retention, or a newer node)'
                                  % (result['span_seconds'] / 86400.0, window_seconds / 86400.0))
    return result


def _not_a_value(text, kind=MEMORY):
    """Whether ``text`` cannot be a value of a ``kind`` series (a size: finite and not negative; a count of pods: also
    whole and at most MAX_PODS)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return True
    if not math.isfinite(value) or value < 0:
        return True
    return kind == PODS and (value != int(value) or value > MAX_PODS)


def _when(t):
    return '%.0f' % t


def fetch(open_url, settings, now, query=None, min_coverage=MIN_COVERAGE):
    """Ask Prometheus for ``settings['node']``'s history and read it: what ``parse`` returns, with the query and URL.

    ``open_url`` is ansible.module_utils.urls.open_url's signature (the action plugin passes it). ``settings``:
    url, query (the template), pods_query (the pods' template; empty or absent: pods not read), node, window_seconds,
    step_seconds, timeout_seconds, validate_certs, ca_file, bearer_token, username, password, max_answer_bytes.
    Every failure (unreachable, TLS, authentication, a redirect, an answer too large, too slow or not of the
    documented shape, an error answer) becomes the result's ``reason``:
    the node then rests on its own history, never on a guess. ``query``: the query already rendered (a class's,
    _prometheus_class), instead of the template with the node's name; a class's history reads no pods.

    With a pods query and a usable memory history, ``pods`` is {'query', 'samples': [[t, pods], ...], 'span_seconds'}
    (``pods_series``), or None with the reason it was not read in ``problems``; the memory history stands either way.
    """
    step = int(settings['step_seconds'])
    base = {'source': 'prometheus', 'url': _prometheus_http.without_user_info(settings['url']),
            'node': settings['node'], 'query': query, 'step_seconds': step,
            'window_seconds': int(settings['window_seconds'])}
    if query is None:
        if not _names.is_node_name(settings['node']):
            return dict(base, samples=[], span_seconds=0, problems=[],
                        reason='the node name %s is %s: not put into a query (reservations_prometheus_node names the '
                               'node as Prometheus does)' % (_names.shown(settings['node']), _names.NODE_NAME_RULE))
        query = base['query'] = render(settings['query'], settings['node'])
        if settings.get('pods_query'):
            base['pods'] = None
    history = dict(base, **_read(open_url, settings, now, query, min_coverage, MEMORY))
    if 'pods' in base and not history['reason']:
        history['pods'], problems = pods_series(open_url, settings, now)
        history['problems'].extend(problems)
    return history


def pods_series(open_url, settings, now):
    """(pods, problems): the node's pods at each step of the window (``fetch``'s ``pods``, or None) and what is worth
    knowing about them: the reason a pods series is not used, its gaps, Prometheus' warnings, each said of the pods."""
    query = render(settings['pods_query'], settings['node'])
    read = _read(open_url, settings, now, query, MIN_COVERAGE, PODS)
    problems = ['pods (%s): %s' % (_prometheus_answer.quoted(query), problem) for problem in read['problems']]
    if read['reason']:
        problems.append('pods (%s) are not read, the history has none: %s'
                        % (_prometheus_answer.quoted(query), read['reason']))
        return None, problems
    return {'query': query, 'samples': read['samples'], 'span_seconds': read['span_seconds']}, problems


def _read(open_url, settings, now, query, min_coverage, kind):
    """``parse`` of ``query``'s answers over the window, asked in chunks; a request that fails is the reason."""
    step = int(settings['step_seconds'])
    answers, spans = [], []
    for start, end in chunks(now, settings['window_seconds'], step):
        body = request_body(step_query(query, step), start, end, step, settings['timeout_seconds'])
        answer, reason = _prometheus_http.post(open_url, settings, 'query_range', body)
        if reason:
            return {'samples': [], 'span_seconds': 0, 'problems': [], 'reason': reason}
        answers.append(answer)
        spans.append((start, end))
    return parse(answers, step, settings['window_seconds'], settings['node'], min_coverage, spans, kind)


def not_above(history, mem_total_bytes):
    """``history`` unchanged, or with a reason when a value is more than the node has: a query of another node, or of
    something else than non-pod memory (the node's own history refuses such a reading the same way)."""
    above = [s for s in history.get('samples') or () if s[1] > mem_total_bytes]
    if not above or history.get('reason'):
        return history
    return dict(history, samples=[], reason='%d value(s) are more than the node has (MemTotal %d), the first %d at %s: '
                                            'the query names another node or measures something else'
                                            % (len(above), mem_total_bytes, above[0][1], _when(above[0][0])))


def choose(node_samples, prometheus, cpu_millicores):
    """(samples, source) the recommendation rests on: the node's own history or Prometheus', whichever spans longer.

    ``node_samples`` are the history file's (without this run's reading, which _gather.history_basis adds to either);
    ``prometheus`` is what ``fetch`` returned (None: not asked). A Prometheus history with a ``reason`` is never used:
    the node falls back to its own history, or the cold start. Prometheus gives memory only: each of its samples
    carries ``cpu_millicores``, the node's own CPU figure (the percentile of its own readings), so CPU rests on what it
    rested on before. ``source``: 'prometheus', 'node' or 'none' (no sample but this run's reading).

    Prometheus' pods (``fetch``'s ``pods``) join the line of the same step as its ``pods``, as a node's own line
    carries them; a step without one (a gap in the pods series), or a value that is no count of pods, leaves it out.
    """
    own_span = (node_samples[-1]['t'] - node_samples[0]['t']) if len(node_samples) > 1 else 0
    usable = prometheus and not prometheus.get('reason') and prometheus.get('samples')
    if usable and prometheus['span_seconds'] > own_span:
        pods = {}
        for pair in (prometheus.get('pods') or {}).get('samples') or ():
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and is_pod_count(pair[1]):
                pods[pair[0]] = pair[1]
        lines = []
        for t, value in prometheus['samples']:
            line = {'t': t, 'non_pod_bytes': value, 'non_pod_millicores': cpu_millicores}
            if t in pods:
                line['pods'] = pods[t]
            lines.append(line)
        return lines, 'prometheus'
    return node_samples, 'node' if node_samples else 'none'
