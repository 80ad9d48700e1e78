"""_prometheus_class: the class of a node, the query matching every node of a class, and every failure a reason.

Answers are shaped as Prometheus 2.42's /api/v1/query and query_range give them; the real server is in
tests/integration/test_prometheus_history.py.
"""

from __future__ import annotations

import io
import json
import urllib.parse

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_class as pc

GIB = 1 << 30
STEP = 60
NOW = 28_333_334 * STEP


@pytest.mark.parametrize('name, label', [
    ('karpenter.sh/nodepool', 'label_karpenter_sh_nodepool'),
    ('node.kubernetes.io/instance-type', 'label_node_kubernetes_io_instance_type'),
    ('label_eks_amazonaws_com_nodegroup', 'label_eks_amazonaws_com_nodegroup'),
])
def test_a_kubernetes_label_is_named_as_kube_state_metrics_exposes_it(name, label):
    assert pc.kube_state_label(name) == label


@pytest.mark.parametrize('template, rendered', [
    ('m{node="$node"}', 'm{node=~"(a|b\\\\.c)"}'),
    ('nodealloc_memory_non_pod_bytes{instance="$node:9100"}', 'nodealloc_memory_non_pod_bytes{instance=~"(a|b\\\\.c):9100"}'),
    ('m{node=~"$node"}', 'm{node=~"(a|b\\\\.c)"}'),
    ('m{job="x", node="$node"} - n{node="$node"}', 'm{job="x", node=~"(a|b\\\\.c)"} - n{node=~"(a|b\\\\.c)"}'),
])
def test_render_nodes_matches_every_node_of_the_class_literally(template, rendered):
    # A dot in a node name is a literal dot: escaped for RE2, its backslash escaped for the PromQL string.
    assert pc.render_nodes(template, ['b.c', 'a']) == rendered


def test_the_default_query_rendered_for_a_class_still_passes_the_check():
    rendered = pc.render_nodes(_option_forms.DEFAULT_QUERY, ['ip-10-0-1-5.ec2.internal', 'n2'])
    assert '$node' not in rendered and rendered.count('node=~"(ip\\\\-10\\\\-0\\\\-1\\\\-5') == 0  # '-' is no RE2 special
    assert rendered.count('node=~"(ip-10-0-1-5\\\\.ec2\\\\.internal|n2)"') == 3


def test_a_negative_node_matcher_cannot_name_a_class():
    with pytest.raises(ValueError, match='!='):
        pc.render_nodes('m{node!="$node"}', ['a'])


def vector(*entries):
    return {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': labels, 'value': [NOW, str(value)]} for labels, value in entries]}}


def test_membership_by_label_and_by_size():
    label = 'label_karpenter_sh_nodepool'
    answer = vector(({'node': 'a', label: 'batch'}, 1), ({'node': 'b', label: 'general'}, 1),
                    ({'node': 'b', label: 'batch'}, 1), ({label: 'x'}, 1))
    assert pc.membership(label, [answer]) == {'a': ['batch'], 'b': ['batch', 'general']}
    memory = vector(({'node': 'a'}, 8 * GIB - 300 * (1 << 20)), ({'node': 'b'}, 16 * GIB), ({'node': 'c'}, 4 * GIB))
    cpus = vector(({'node': 'a'}, 2), ({'node': 'b'}, 4))
    assert pc.membership('', [memory, cpus]) == {'a': ['8gib-2cpu'], 'b': ['16gib-4cpu']}


class Server:
    """open_url's stand-in: answers by API and query, and records each request's form."""

    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def __call__(self, url, data=None, **kwargs):
        form = dict(urllib.parse.parse_qsl(data))
        self.asked.append((url.rsplit('/', 1)[1], form['query']))
        for (api, words), answer in self.answers.items():
            if url.endswith('/' + api) and words in form['query']:
                if isinstance(answer, Exception):
                    raise answer
                return io.BytesIO(json.dumps(answer).encode())
        raise AssertionError('unexpected %s' % form['query'])


SETTINGS = {'url': 'http://prom:9090', 'query': 'm{node="$node"}', 'node': '', 'window_seconds': 3 * 86400,
            'step_seconds': STEP, 'timeout_seconds': 5, 'validate_certs': True, 'ca_file': '', 'bearer_token': '',
            'username': '', 'password': '', 'class_label': 'karpenter.sh/nodepool'}
LABEL = 'label_karpenter_sh_nodepool'


def matrix(values):
    return {'status': 'success', 'data': {'resultType': 'matrix', 'result': [{'metric': {}, 'values': values}]}}


def test_fetch_classes_asks_one_max_query_per_class_and_counts_its_nodes():
    # The gone node's steps, then none, then the new node's: a step where no node ran is no reason.
    values = [[t, '100'] for t in range(NOW - 3 * 86400, NOW - 2 * 86400, STEP)] + \
             [[t, '50'] for t in range(NOW - 3600, NOW + 1, STEP)]
    server = Server({('query', 'kube_node_labels'): vector(({'node': 'gone', LABEL: 'batch'}, 1),
                                                           ({'node': 'new', LABEL: 'batch'}, 1),
                                                           ({'node': 'other', LABEL: 'general'}, 1)),
                     ('query_range', 'max('): matrix(values),
                     ('query', 'count('): vector(({}, 2))})
    read = pc.fetch_classes(server, SETTINGS, NOW, ['new'])
    assert read['reason'] is None and read['node_classes'] == {'new': 'batch'} and list(read['classes']) == ['batch']
    batch = read['classes']['batch']
    assert batch['reason'] is None and batch['members'] == ['gone', 'new'] and batch['nodes'] == 2
    assert batch['covered_seconds'] == len(values) * STEP and batch['span_seconds'] == values[-1][0] - values[0][0]
    ranges = [query for api, query in server.asked if api == 'query_range']
    assert ranges and all('max(m{node=~"(gone|new)"})' in query for query in ranges)
    assert 'general' not in json.dumps(server.asked)  # a class without an inventory node is not read


@pytest.mark.parametrize('answers, words', [
    ({('query', 'kube_node_labels'): OSError('connection refused')}, 'the classes could not be read: cannot reach'),
    ({('query', 'kube_node_labels'): {'status': 'error', 'errorType': 'bad_data', 'error': 'x'}},
     'the classes could not be read: the query failed: bad_data'),
    ({('query', 'kube_node_labels'): matrix([])}, 'not an instant vector'),
])
def test_a_membership_that_cannot_be_read_is_a_reason(answers, words):
    read = pc.fetch_classes(Server(answers), SETTINGS, NOW, ['new'])
    assert words in read['reason'] and read['classes'] == {}


def test_a_class_history_that_cannot_be_read_is_the_classs_reason():
    server = Server({('query', 'kube_node_labels'): vector(({'node': 'new', LABEL: 'batch'}, 1)),
                     ('query_range', 'max('): {'status': 'success', 'data': {'resultType': 'matrix', 'result': []}}})
    batch = pc.fetch_classes(server, SETTINGS, NOW, ['new'])['classes']['batch']
    assert 'no series' in batch['reason'] and batch['samples'] == []


HOSTILE_CLASS = 'batch\nauthentication:\n  anonymous:\n    enabled: true\nauthorization:\n  mode: AlwaysAllow'


def test_a_node_whose_class_or_name_is_not_a_kubernetes_name_is_left_out_with_a_reason():
    # Issue 44: a node's kubelet credentials may set most labels on its own Node object. A value that is not a
    # Kubernetes label value (apimachinery IsValidLabelValue) would become a directory, a header and a query.
    answer = vector(({'node': 'a', LABEL: 'batch'}, 1), ({'node': 'evil', LABEL: HOSTILE_CLASS}, 1),
                    ({'node': 'evil', LABEL: 'batch'}, 1), ({'node': 'Bad_Name', LABEL: 'batch'}, 1),
                    ({'node': 'long', LABEL: 'x' * 64}, 1), ({'node': 'b', LABEL: 'general'}, 1))
    refused = []
    assert pc.membership(LABEL, [answer], refused) == {'a': ['batch'], 'b': ['general']}
    assert len(refused) == 3 and all('left out of class history' in reason for reason in refused)
    assert all('\n' not in reason and reason.isprintable() for reason in refused)
    evil = next(reason for reason in refused if 'evil' in reason)
    assert "'batch\\nauthentication:\\n  anonymous" in evil and 'not a Kubernetes label value' in evil
    assert "'Bad_Name'" in next(reason for reason in refused if 'Bad_Name' in reason)
    # Size classes are ours and pass; a node name is checked there too.
    memory = vector(({'node': 'a'}, 8 * GIB), ({'node': 'x"}) or vector(1) #'}, 8 * GIB))
    cpus = vector(({'node': 'a'}, 2), ({'node': 'x"}) or vector(1) #'}, 2))
    refused = []
    assert pc.membership('', [memory, cpus], refused) == {'a': ['8gib-2cpu']} and len(refused) == 1


def test_fetch_classes_lists_the_nodes_left_out_and_asks_nothing_with_their_names():
    labels = [({'node': 'new', LABEL: 'batch'}, 1)] + [({'node': 'evil-%d' % n, LABEL: 'bad value %d' % n}, 1)
                                                       for n in range(pc.MAX_REFUSALS_LISTED + 5)]
    server = Server({('query', 'kube_node_labels'): vector(*labels),
                     ('query_range', 'max('): matrix([[NOW - STEP, '50'], [NOW, '50']]),
                     ('query', 'count('): vector(({}, 1))})
    read = pc.fetch_classes(server, SETTINGS, NOW, ['new', 'evil-0'])
    assert read['node_classes'] == {'new': 'batch'} and list(read['classes']) == ['batch']
    assert read['classes']['batch']['members'] == ['new']
    assert len(read['refused']) == pc.MAX_REFUSALS_LISTED + 1 and read['refused'][-1].startswith('and 5 more nodes')
    assert 'bad value' not in json.dumps([query for _api, query in server.asked])


def test_class_history_refuses_a_name_membership_would_not_have_let_through():
    with pytest.raises(ValueError, match='not a Kubernetes name'):
        pc.class_history(Server({}), SETTINGS, NOW, LABEL, HOSTILE_CLASS, ['a'])
    with pytest.raises(ValueError, match='not a Kubernetes name'):
        pc.class_history(Server({}), SETTINGS, NOW, LABEL, 'batch', ['a|b'])
