"""The node_api_healthy filter: what roles/reservations/tasks/health.yml's until: waits for, through Ansible's Jinja.

Beside the filters, not the module_utils tests: ``ansible-test units`` gives tests under tests/unit/plugins/module_utils
only ``ansible.module_utils``; the verdict's table is tests/unit/plugins/module_utils/_rollout/test__api_health.py.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.filter.node_api_healthy import FilterModule

node_api_healthy = FilterModule().filters()['node_api_healthy']
READY = {'type': 'Ready', 'status': 'True'}


@pytest.mark.parametrize('result,healthy', [
    ({'resources': [{'status': {'conditions': [READY], 'allocatable': {'memory': '8388608Ki'}}}]}, True),
    ({'resources': [{'status': {'conditions': [READY], 'allocatable': {'memory': '7Gi'}}}]}, False),
    ({'resources': []}, False),
])
def test_the_filter_gives_the_verdict(result, healthy):
    assert node_api_healthy(result, '8Gi') is healthy


def test_a_bad_expected_memory_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='node_api_healthy: '):
        node_api_healthy({'resources': []}, 'lots')
