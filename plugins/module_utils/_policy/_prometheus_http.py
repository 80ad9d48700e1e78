# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The one HTTP reader every Prometheus request goes through, on the controller (issue 44).

Prometheus, or whatever answers at ``reservations_prometheus_url``, is outside the node and outside the controller:
its answer is bounded before it is believed.

* **Time**: one deadline per request, ``timeout_seconds``, for connecting, the headers and the whole body together.
  A socket timeout alone bounds each read, not the answer: a body sent at one byte a second never trips it. The
  request runs in a daemon thread that the caller waits for at most that long; past it the answer is dropped and
  the response closed (the thread stops at its next read; a process that exits does not wait for it).
* **Size**: the body is read in pieces up to ``max_answer_bytes`` (a larger ``Content-Length`` is refused before
  reading; a body that runs past the cap is cut there and refused), so memory stays within the cap whatever is sent.
* **Encoding**: nothing is decoded that was not asked for. The request says ``Accept-Encoding: identity``, ansible's
  gzip decoding is off (``decompress=False``), and an answer with any other ``Content-Encoding`` is refused, so a
  small compressed body cannot become gigabytes.
* **Redirects** are not followed (``follow_redirects='none'``): the reason names the ``Location``. The credentials
  (``Authorization``, basic authentication) therefore go to the configured origin only, never to the place a
  redirect names, over another scheme or port.
* **Secrets** never appear in a reason: the bearer token, the password and any user information are cut out of
  every text this returns (``redact``).

What the answer holds is checked by _prometheus_answer; this hands over the decoded JSON.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy._prometheus_answer import quoted

# The largest answer read, by default (reservations_prometheus_max_answer_bytes). A node's 14-day history at one
# step a minute is about 0.5 MB of JSON per 10,000-point chunk; a 5,000-node fleet's kube_node_labels about 1-2 MB.
DEFAULT_MAX_ANSWER_BYTES = 16 << 20
READ_PIECE_BYTES = 1 << 16


class _Outcome:
    """What the request's thread leaves for the caller: the response (to close it), the body, or the exception."""

    def __init__(self):
        self.response = None
        self.body = None
        self.reason = None
        self.error = None


def redact(text, settings):
    """``text`` with the bearer token, the password (as given, and without surrounding whitespace) and the basic
    authentication header's value (base64 of user:password) replaced by ``<hidden>``: an exception's words, or a
    proxy's error page, may quote a header."""
    text = str(text)
    basic = ''
    if settings.get('username') or settings.get('password'):
        basic = base64.b64encode(('%s:%s' % (settings.get('username') or '', settings.get('password') or ''))
                                 .encode('utf-8')).decode('ascii')
    for secret in (settings.get('bearer_token'), settings.get('password'), basic):
        for form in sorted({str(secret or ''), str(secret or '').strip()}, key=len, reverse=True):
            if form:
                text = text.replace(form, '<hidden>')
    return text


def without_user_info(url):
    """``url`` without ``user:password@`` (for a reason or a report); the rest as given."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return '<an address that is not a URL>'
    if '@' not in parts.netloc:
        return str(url)
    return urlunsplit(parts._replace(netloc='<hidden>@' + parts.netloc.rsplit('@', 1)[1]))


def _header(response, name):
    headers = getattr(response, 'headers', None)
    if headers is None:
        return None
    try:
        return headers.get(name)
    except Exception:  # pylint: disable=broad-except  # a stand-in without a mapping of headers
        return None


def _read_capped(response, max_bytes, deadline):
    """(body, None) or (None, why not): the body read in pieces, never more than ``max_bytes`` + one piece."""
    length = _header(response, 'Content-Length')
    if length is not None:
        try:
            declared = int(length)
        except ValueError:
            declared = None
        if declared is not None and declared > max_bytes:
            return None, ('the answer is %d bytes (Content-Length), more than the %d bytes read at most '
                          '(reservations_prometheus_max_answer_bytes)' % (declared, max_bytes))
    encoding = (_header(response, 'Content-Encoding') or 'identity').strip().lower()
    if encoding not in ('', 'identity'):
        return None, ('the answer is encoded as %s, which was not asked for (Accept-Encoding: identity): not decoded'
                      % quoted(encoding))
    read = getattr(response, 'read1', None) or response.read
    pieces, total = [], 0
    while True:
        if time.monotonic() > deadline:
            return None, None  # the caller reports the deadline
        piece = read(READ_PIECE_BYTES)
        if not piece:
            return b''.join(pieces), None
        total += len(piece)
        if total > max_bytes:
            return None, ('the answer is more than the %d bytes read at most (reservations_prometheus_max_answer_bytes)'
                          ': refused unread' % max_bytes)
        pieces.append(piece)


def _exception_reason(exc, endpoint, max_bytes, deadline):
    status = getattr(exc, 'code', None)
    if isinstance(status, int):  # urllib's HTTPError: an answer, with a status and maybe Prometheus' error JSON
        if 300 <= status < 400:
            location = _header(exc, 'Location') or getattr(exc, 'filename', None) or 'no Location'
            return ('%s answered a redirect (HTTP %d) to %s: not followed, so that the credentials go nowhere else; '
                    'set reservations_prometheus_url to the address that answers' % (endpoint, status,
                                                                                     quoted(without_user_info(location))))
        try:
            body, _why = _read_capped(exc, min(max_bytes, 1 << 16), deadline)
        except Exception:  # pylint: disable=broad-except
            body = b''
        return http_reason(status, body or b'')
    name = type(exc).__name__
    text = str(getattr(exc, 'reason', None) or exc)
    if 'certificate' in text.lower() or 'ssl' in name.lower() or 'ssl' in text.lower():
        return 'TLS to %s failed: %s (reservations_prometheus_ca_file, reservations_prometheus_validate_certs)' \
               % (endpoint, quoted(text))
    if 'timed out' in text.lower() or name in ('timeout', 'TimeoutError'):
        return ('no answer from %s within the timeout (reservations_prometheus_timeout_seconds): %s'
                % (endpoint, quoted(text)))
    return 'cannot reach %s: %s: %s' % (endpoint, name, quoted(text))


def http_reason(status, body):
    """Why an HTTP error answer gave no history: an auth failure named as one, a query error with Prometheus' words."""
    if status in (401, 403):
        return 'Prometheus refused the credentials (HTTP %d): check reservations_prometheus_bearer_token or ' \
               'reservations_prometheus_username / _password' % status
    try:
        answer = json.loads(body)
    except (TypeError, ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict) and answer.get('status') == 'error':
        return ('the query failed (HTTP %d): %s: %s'
                % (status, quoted(answer.get('errorType')), quoted(answer.get('error'))))
    text = body.decode('utf-8', 'replace') if isinstance(body, bytes) else str(body)
    return 'Prometheus answered HTTP %d: %s' % (status, quoted(text))


def post(open_url, settings, api, body):
    """(the decoded answer, None) of a POST of ``body`` to /api/v1/``api``, or (None, why there is none).

    ``open_url`` has ansible.module_utils.urls.open_url's signature. ``settings``: url, timeout_seconds,
    validate_certs, ca_file, bearer_token, username, password, max_answer_bytes (DEFAULT_MAX_ANSWER_BYTES when
    absent). Never raises for what the server does; the reason never holds a secret.
    """
    timeout = max(1, int(settings['timeout_seconds']))
    max_bytes = int(settings.get('max_answer_bytes') or DEFAULT_MAX_ANSWER_BYTES)
    endpoint = without_user_info(settings['url'].rstrip('/') + '/api/v1/' + api)
    headers = {'Content-Type': 'application/x-www-form-urlencoded', 'Accept': 'application/json',
               'Accept-Encoding': 'identity'}
    if settings.get('bearer_token'):
        headers['Authorization'] = 'Bearer %s' % settings['bearer_token']
    deadline = time.monotonic() + timeout
    outcome = _Outcome()

    def request():
        try:
            outcome.response = open_url(
                settings['url'].rstrip('/') + '/api/v1/' + api, data=body, headers=headers, method='POST',
                timeout=timeout, validate_certs=settings['validate_certs'], ca_path=settings.get('ca_file') or None,
                url_username=settings.get('username') or None, url_password=settings.get('password') or None,
                force_basic_auth=bool(settings.get('username')), use_proxy=True, follow_redirects='none',
                decompress=False, use_netrc=False)
            outcome.body, outcome.reason = _read_capped(outcome.response, max_bytes, deadline)
        except Exception as exc:  # pylint: disable=broad-except  # every failure is a reason, none a crash
            outcome.error = exc

    worker = threading.Thread(target=request, name='nodealloc-prometheus-request', daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or (outcome.body is None and outcome.reason is None and outcome.error is None):
        _close(outcome.response)
        return None, redact('no whole answer from %s within %d s (reservations_prometheus_timeout_seconds bounds '
                            'connecting, the headers and the body together)' % (endpoint, timeout), settings)
    _close(outcome.response)
    if outcome.error is not None:
        return None, redact(_exception_reason(outcome.error, endpoint, max_bytes, deadline), settings)
    if outcome.reason:
        return None, redact('%s: %s' % (endpoint, outcome.reason), settings)
    try:
        return json.loads(outcome.body), None
    except RecursionError:
        return None, redact('%s answered JSON nested too deep to be a Prometheus answer' % endpoint, settings)
    except ValueError as exc:
        return None, redact('%s did not answer JSON (%s): is reservations_prometheus_url the Prometheus server?'
                            % (endpoint, quoted(exc)), settings)


def _close(response):
    if response is None:
        return
    try:
        response.close()
    except Exception:  # pylint: disable=broad-except  # closing what another thread may be reading
        pass
