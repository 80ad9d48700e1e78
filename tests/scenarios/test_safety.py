"""Safety on real nodes: --check writes nothing anywhere, and a kubelet whose command line carries a
reservation flag is refused before anything is written, with the flag and where it comes from.

Proofs are the files on the nodes (a hash of every file, directory and link under the trees the
collection could touch) and the stand-in kubelets' own logs, never what the playbook says.
These tests use the role's defaults: the nodes' kubelets have --config-dir, so the role targets
its drop-in there.
"""

from __future__ import annotations

import hashlib
import os
import time

from helpers.rollout import output_tail, run_playbook, starts_since
from nodes import nodeio, testnodes

WATCHED = ('/var/lib/kubelet', '/etc/kubernetes', '/var/lib/nodealloc', '/etc/systemd')
FLAG_DROP_IN = '/etc/systemd/system/kubelet.service.d/20-reservation-flags.conf'


def snapshot(node, trees=WATCHED):
    """{path: content hash, 'dir' or the link target} for everything under ``trees`` on a node."""
    found = {}
    for tree in trees:
        top = testnodes.node_path(node, tree)
        for directory, subdirs, files in os.walk(top):
            relative = '/' + os.path.relpath(directory, testnodes.node_path(node, '/'))
            found[relative] = 'dir'
            for name in subdirs + files:
                path = os.path.join(directory, name)
                key = os.path.join(relative, name)
                if os.path.islink(path):
                    found[key] = 'link:' + os.readlink(path)
                elif os.path.isfile(path):
                    with open(path, 'rb') as handle:
                        found[key] = hashlib.sha256(handle.read()).hexdigest()
    return found


def differences(before, after):
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def test_check_mode_of_every_playbook_leaves_every_file_byte_identical(fresh_fleet, tmp_path):
    nodes = fresh_fleet['nodes']
    first = nodes[0]
    # Something for rollback.yml to restore: a backup that differs from the config in force.
    config = testnodes.node_path(first, '/var/lib/kubelet/config.yaml')
    with open(config, encoding='utf-8') as handle:
        older = handle.read().replace('systemReserved:\n  memory: 100Mi', 'systemReserved:\n  memory: 300Mi')
    testnodes.write(config + '.20260101T000000.000000.nodealloc.bak', older)
    before = {node['name']: snapshot(node) for node in nodes}
    mark = time.time()

    recommend = run_playbook(fresh_fleet, 'playbooks/recommend.yml', '--check',
                             '-enodealloc_report_dir=%s' % tmp_path, '-ereservations_sample_seconds=1')
    apply = run_playbook(fresh_fleet, 'playbooks/apply.yml', '--check')
    # Its health checks (which check mode cannot satisfy: nothing was restored) are cut short.
    rollback = run_playbook(fresh_fleet, 'playbooks/rollback.yml', '--check', '-enodealloc_hosts=%s' % first['name'],
                            '-ereservations_health_timeout_seconds=2')

    after = {node['name']: snapshot(node) for node in nodes}
    assert {name: differences(before[name], after[name]) for name in before} == {name: [] for name in before}
    assert all(not starts_since(node, mark) for node in nodes)
    assert recommend.returncode == 0, output_tail(recommend)
    assert apply.returncode == 0, output_tail(apply)
    # Every node would change (the first run's change is far above the thresholds), so check mode was
    # exercised on the write path, towards the drop-in directory the kubelets read.
    output = ' '.join(apply.stdout.split())  # the YAML callback wraps long lines
    assert output.count('increase (unit kubelet.service, config /var/lib/kubelet/config.yaml, drop-in dir '
                        '/etc/kubernetes/kubelet.conf.d)') == len(nodes), output_tail(apply)
    # The restore is one on-node step; check mode ran it on the node (it reports the change it would make).
    output = ' '.join(rollback.stdout.split())
    assert 'TASK [Restore the newest backup, restart and verify on the node] *' in output, output_tail(rollback)
    assert 'changed: [%s]' % first['name'] in output, output_tail(rollback)


def test_a_reservation_flag_on_the_command_line_is_refused_before_any_write(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    drop_in = testnodes.node_path(node, FLAG_DROP_IN)
    # The stand-in ignores the flag; its value is the file's, so the decision is the first run's increase.
    testnodes.write(drop_in, '[Service]\nExecStart=\nExecStart=/usr/bin/python3 /usr/bin/kubelet '
                             '--config=/var/lib/kubelet/config.yaml --config-dir=/etc/kubernetes/kubelet.conf.d '
                             '--kubeconfig=/etc/kubernetes/kubelet.conf --kube-reserved=cpu=100m,memory=100Mi\n')
    try:
        restarted = time.time()
        testnodes.ssh(node, fresh_fleet['state_dir'], 'systemctl daemon-reload && systemctl restart kubelet.service')
        deadline = time.monotonic() + 30
        while not [e for e in nodeio.events(node) if e['event'] == 'healthy' and e['time'] >= restarted]:
            assert time.monotonic() < deadline, 'the stand-in did not become healthy with the flag'
            time.sleep(0.3)
        kubelet_trees = ('/var/lib/kubelet', '/etc/kubernetes', '/etc/systemd')
        before = snapshot(node, kubelet_trees)
        mark = time.time()
        result = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'])
        after = snapshot(node, kubelet_trees)
        with open(os.path.join(fresh_fleet['state_dir'], 'refusal-wall-seconds.txt'), 'w', encoding='utf-8') as out:
            out.write('%.1f\n' % result.wall_seconds)
        print('refusal: ansible-playbook wall time %.1f s' % result.wall_seconds)
    finally:
        os.unlink(drop_in)
        testnodes.ssh(node, fresh_fleet['state_dir'], 'systemctl daemon-reload && systemctl restart kubelet.service')
    assert result.returncode != 0
    assert 'refused before writing anything' in result.stdout
    assert '--kube-reserved=cpu=100m,memory=100Mi (from ExecStart in %s)' % FLAG_DROP_IN in result.stdout, \
        output_tail(result)
    assert differences(before, after) == []
    assert not starts_since(node, mark)
