"""Kubelet version awareness on a real node: a cgroup v1 nspawn node (this host's v1 controllers) whose
stand-in kubelet has been "upgraded" to v1.35.0 (its version file changed, the running kubelet left alone, as a
package upgrade leaves it) is refused before any write, and the refusal names failCgroupV1. The stand-in's own
reading of the kubelet source (tests/standin/kubelet_logic/version.py) then proves the point: restarted as it
is, at 1.35 on cgroup v1, it does not start.

Proofs are the files on the node and the stand-in's own log, never only what the playbook says.
"""

from __future__ import annotations

import hashlib
import os
import time

from helpers.rollout import output_tail, run_playbook, starts_since
from nodes import nodeio, testnodes

KUBELET_TREES = ('/var/lib/kubelet', '/etc/kubernetes', '/etc/systemd', '/var/lib/nodealloc')


def snapshot(node):
    """{path: content hash or 'dir'} for everything under KUBELET_TREES on the node."""
    found = {}
    for tree in KUBELET_TREES:
        top = testnodes.node_path(node, tree)
        for directory, subdirs, files in os.walk(top):
            found[directory] = 'dir'
            for name in subdirs + files:
                path = os.path.join(directory, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    with open(path, 'rb') as handle:
                        found[path] = hashlib.sha256(handle.read()).hexdigest()
    return found


def _wait_for_event(node, event, since, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        found = [e for e in nodeio.events(node) if e['event'] == event and e['time'] >= since]
        if found:
            return found
        assert time.monotonic() < deadline, 'no %r event from the stand-in within %d s' % (event, seconds)
        time.sleep(0.3)


def test_a_1_35_kubelet_on_a_cgroup_v1_node_is_refused_before_any_write_naming_fail_cgroup_v1(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    # The nspawn nodes run on this host's cgroup v1 controllers (docs/testing.md): the premise of the test.
    assert nodeio.ssh(node, 'stat -fc %T /sys/fs/cgroup').stdout.strip() != 'cgroup2fs'
    nodeio.write_text(node, nodeio.STANDIN_VERSION, 'v1.35.0\n')
    try:
        assert nodeio.ssh(node, 'python3 /usr/bin/kubelet --version').stdout.strip() == 'Kubernetes v1.35.0'
        before = snapshot(node)
        mark = time.time()
        result = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'])
        after = snapshot(node)
        started = starts_since(node, mark)
        # What the refusal spared the node: the same config, restarted by the 1.35 binary, does not start.
        restarted = time.time()
        nodeio.ssh(node, 'systemctl restart kubelet.service', check=False)
        refused = _wait_for_event(node, 'refused', restarted)
    finally:
        nodeio.ssh(node, 'rm -f %s && systemctl restart kubelet.service' % nodeio.STANDIN_VERSION)
        nodeio.wait_healthy(node)
    output = ' '.join(result.stdout.split())  # the YAML callback wraps long lines
    assert result.returncode != 0, output_tail(result)
    assert 'refused before writing anything' in output, output_tail(result)
    assert 'kubelet v1.35.0 on a cgroup v1 node would not start' in output, output_tail(result)
    assert 'failCgroupV1' in output, output_tail(result)
    assert after == before
    assert started == []
    assert 'kubelet is configured to not run on a host using cgroup v1' in refused[0]['error']
