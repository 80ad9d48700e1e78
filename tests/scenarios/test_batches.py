"""Growing batches and one class at a time on real nodes (issue 48, docs/rollout.md "Batches").

Twelve nspawn nodes of their own (node4 to node15, the slot's link indexes the session's three nodes leave free),
with a stand-in API server of their own on the host ends of their links, rolled by ``apply.yml`` in batches of
1, 3 and 8 with two forks (so the 3-node batch's steps are started on every node and then waited for): the stand-in
kubelet on one node of the 3-node batch refuses every new config, so that batch fails, the node is put back byte
for byte, and the run halts before the 8-node batch, whose nodes keep their config bytes and are never restarted.
The batch's two other nodes were written and restarted together with the failing one. And on the session's three
nodes, two classes: ``nodealloc_classes`` naming one rolls its nodes and leaves the other's files byte-identical.
Timing is not asserted: ``benchmarks/rollout.py --batches 1,3,8`` measures it (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest

from helpers.rollout import apply, config_digest, hosts_by_task, output_tail, starts_since
from nodes import nodeio, testnodes
from test_rollout import INITIAL_SYSTEM_RESERVED
from test_safety import snapshot

BATCHES = [1, 3, 8]
SERIAL_PLAY = 'PLAY [Set kubelet reservations from the measurements, batch by batch]'
STEP = 'TASK [nodealloc.kubelet.reservations : Write, restart and verify on the node'
WAIT = 'TASK [nodealloc.kubelet.reservations : Wait on the node for the step to end'


@pytest.fixture
def twelve_nodes(fleet, tmp_path):
    """Twelve more nodes beside the session's three (whose boot already cleaned up this slot), for this test only."""
    state_dir = str(tmp_path / 'twelve')
    os.makedirs(state_dir)
    key, public_key = testnodes.ensure_ssh_key(state_dir)
    taken = {node['index'] for node in fleet['nodes']}
    free = [index for index in testnodes.SLOT_INDEXES if index not in taken][:sum(BATCHES)]
    assert len(free) == sum(BATCHES), 'the slot has %d link indexes, %d free' % (len(testnodes.SLOT_INDEXES), len(free))
    nodes, apiserver = [], None
    try:
        for index in free:
            name = '%s%d' % (testnodes.SLOT_PREFIX, testnodes.SLOT_INDEXES.index(index) + 1)
            nodes.append(testnodes.start_node(name, index, public_key, state_dir))
            testnodes.write(os.path.join(state_dir, 'state.json'), json.dumps(nodes, indent=2))
        for node in nodes:
            testnodes.wait_for_port(node['address'], 22, 90)
        # Their kubelets report to the host end of their own links, on the slot's port: a server of their own there
        # (the session's listens on 127.0.0.1 and the three nodes' links), which the role's API check asks too.
        addresses = [testnodes.node_addresses(node['index'])[0] for node in nodes]
        apiserver, _kubeconfig = testnodes.start_apiserver(nodes, state_dir, addresses=addresses)
        kubeconfig = os.path.join(state_dir, 'kubeconfig-twelve')
        testnodes.write(kubeconfig, testnodes.KUBECONFIG % (addresses[0], testnodes.API_PORT), 0o600)
        for node in nodes:
            nodeio.wait_healthy(node)
        yield {'inventory': testnodes.write_inventory(state_dir, nodes, key), 'nodes': nodes, 'state_dir': state_dir,
               'kubeconfig': kubeconfig, 'extra_vars': fleet['extra_vars']}
    finally:
        if apiserver is not None:
            apiserver.terminate()
            apiserver.wait(timeout=10)
        testnodes.down(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)


def test_a_kubelet_failing_in_the_3_node_batch_halts_the_run_before_the_8_node_batch(twelve_nodes):
    fleet = twelve_nodes
    nodes = fleet['nodes']
    canary, second, bad, third, *last = nodes
    before = {node['name']: config_digest(node) for node in nodes}
    # The stand-in on `bad` refuses any config without the systemReserved it runs with now: every change.
    nodeio.set_faults(bad, {'refuse_config_lacking': '"systemReserved": ' + json.dumps(INITIAL_SYSTEM_RESERVED)})
    nodeio.ssh(bad, 'systemctl restart kubelet.service')
    nodeio.wait_healthy(bad)
    mark = time.time()
    # Two forks, fewer than the 3-node batch's nodes: its steps are still started on every node and then waited for
    # together (roles/reservations/tasks/apply.yml), the failing one's end read by kubelet_reservations_wait.
    result = apply(fleet, '--forks', '2', '-e', json.dumps({'nodealloc_serial': BATCHES}), '-e',
                   'reservations_health_timeout_seconds=20')
    output = result.stdout
    assert result.returncode != 0, output_tail(result)
    names = [node['name'] for node in nodes]
    # Two batches ran, the 3-node batch together; the third never started.
    stepped = hosts_by_task(output, STEP)
    assert stepped == [[canary['name']], sorted([second['name'], bad['name'], third['name']])], output_tail(result)
    assert output.count(SERIAL_PLAY) == 2, output_tail(result)
    # Each batch's steps were waited for after they all started, and the refusal was read there.
    assert hosts_by_task(output, WAIT) == stepped, output_tail(result)
    assert re.search(r'^fatal: \[%s\]: FAILED' % bad['name'], output.split(WAIT)[2], re.M), output_tail(result)
    # Said before the batch began (the YAML callback may fold the line).
    assert ('Batch 2 of 3: %s. If it fails, the rollout halts and leaves 8 node(s) untouched: %s.'
            % (', '.join(names[1:4]), ', '.join(names[4:]))) in ' '.join(output.split()), output_tail(result)
    for node in (canary, second, third):  # rolled, once each
        assert config_digest(node) != before[node['name']]
        assert len(starts_since(node, mark)) == 1, (node['name'], starts_since(node, mark))
    assert config_digest(bad) == before[bad['name']]  # put back byte for byte
    assert any(event['event'] == 'refused' for event in nodeio.events(bad) if event['time'] >= mark)
    for node in last:  # the 8-node batch: untouched
        assert config_digest(node) == before[node['name']], node['name']
        assert not starts_since(node, mark), node['name']
    # The batch's nodes restarted together: each of the three stopped before any of them was soaked and done.
    starts = {node['name']: starts_since(node, mark)[0]['time'] for node in (second, third)}
    refused = min(event['time'] for event in nodeio.events(bad)
                  if event['time'] >= mark and event['event'] == 'refused')
    assert max(starts.values()) - min(list(starts.values()) + [refused]) < 20, (starts, refused)
    for node in nodes:  # every node healthy at the end, the put-back one on its old config
        nodeio.wait_healthy(node)


def test_one_class_is_applied_and_the_other_classes_nodes_stay_byte_identical(fresh_fleet, tmp_path):
    fleet = dict(fresh_fleet)
    first, *others = fleet['nodes']
    inventory = tmp_path / 'classes.ini'
    classes = {first['name']: 'alpha'}
    classes.update((node['name'], 'beta') for node in others)
    with open(fleet['inventory'], encoding='utf-8') as handle:
        text = handle.read()
    inventory.write_text(re.sub(r'^(%s) ' % '|'.join(classes),
                                lambda match: '%s nodealloc_node_class=%s ' % (match.group(1), classes[match.group(1)]),
                                text, flags=re.M))
    fleet['inventory'] = str(inventory)
    trees = ('/var/lib/kubelet', '/etc/kubernetes', '/etc/systemd')
    before = snapshot(first, trees)
    rolled = {node['name']: config_digest(node) for node in others}
    mark = time.time()
    result = apply(fleet, '-e', 'nodealloc_classes=beta')
    assert result.returncode == 0, output_tail(result)
    for node in others:
        assert len(starts_since(node, mark)) == 1, (node['name'], output_tail(result))
        assert config_digest(node) != rolled[node['name']]
    assert snapshot(first, trees) == before  # every file, directory and link
    assert not starts_since(first, mark)
