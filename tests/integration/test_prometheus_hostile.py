"""The controller trusts nothing Prometheus sends (issue 44): a hostile server on 127.0.0.1, ansible's real open_url.

Each case is one the issue measured against the code before it: redirects that carried the credentials elsewhere,
bodies without bound (size, encoding, points, time), shapes that failed the task, samples outside the window, a
proxy quoting the token back. Every one must end as a reason for the node (its own history then), never a failed
task, never a secret shown, within the time and memory the options allow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from ansible.module_utils.urls import open_url

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (_prometheus_answer, _prometheus_class,
                                                                                _prometheus_history, _prometheus_http)
from helpers.hostile_prometheus import HostilePrometheus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DAY = 86400
TOKEN = 's3cr3t-token-value'
PASSWORD = 'pa55-word-value'
GIB = 1 << 30


def settings(url, **extra):
    return dict({'url': url, 'query': 'm{node="$node"}', 'node': 'n1', 'window_seconds': 3 * DAY, 'step_seconds': 60,
                 'timeout_seconds': 10, 'validate_certs': True, 'ca_file': '', 'bearer_token': TOKEN,
                 'username': '', 'password': '', 'max_answer_bytes': _prometheus_http.DEFAULT_MAX_ANSWER_BYTES},
                **extra)


def fetch(server, **extra):
    return _prometheus_history.fetch(open_url, settings(server.url, **extra), time.time())


def test_a_healthy_server_gives_the_history_with_the_token_sent_to_it():
    with HostilePrometheus('healthy') as server:
        history = fetch(server)
    assert history['reason'] is None and len(history['samples']) >= 3 * DAY // 60
    assert server.requests[0]['headers']['Authorization'] == 'Bearer ' + TOKEN
    assert server.requests[0]['headers']['Accept-Encoding'] == 'identity'


@pytest.mark.parametrize('scheme', ['http', 'ftp'])
def test_a_redirect_is_not_followed_and_the_credentials_go_nowhere_else(scheme):
    with HostilePrometheus('healthy') as elsewhere:
        location = '%s://127.0.0.1:%s/api/v1/query_range' % (scheme, elsewhere.url.rsplit(':', 1)[1])
        with HostilePrometheus('redirect', location=location) as server:
            history = fetch(server, username='bob', password=PASSWORD)
    assert 'redirect (HTTP 302)' in history['reason'] and location in history['reason']
    assert history['samples'] == [] and elsewhere.requests == []
    assert len(server.requests) == 1


def test_a_body_past_the_cap_is_refused_unread():
    with HostilePrometheus('huge_body') as server:
        history = fetch(server, max_answer_bytes=1 << 20)
    assert 'more than the 1048576 bytes read at most' in history['reason'] and history['samples'] == []


def test_a_declared_length_past_the_cap_is_refused_before_reading():
    with HostilePrometheus('huge_body', declared_bytes=GIB) as server:
        history = fetch(server, max_answer_bytes=1 << 20)
    assert 'is %d bytes (Content-Length)' % GIB in history['reason']


def test_an_encoding_not_asked_for_is_not_decoded():
    with HostilePrometheus('gzip_bomb') as server:
        history = fetch(server)
    assert 'encoded as gzip, which was not asked for' in history['reason'] and history['samples'] == []


def test_points_past_the_cap_are_refused_with_the_figures():
    with HostilePrometheus('many_points') as server:
        history = fetch(server)
    assert 'more than the %d read at most' % _prometheus_answer.MAX_POINTS_PER_ANSWER in history['reason']


@pytest.mark.parametrize('case', ['slow_body', 'slow_headers'])
def test_a_slow_answer_gives_up_within_the_timeout(case):
    # The bound: timeout_seconds + 5 s (before: still reading after 100 s at 1 byte/s).
    with HostilePrometheus(case) as server:
        started = time.monotonic()
        history = fetch(server, timeout_seconds=2)
        took = time.monotonic() - started
    assert 'no whole answer' in history['reason'] and 'within 2 s' in history['reason']
    assert took < 2 + 5, took


@pytest.mark.parametrize('case, words', [
    ('deep_nesting', 'nested too deep'),
    ('number_for_list', "result is a JSON int, not a list"),
    ('values_not_pairs', 'is not a [time, "value"] pair'),
])
def test_a_shape_that_is_not_an_answer_is_a_reason(case, words):
    with HostilePrometheus(case) as server:
        history = fetch(server)
    assert words in history['reason'] and history['samples'] == []


def test_samples_outside_the_asked_window_are_dropped_and_counted():
    with HostilePrometheus('outside_window') as server:
        history = fetch(server)
    assert history['reason'] is None
    assert history['span_seconds'] <= 3 * DAY
    assert any('20000 sample(s) outside the asked window dropped' in p for p in history['problems'])


def test_a_server_quoting_the_token_back_never_shows_it():
    with HostilePrometheus('error_with_secret_echo') as server:
        history = fetch(server, password=PASSWORD)
    assert 'HTTP 500' in history['reason'] and '<hidden>' in history['reason']
    assert TOKEN not in json.dumps(history)


def test_the_class_reading_gives_reasons_not_exceptions():
    for case in ('deep_nesting', 'number_for_list', 'gzip_bomb', 'redirect'):
        with HostilePrometheus(case, location='http://127.0.0.1:1/') as server:
            read = _prometheus_class.fetch_classes(open_url, dict(settings(server.url), class_label=''), time.time(),
                                                   ['n1'])
        assert read['reason'] and read['classes'] == {}, (case, read)


_MEASURE = textwrap.dedent('''
    import json, resource, sys, time
    sys.path.insert(0, %(build)r)
    from ansible.module_utils.urls import open_url
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_history
    settings = json.loads(sys.argv[1])
    history = _prometheus_history.fetch(open_url, settings, time.time())
    print(json.dumps({'reason': history['reason'], 'samples': len(history['samples']),
                      'max_rss_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
''')


def _measured(url, case_settings):
    process = subprocess.run([sys.executable, '-c', _MEASURE % {'build': os.path.join(ROOT, '.build')},
                              json.dumps(settings(url, **case_settings))],
                             capture_output=True, text=True, timeout=300, check=True)
    return json.loads(process.stdout)


def test_a_1_gib_body_costs_no_more_than_the_cap_over_a_normal_run():
    """The issue's bound: the controller's peak RSS within the body cap + 100 MiB of a normal run."""
    cap = _prometheus_http.DEFAULT_MAX_ANSWER_BYTES
    with HostilePrometheus('healthy') as server:
        normal = _measured(server.url, {})
    with HostilePrometheus('huge_body') as server:  # 1 GiB and more, never declared: read until the cap
        hostile = _measured(server.url, {})
    assert normal['reason'] is None and normal['samples'] > 0
    assert 'read at most' in hostile['reason']
    assert hostile['max_rss_kib'] * 1024 <= normal['max_rss_kib'] * 1024 + cap + (100 << 20), (normal, hostile)


def _recommend(inventory, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'))
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory), '--check',
               os.path.join(ROOT, 'playbooks', 'recommend.yml'), '-e', 'ansible_python_interpreter=%s' % sys.executable]
    return subprocess.run(command + list(extra), cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                          timeout=300)


def test_recommend_keeps_the_reason_of_a_hostile_answer_and_shows_no_secret(tmp_path):
    """recommend.yml --check through the role's wiring: hostile answers (a shape that is not an answer, a redirect,
    a proxy quoting the token back) are each the node's reason in the report, the node rests on its own history,
    the run exits 0, and neither the token nor the password is in the job output or any report file."""
    with HostilePrometheus('number_for_list') as shape, HostilePrometheus('error_with_secret_echo') as echo, \
            HostilePrometheus('redirect', location='http://127.0.0.1:1/') as redirect:
        inventory = tmp_path / 'inventory.ini'
        inventory.write_text('\n'.join(
            '%s ansible_connection=local reservations_prometheus_url=%s reservations_history_path=%s'
            % (host, server.url, tmp_path / ('%s.jsonl' % host))
            for host, server in (('shape', shape), ('echo', echo), ('redirect', redirect))) + '\n')
        reports = tmp_path / 'reports'
        result = _recommend(inventory, '-e', 'nodealloc_report_dir=%s' % reports, '-e', 'reservations_sample_seconds=0.5',
                            '-e', 'reservations_prometheus_bearer_token=%s' % TOKEN,
                            '-e', 'reservations_prometheus_username=bob',
                            '-e', 'reservations_prometheus_password=%s' % PASSWORD, '-v')
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    nodes = {node['host']: node for node in json.loads((reports / 'reservations.json').read_text())['nodes']}
    reasons = {host: node['history']['prometheus']['reason'] for host, node in nodes.items()}
    assert 'result is a JSON int, not a list' in reasons['shape'], reasons
    assert 'HTTP 500' in reasons['echo'] and '<hidden>' in reasons['echo'], reasons
    assert 'redirect (HTTP 302) to http://127.0.0.1:1/' in reasons['redirect'], reasons
    assert all(node['history']['source'] in ('node', 'none') for node in nodes.values())
    shown = [result.stdout, result.stderr] + [path.read_text() for path in reports.rglob('*') if path.is_file()]
    for text in shown:
        assert TOKEN not in text and PASSWORD not in text


@pytest.mark.parametrize('variable, value, words', [
    ('reservations_prometheus_bearer_token', TOKEN + '\n', 'must not contain control characters'),
    ('reservations_prometheus_url', 'http://bob:%s@127.0.0.1:9/' % PASSWORD, 'must not hold a user name or password'),
])
def test_a_secret_refused_by_the_option_check_is_not_echoed(tmp_path, variable, value, words):
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('localhost ansible_connection=local\n')
    result = _recommend(inventory, '-e', json.dumps({variable: value, 'nodealloc_report_dir': str(tmp_path / 'r')}))
    assert result.returncode != 0 and words in result.stdout, result.stdout[-3000:]
    assert TOKEN not in result.stdout + result.stderr and PASSWORD not in result.stdout + result.stderr


def test_a_node_left_out_of_class_history_is_named_in_a_warning(tmp_path):
    """The action in classes mode (the role runs it no_log: it carries credentials): a node whose class label is no
    Kubernetes label value is left out, and the operator sees why, on one line, in the job output."""
    playbook = tmp_path / 'classes.yml'
    with HostilePrometheus('hostile_label') as server:
        playbook.write_text(textwrap.dedent('''
            - hosts: localhost
              gather_facts: false
              tasks:
                - nodealloc.kubelet.prometheus_history:
                    mode: classes
                    url: %s
                    nodes: {n1: ''}
                    class_label: karpenter.sh/nodepool
                    window: 1d
                  no_log: true
                  register: read
                - ansible.builtin.assert:
                    that: "read.host_classes == {'n1': 'batch'} and read.refused | length == 1"
        ''' % server.url))
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'))
        result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                                 '-c', 'local', str(playbook)], env=env, capture_output=True, text=True, timeout=120,
                                check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    warnings = [line for line in (result.stdout + result.stderr).splitlines() if 'left out of class history' in line]
    assert len(warnings) == 1 and "evil" in warnings[0] and 'AlwaysAllow' in warnings[0], warnings
    assert 'authorization:\n' not in result.stdout + result.stderr
