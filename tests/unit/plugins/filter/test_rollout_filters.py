"""The rollout_serial and rollout_plan filters, and the plan against ansible-core's own batching (issue 48).

Beside the filters, not the module_utils tests: ``ansible-test units`` gives tests under
tests/unit/plugins/module_utils only ``ansible.module_utils``, and these import ``ansible.errors`` and the executor.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.executor.playbook_executor import PlaybookExecutor

from ansible_collections.nodealloc.kubelet.plugins.filter.rollout_plan import rollout_plan
from ansible_collections.nodealloc.kubelet.plugins.filter.rollout_serial import rollout_serial


def ansibles_batches(serial, hosts):
    """ansible-core's own cut of the play's hosts into batches (PlaybookExecutor._get_serialized_batches)."""

    class Inventory:
        def get_hosts(self, pattern, order=None):  # pylint: disable=unused-argument
            return list(hosts)

    class Play:
        def __init__(self):
            self.hosts, self.order, self.serial = 'all', None, serial

    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = Inventory()  # pylint: disable=protected-access
    return executor._get_serialized_batches(Play())  # pylint: disable=protected-access


@pytest.mark.parametrize('serial', [[1, 5, '10%', '25%', '100%'], [1, 3, 8], ['10%'], [2], [1, '50%']])
@pytest.mark.parametrize('count', [1, 7, 12, 103])
def test_the_planned_batches_are_the_ones_ansible_runs(serial, count):
    hosts = ['n%03d' % i for i in range(count)]
    selections = [{'class': 'a', 'rolls': True, 'names': None}] * count
    plan = rollout_plan(hosts, selections, serial)
    planned = [batch['hosts'] for batch in plan['batches']]
    # The same batches whether Ansible cuts the hosts with the user's list or with the planned whole numbers.
    assert ansibles_batches(serial, hosts) == planned
    assert ansibles_batches(plan['serial'], plan['hosts']) == planned


def test_a_bad_serial_fails_naming_the_item():
    with pytest.raises(AnsibleFilterError, match=r"^nodealloc_serial: 'x%' is not a batch size"):
        rollout_serial('1, 5, x%')
    assert rollout_serial('1,5,10%') == [1, 5, '10%']


def test_rollout_plan_wants_one_selection_per_host():
    with pytest.raises(AnsibleFilterError, match='one _reservations_selection'):
        rollout_plan(['a', 'b'], [{'class': 'x', 'rolls': True}], 1)
    with pytest.raises(AnsibleFilterError, match="'0' is not a batch size"):
        rollout_plan(['a'], [{'class': 'x', 'rolls': True}], '0')
