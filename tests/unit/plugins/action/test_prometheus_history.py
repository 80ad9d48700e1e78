"""The Prometheus action's controller-side checks (issue 44): credentials in the clear are warned about."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.action.prometheus_history import plain_http_credentials


@pytest.mark.parametrize('url, token, password, warned', [
    ('http://prometheus.monitoring.svc:9090', 'tok-9f3a', '', True),
    ('http://10.0.0.5:9090', '', 'pw-77c1', True),
    ('https://prometheus.example', 'tok', 'pw', False),
    ('http://127.0.0.1:9090', 'tok', '', False),
    ('http://[::1]:9090', 'tok', '', False),
    ('http://localhost:9090', 'tok', '', False),
    ('http://prometheus.monitoring.svc:9090', '', '', False),
])
def test_credentials_over_plain_http_to_another_host_are_warned_about(url, token, password, warned):
    warning = plain_http_credentials({'url': url, 'bearer_token': token, 'password': password})
    assert bool(warning) == warned
    if warning:
        assert 'use https://' in warning and (token or password) not in warning
