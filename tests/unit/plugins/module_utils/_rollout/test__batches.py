"""nodealloc_serial's forms and the batches apply.yml's serial play runs (issue 48)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _batches


@pytest.mark.parametrize('value, expected', [
    (1, [1]),  # today's default
    ('10%', ['10%']),
    ('5', [5]),  # key=value extra vars give text
    ([1, 5, '10%', '25%', '100%'], [1, 5, '10%', '25%', '100%']),  # JSON extra vars
    ('1, 5, 10%,25%', [1, 5, '10%', '25%']),  # an AWX survey's text field
    ('[1,3,8]', [1, 3, 8]),  # -e nodealloc_serial=[1,3,8]
    (['1', ' 3 ', '"10%"'], [1, 3, '10%']),
])
def test_every_form_an_operator_gives_reads_as_ansibles_serial_list(value, expected):
    assert _batches.serial_items(value) == expected


@pytest.mark.parametrize('value, named', [
    ([1, 0, 8], '0'),  # Ansible would take 0 as every host at once
    ('1,abc', "'abc'"),
    ([1, '150%'], "'150%'"),
    ([1, '0%'], "'0%'"),
    ([1, 2.5], '2.5'),
    ([True], 'True'),
    ('-1', "'-1'"),
    ('1,,5%x', "'5%x'"),
    ([1, None], 'None'),
])
def test_a_bad_item_is_named(value, named):
    with pytest.raises(NodeallocError, match=r"^nodealloc_serial: %s is not a batch size" % named.replace('.', r'\.')):
        _batches.serial_items(value)


@pytest.mark.parametrize('value', ['', [], ' , '])
def test_no_batch_size_at_all_is_refused(value):
    with pytest.raises(NodeallocError, match='gives no batch size'):
        _batches.serial_items(value)


@pytest.mark.parametrize('items, count, expected', [
    ([1], 4, [1, 1, 1, 1]),
    ([1, 3, 8], 12, [1, 3, 8]),  # the 12 nodes
    ([1, 3], 10, [1, 3, 3, 3]),  # the last item repeats
    ([1, 5, '10%', '25%', '100%'], 1000, [1, 5, 100, 250, 644]),
    (['10%'], 5, [1, 1, 1, 1, 1]),  # rounded down, at least 1 (Ansible's pct_to_int)
    ([1, '50%'], 3, [1, 1, 1]),
    ([5], 2, [2]),
    ([1], 0, []),
])
def test_batch_sizes_are_ansibles(items, count, expected):
    assert _batches.batch_sizes(items, count) == expected


def selection(cls, rolls=True, names=None):
    return {'class': cls, 'rolls': rolls, 'names': names, 'selected': True, 'action': 'apply'}


def test_without_a_selection_the_rolling_nodes_are_one_group_in_play_order():
    hosts = ['n%d' % i for i in range(12)]
    selections = [selection('a' if i % 2 else 'b', rolls=i != 3) for i in range(12)]  # n3 keeps its reservations
    plan = _batches.plan(hosts, selections, [1, 3, 8])
    assert plan['hosts'] == [host for host in hosts if host != 'n3']
    assert plan['serial'] == [1, 3, 7]
    assert plan['lines'][0] == 'batch 1 of 3: n0' and plan['batch_of']['n11'] == 3


def test_each_named_class_has_its_own_canary_in_the_order_named():
    names = ['gpu', 'general']
    hosts = ['g1', 'c1', 'g2', 'x1', 'c2', 'g3', 'c3', 'c4']
    classes = {'g': 'general', 'c': 'gpu', 'x': 'other'}
    # x1 is of a class not named: the class selection does not roll it; g3 keeps its reservations.
    selections = [selection(classes[host[0]], rolls=host[0] != 'x' and host != 'g3', names=names) for host in hosts]
    plan = _batches.plan(hosts, selections, '1,50%')
    assert [(batch['class'], batch['hosts']) for batch in plan['batches']] == [
        ('gpu', ['c1']), ('gpu', ['c2', 'c3']), ('gpu', ['c4']),  # 50% of gpu's 4 rolling nodes
        ('general', ['g1']), ('general', ['g2'])]
    assert plan['serial'] == [1, 2, 1, 1, 1]
    assert plan['lines'][3] == 'batch 4 of 5 (class general): g1'


def test_no_rolling_node_gives_no_host_and_a_valid_serial():
    plan = _batches.plan(['n1'], [selection('a', rolls=False)], [1, 5])
    assert plan == {'given': [1, 5], 'hosts': [], 'serial': [1], 'batches': [], 'batch_of': {}, 'lines': []}


def test_the_plan_refuses_a_bad_serial():
    with pytest.raises(NodeallocError, match="'x' is not a batch size"):
        _batches.plan(['n1'], [selection('a')], '1,x')
