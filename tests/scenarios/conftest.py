"""A fleet of real test nodes (tests/nodes/testnodes.py) shared by the rollout scenarios."""

from __future__ import annotations

import os
import shutil

import pytest

from nodes import testnodes

# Three: a node changed, the node a fault hits, and one after it that must stay untouched (each more node
# costs every scenario a rollout step).
FLEET_SIZE = int(os.environ.get('NODEALLOC_FLEET_SIZE', '3'))


def _can_boot_nodes():
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ('systemd-nspawn', 'debootstrap', 'ssh', 'ip'))


@pytest.fixture(scope='session')
def fleet(tmp_path_factory):
    if not _can_boot_nodes():
        pytest.skip('needs root, systemd-nspawn, debootstrap, ssh and ip (make test installs them)')
    state_dir = str(tmp_path_factory.mktemp('fleet'))
    inventory, nodes = testnodes.up(FLEET_SIZE, state_dir)
    apiserver = None
    try:
        apiserver, kubeconfig = testnodes.start_apiserver(nodes, state_dir)
        yield {'inventory': inventory, 'nodes': nodes, 'state_dir': state_dir, 'kubeconfig': kubeconfig}
    finally:
        if apiserver is not None:
            apiserver.terminate()
            apiserver.wait(timeout=10)
        testnodes.down(state_dir)


@pytest.fixture
def fresh_fleet(fleet):
    testnodes.reset(fleet['nodes'], fleet['state_dir'])
    return fleet
