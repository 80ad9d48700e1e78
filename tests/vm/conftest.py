"""VM guests for the tests under tests/vm: booted once per session, in parallel, stopped at the end."""

from __future__ import annotations

import pytest

from nodes import vmnodes

# One cgroup v2 guest (the default of every current distribution) and one cgroup v1 guest.
GUESTS = [{'name': 'facts-v2', 'cgroup': 'v2', 'memory_mib': 1280},
          {'name': 'facts-v1', 'cgroup': 'v1', 'memory_mib': 1280}]


@pytest.fixture(scope='session')
def vm_guests(tmp_path_factory):
    reason = vmnodes.missing()
    if reason:
        pytest.skip(reason)
    state_dir = str(tmp_path_factory.mktemp('vms'))
    _inventory, nodes = vmnodes.up(GUESTS, state_dir)
    try:
        yield {node['name']: dict(node, state_dir=state_dir) for node in nodes}
    finally:
        vmnodes.down(state_dir)
