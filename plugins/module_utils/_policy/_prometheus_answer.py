# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The shape of a Prometheus HTTP API answer, checked before any of it is used (issue 44).

Prometheus' documented envelope (docs/querying/api.md, "Format overview"; web/api/v1/api.go ``Response``)::

    {"status": "success" | "error", "data": <data>, "errorType": "<string>", "error": "<string>",
     "warnings": ["<string>"], "infos": ["<string>"]}

with ``data`` for a range query ``{"resultType": "matrix", "result": [{"metric": {"<name>": "<value>"},
"values": [[<unix time>, "<sample value>"], ...]}]}`` and for an instant query ``{"resultType": "vector",
"result": [{"metric": {...}, "value": [<unix time>, "<sample value>"]}]}``. A series may carry native histograms
(``histograms``/``histogram``) instead of float values: no query of non-pod memory gives one, so it is refused.

Anything else - another type at any level, a series or a point too many - raises AnswerError with what was found
where, which the callers turn into a node's (or a class's) reason: a hostile or broken server costs the node its
Prometheus history, never the task. Caps on series and points bound the work a body within the byte cap
(_prometheus_http) can still ask for.
"""

from __future__ import annotations

import math

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _names

# A node's query has one series; a class's membership one per node (a 5,000-node fleet's kube_node_labels, with a
# node relabelled in the window, has a few more). More than this is not an answer to our queries.
MAX_SERIES_PER_ANSWER = 50000
# Prometheus answers at most 11,000 points per series of a range query (_prometheus_history asks at most 10,000).
MAX_POINTS_PER_ANSWER = 200000
# A sample value is a float as Go's strconv.FormatFloat writes it ("1.2345e+09", "NaN", "+Inf"): short.
MAX_VALUE_CHARACTERS = 64
# The most of a server's own words (an error, a warning, a Location) a reason quotes.
QUOTED_CHARACTERS = 200


class AnswerError(NodeallocError, ValueError):
    """A Prometheus answer is not of the documented shape, or is larger than the caps."""


def quoted(text):
    """At most QUOTED_CHARACTERS of a server's text, on one line (_names.printable: its other characters as escapes)."""
    return _names.printable(text, QUOTED_CHARACTERS)


def _kind(value):
    return 'null' if value is None else type(value).__name__


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _strings(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def envelope(answer, result_type):
    """The answer's ``data.result`` list (and its warnings) once the envelope is the documented one.

    Raises AnswerError for anything else: not an object, an error answer (with Prometheus' errorType and error), a
    ``data`` that is not an object, another ``resultType``, a ``result`` that is not a list, warnings that are not
    strings.
    """
    if not isinstance(answer, dict):
        raise AnswerError('the answer is a JSON %s, not an object' % _kind(answer))
    if answer.get('status') == 'error':
        raise AnswerError('the query failed: %s: %s' % (quoted(answer.get('errorType', 'error')),
                                                        quoted(answer.get('error', 'no error message'))))
    if answer.get('status') != 'success':
        raise AnswerError('the answer\'s status is %s, not "success" or "error"' % quoted(answer.get('status')))
    warnings = answer.get('warnings', [])
    if not _strings(warnings):
        raise AnswerError('the answer\'s warnings are not a list of strings')
    data = answer.get('data')
    if not isinstance(data, dict):
        raise AnswerError('the answer\'s data is a JSON %s, not an object' % _kind(data))
    if data.get('resultType') != result_type:
        raise AnswerError('the answer is a %s, not %s' % (quoted(data.get('resultType')),
                                                          'a range of values (matrix)' if result_type == 'matrix'
                                                          else 'an instant vector'))
    result = data.get('result')
    if not isinstance(result, list):
        raise AnswerError('the answer\'s result is a JSON %s, not a list' % _kind(result))
    if len(result) > MAX_SERIES_PER_ANSWER:
        raise AnswerError('the answer has %d series, more than the %d read at most'
                          % (len(result), MAX_SERIES_PER_ANSWER))
    return result, [quoted(text) for text in warnings]


def _metric(entry, index):
    if not isinstance(entry, dict):
        raise AnswerError('series %d is a JSON %s, not an object' % (index, _kind(entry)))
    metric = entry.get('metric', {})
    if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
        raise AnswerError('series %d\'s labels are not an object of strings' % index)
    if 'histograms' in entry or 'histogram' in entry:
        raise AnswerError('series %d holds native histograms, not numbers' % index)
    return metric


def _point(pair, where):
    if not isinstance(pair, list) or len(pair) != 2:
        raise AnswerError('%s is not a [time, "value"] pair' % where)
    when, text = pair
    if not _number(when) or not math.isfinite(when):
        raise AnswerError('%s has a time that is not a finite number' % where)
    if not isinstance(text, str) or len(text) > MAX_VALUE_CHARACTERS:
        raise AnswerError('%s has a value that is not a number in a string' % where)
    return float(when), text


def matrix(answer, span=None):
    """([(labels, [(time, value text), ...]), ...], warnings, dropped) of a range query's answer.

    ``span``: the (start, end) the request asked for; a point outside it is dropped and counted in ``dropped``
    (Prometheus answers only inside it: such a point is not a reading of the window).
    """
    result, warnings = envelope(answer, 'matrix')
    series, points, dropped = [], 0, 0
    for index, entry in enumerate(result):
        metric = _metric(entry, index)
        values = entry.get('values', [])
        if not isinstance(values, list):
            raise AnswerError('series %d\'s values are a JSON %s, not a list' % (index, _kind(values)))
        points += len(values)
        if points > MAX_POINTS_PER_ANSWER:
            raise AnswerError('the answer has more than %d points (%d series so far), more than the %d read at most'
                              % (points - 1, index + 1, MAX_POINTS_PER_ANSWER))
        kept = []
        for number, pair in enumerate(values):
            when, text = _point(pair, 'point %d of series %d' % (number, index))
            if span is not None and not span[0] <= when <= span[1]:
                dropped += 1
                continue
            kept.append((when, text))
        series.append((metric, kept))
    return series, warnings, dropped


def vector(answer):
    """[(labels, value text), ...] of an instant query's answer."""
    result, _warnings = envelope(answer, 'vector')
    out = []
    for index, entry in enumerate(result):
        metric = _metric(entry, index)
        _when, text = _point(entry.get('value'), 'the value of series %d' % index)
        out.append((metric, text))
    return out
