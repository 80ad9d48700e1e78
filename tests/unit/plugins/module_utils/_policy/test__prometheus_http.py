"""The one bounded HTTP reader for Prometheus (issue 44), with open_url stand-ins; the real server cases are in
tests/integration/test_prometheus_hostile.py."""

from __future__ import annotations

import base64
import io
import json
import threading
import urllib.error

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_http as http

SETTINGS = {'url': 'https://prom.example', 'timeout_seconds': 2, 'validate_certs': True, 'ca_file': '',
            'bearer_token': 'tok-123', 'username': 'bob', 'password': 'pw-456', 'max_answer_bytes': 64}


class Response(io.BytesIO):
    def __init__(self, body, headers=None):
        super().__init__(body)
        self.headers = headers or {}


def test_the_request_asks_for_identity_follows_no_redirect_and_decodes_nothing():
    asked = {}

    def open_url(url, **kwargs):
        asked.update(kwargs, url=url)
        return Response(b'{"status": "success"}')
    answer, reason = http.post(open_url, SETTINGS, 'query', 'q=1')
    assert reason is None and answer == {'status': 'success'}
    assert asked['follow_redirects'] == 'none' and asked['decompress'] is False and asked['use_netrc'] is False
    assert asked['headers']['Accept-Encoding'] == 'identity' and asked['headers']['Authorization'] == 'Bearer tok-123'
    assert asked['timeout'] == 2 and asked['url'] == 'https://prom.example/api/v1/query'


def test_a_body_one_byte_past_the_cap_is_refused():
    answer, reason = http.post(lambda url, **kw: Response(b'1' * 65), SETTINGS, 'query', '')
    assert answer is None and 'more than the 64 bytes read at most' in reason
    answer, reason = http.post(lambda url, **kw: Response(b'1' * 64), SETTINGS, 'query', '')
    assert reason is None and answer == int('1' * 64)


def test_an_opener_that_never_returns_is_given_up_at_the_deadline():
    release = threading.Event()

    def open_url(url, **kwargs):
        release.wait(30)
        return Response(b'{}')
    answer, reason = http.post(open_url, SETTINGS, 'query', '')
    release.set()
    assert answer is None and 'no whole answer from https://prom.example/api/v1/query within 2 s' in reason


def test_a_redirect_names_its_location_without_user_information():
    error = urllib.error.HTTPError('http://evil:8080/x', 302, 'Found', {'Location': 'http://u:p@evil:8080/x'},
                                   io.BytesIO(b''))

    def open_url(url, **kwargs):
        raise error
    _answer, reason = http.post(open_url, SETTINGS, 'query', '')
    assert 'redirect (HTTP 302) to http://<hidden>@evil:8080/x: not followed' in reason and 'u:p' not in reason


def test_every_form_of_a_secret_is_cut_out_of_a_reason():
    basic = base64.b64encode(b'bob:pw-456').decode()
    text = http.redact('Bearer tok-123 / pw-456 / Basic %s / tok-123\n' % basic, SETTINGS)
    assert 'tok-123' not in text and 'pw-456' not in text and basic not in text and text.count('<hidden>') == 4
    error = urllib.error.HTTPError('u', 500, 'x', {}, io.BytesIO(('echo %s' % basic).encode()))

    def open_url(url, **kwargs):
        raise error
    _answer, reason = http.post(open_url, SETTINGS, 'query', '')
    assert basic not in reason and 'HTTP 500' in reason


def test_an_answer_that_is_not_json_or_nested_too_deep_is_a_reason():
    _answer, reason = http.post(lambda url, **kw: Response(b'<html>'), dict(SETTINGS, max_answer_bytes=1 << 20),
                                'query', '')
    assert 'did not answer JSON' in reason
    _answer, reason = http.post(lambda url, **kw: Response(b'[' * 50000 + b']' * 50000),
                                dict(SETTINGS, max_answer_bytes=1 << 20), 'query', '')
    assert 'nested too deep' in reason


def test_a_declared_length_or_an_encoding_is_refused_before_reading():
    _answer, reason = http.post(lambda url, **kw: Response(b'{}', {'Content-Length': '65'}), SETTINGS, 'query', '')
    assert 'is 65 bytes (Content-Length)' in reason
    _answer, reason = http.post(lambda url, **kw: Response(b'{}', {'Content-Encoding': 'gzip'}), SETTINGS, 'query', '')
    assert 'encoded as gzip, which was not asked for' in reason
    assert json.loads('{}') == {}
