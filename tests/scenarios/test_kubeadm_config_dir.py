"""reservations_enable_config_dir on real nodes: a kubeadm-managed kubelet without --config-dir gets one through
kubeadm's KUBELET_EXTRA_ARGS, node by node; check mode and a second run change nothing; a kubelet that will not come
back with the flag gets its old command line back; a kubespray node is stopped before anything is written.

The nodes are made kubeadm nodes the way kubeadm's packages and ``kubeadm join`` leave them: the .deb's unit drop-in
10-kubeadm.conf and /var/lib/kubelet/kubeadm-flags.env, no /etc/default/kubelet, no drop-in directory. Proofs are the
nodes' files, the running kubelet's /proc/<MainPID>/cmdline and the stand-in kubelets' own logs.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import yaml

from helpers.rollout import changed_tasks, output_tail, recap_changed_counts
from nodes import nodeio, testnodes
from test_safety import WATCHED, differences, run_playbook, snapshot

from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._node.test__kubelet_ownership import (
    KUBEADM_DROP_IN as KUBEADM_UPSTREAM)

# kubernetes/release cmd/krel/templates/latest/kubeadm/10-kubeadm.conf as the kubeadm .deb installs it: into the
# package's unit directory, with /etc/sysconfig/kubelet rewritten to /etc/default/kubelet (kubeadm.spec, debbuild).
# One change: ExecStart runs the stand-in through python3, as the nodes' kubelet.service does, not /usr/bin/kubelet.
KUBEADM_DROP_IN = '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf'
KUBEADM_DROP_IN_TEXT = KUBEADM_UPSTREAM.replace('ExecStart=/usr/bin/kubelet ', 'ExecStart=/usr/bin/python3 /usr/bin/kubelet ')
# What kubeadm join writes there (cmd/kubeadm/app/phases/kubelet/flags.go WriteKubeletArgsToFile,
# KUBELET_KUBEADM_ARGS=%q); the stand-in ignores these flags.
KUBEADM_FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env'
KUBEADM_FLAGS_ENV_TEXT = ('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
                          '--pod-infra-container-image=registry.k8s.io/pause:3.10"\n')
EXTRA_ARGS_FILE = '/etc/default/kubelet'
NODE_CONFIG_DIR = '/etc/kubernetes/kubelet.conf.d'  # the test nodes' own --config-dir, and the role's default
# kubespray's kubelet.service.j2 (EnvironmentFile= its kubelet.env, $KUBELET_ARGS) as a drop-in over the nodes' unit.
KUBESPRAY_ENV = '/etc/kubernetes/kubelet.env'
KUBESPRAY_DROP_IN = '/etc/systemd/system/kubelet.service.d/10-kubespray-form.conf'
TREES = WATCHED + ('/etc/default', '/usr/lib/systemd/system/kubelet.service.d', '/usr/local/lib/nodealloc')
# Without /var/lib/nodealloc, where the installed sampler appends a sample every minute.
CONFIG_TREES = tuple(tree for tree in TREES if tree != '/var/lib/nodealloc')
ENABLE = '-ereservations_enable_config_dir=true'


def config_snapshot(node):
    """CONFIG_TREES without the bytecode the sampler's Python caches beside its module_utils on its first run: the
    timer's run writes it, not the playbook, at a time that depends on how busy the machine is (seen in the second
    run on a machine running the VM guests' pytest beside this one)."""
    return {path: digest for path, digest in snapshot(node, CONFIG_TREES).items() if '/__pycache__' not in path}


def restart_and_wait(fleet, node):
    """daemon-reload, restart kubelet.service and wait for the stand-in to say it is healthy."""
    mark = time.time()
    testnodes.ssh(node, fleet['state_dir'], 'systemctl daemon-reload && systemctl restart kubelet.service')
    deadline = time.monotonic() + 30
    while not [e for e in nodeio.events(node) if e['event'] == 'healthy' and e['time'] >= mark]:
        assert time.monotonic() < deadline, '%s: the stand-in did not become healthy' % node['name']
        time.sleep(0.3)


def make_kubeadm_node(fleet, node):
    testnodes.write(testnodes.node_path(node, KUBEADM_DROP_IN), KUBEADM_DROP_IN_TEXT)
    testnodes.write(testnodes.node_path(node, KUBEADM_FLAGS_ENV), KUBEADM_FLAGS_ENV_TEXT)
    shutil.rmtree(testnodes.node_path(node, NODE_CONFIG_DIR))  # empty after reset; kubeadm makes no such directory
    restart_and_wait(fleet, node)


def undo_kubeadm_node(fleet, node):
    for path in (KUBEADM_DROP_IN, KUBEADM_FLAGS_ENV, EXTRA_ARGS_FILE):
        if os.path.lexists(testnodes.node_path(node, path)):
            os.unlink(testnodes.node_path(node, path))
    os.makedirs(testnodes.node_path(node, NODE_CONFIG_DIR), exist_ok=True)  # reset() expects it
    restart_and_wait(fleet, node)


def kubelet_cmdline(fleet, node):
    """The running kubelet's command line, from /proc/<MainPID of kubelet.service>/cmdline on the node."""
    out = testnodes.ssh(node, fleet['state_dir'], 'pid=$(systemctl show -p MainPID --value kubelet.service); '
                        'echo $pid; tr "\\0" "\\n" < /proc/$pid/cmdline').stdout.splitlines()
    return int(out[0]), out[1:]


def extra_args(node):
    """KUBELET_EXTRA_ARGS from the node's /etc/default/kubelet, as systemd reads an EnvironmentFile."""
    with open(testnodes.node_path(node, EXTRA_ARGS_FILE), encoding='utf-8') as handle:
        lines = [line.strip() for line in handle if line.strip().startswith('KUBELET_EXTRA_ARGS=')]
    assert len(lines) == 1, lines
    return lines[0].partition('=')[2].strip('"').split()


def events_since(node, mark, kind):
    return [e for e in nodeio.events(node) if e['event'] == kind and e['time'] >= mark]


def test_kubeadm_nodes_get_config_dir_node_by_node_check_mode_and_second_run_change_nothing(fresh_fleet):
    nodes = fresh_fleet['nodes'][:2]
    hosts = '-enodealloc_hosts=%s' % ','.join(node['name'] for node in nodes)
    for node in nodes:
        make_kubeadm_node(fresh_fleet, node)
    try:
        for node in nodes:
            _pid, argv = kubelet_cmdline(fresh_fleet, node)
            assert '--config=/var/lib/kubelet/config.yaml' in argv and not [a for a in argv if a.startswith('--config-dir')]
        main_configs = {node['name']: snapshot(node, ('/var/lib/kubelet',))['/var/lib/kubelet/config.yaml'] for node in nodes}

        # Check mode first: it would add the flag and write the drop-in, and changes nothing (the drop-in directory
        # does not exist yet: the apply step plans it as empty instead of failing to lock it).
        before = {node['name']: snapshot(node, TREES) for node in nodes}
        mark = time.time()
        check = run_playbook(fresh_fleet, 'playbooks/apply.yml', '--check', hosts, ENABLE)
        assert check.returncode == 0, output_tail(check)
        assert {n['name']: differences(before[n['name']], snapshot(n, TREES)) for n in nodes} == {n['name']: [] for n in nodes}
        assert all(not events_since(node, mark, 'start') for node in nodes)
        assert set(recap_changed_counts(check.stdout)) != {0}, output_tail(check)  # it would change them

        mark = time.time()
        result = run_playbook(fresh_fleet, 'playbooks/apply.yml', hosts, ENABLE)
        assert result.returncode == 0, output_tail(result)
        for node in nodes:
            flags = [a for a in extra_args(node) if a.startswith('--config-dir=')]
            assert len(flags) == 1, extra_args(node)
            config_dir = flags[0].partition('=')[2]
            pid, argv = kubelet_cmdline(fresh_fleet, node)
            assert flags[0] in argv, argv  # the running kubelet has it, from KUBELET_EXTRA_ARGS
            assert os.listdir(testnodes.node_path(node, config_dir)) == ['50-nodealloc.conf']
            with open(testnodes.node_path(node, os.path.join(config_dir, '50-nodealloc.conf')), encoding='utf-8') as handle:
                drop_in = yaml.safe_load(handle)
            assert snapshot(node, ('/var/lib/kubelet',))['/var/lib/kubelet/config.yaml'] == main_configs[node['name']]
            # One restart for the flag and the reservations together, in the rollout's on-node step (before: one
            # restart for the flag outside the node lock and the soak, then one for the reservations); the last start
            # is the running kubelet, reading the drop-in and running its reservations.
            starts = events_since(node, mark, 'start')
            assert len(starts) == 1, (node['name'], starts)
            assert starts[-1]['pid'] == pid
            assert os.path.join(config_dir, '50-nodealloc.conf') in json.dumps(starts[-1]['sources'])
            assert (starts[-1]['kube_reserved'], starts[-1]['system_reserved']) == (
                drop_in['kubeReserved'], drop_in['systemReserved'])
        # Node by node: the second node's kubelet stops only once the first one is healthy again after its restart.
        first_healthy = max(e['time'] for e in events_since(nodes[0], mark, 'healthy'))
        second_stop = min(e['time'] for e in events_since(nodes[1], mark, 'stop'))
        assert first_healthy <= second_stop, (first_healthy, second_stop)

        before = {node['name']: config_snapshot(node) for node in nodes}
        mark = time.time()
        again = run_playbook(fresh_fleet, 'playbooks/apply.yml', hosts, ENABLE)
        assert again.returncode == 0, output_tail(again)
        assert set(recap_changed_counts(again.stdout)) == {0}, changed_tasks(again.stdout)
        assert {n['name']: differences(before[n['name']], config_snapshot(n)) for n in nodes} == {
            n['name']: [] for n in nodes}
        assert all(not events_since(node, mark, 'start') for node in nodes)

        # A rollback past the first change takes back what the role enabled: the flag (the extra-args file it
        # created) and the directory it created; the kubelet runs its old command line again.
        rollback = run_playbook(fresh_fleet, 'playbooks/rollback.yml', hosts)
        assert rollback.returncode == 0, output_tail(rollback)
        for node in nodes:
            assert not os.path.lexists(testnodes.node_path(node, EXTRA_ARGS_FILE))
            assert not os.path.lexists(testnodes.node_path(node, NODE_CONFIG_DIR))
            pid, argv = kubelet_cmdline(fresh_fleet, node)
            assert not [a for a in argv if a.startswith('--config-dir')], argv
            assert events_since(node, mark, 'start')[-1]['pid'] == pid
            assert snapshot(node, ('/var/lib/kubelet',))['/var/lib/kubelet/config.yaml'] == main_configs[node['name']]
    finally:
        for node in nodes:
            undo_kubeadm_node(fresh_fleet, node)


def test_a_kubelet_that_will_not_start_with_config_dir_gets_its_old_command_line_back(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    make_kubeadm_node(fresh_fleet, node)
    # A stale drop-in left in the directory that the kubelet refuses once --config-dir makes it read it (as a kubelet
    # older than 1.30 refuses the flag itself).
    testnodes.write(testnodes.node_path(node, os.path.join(NODE_CONFIG_DIR, '10-stale.conf')),
                    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
                    'staticPodPath: /etc/kubernetes/stale-manifests\n')
    nodeio.set_faults(node, {'refuse_config_containing': 'stale-manifests'})
    try:
        before = snapshot(node, ('/var/lib/kubelet', '/etc/default'))
        mark = time.time()
        result = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'], ENABLE,
                              '-ereservations_health_timeout_seconds=10')
        assert result.returncode != 0
        output = ' '.join(result.stdout.split())
        assert 'removed %s' % EXTRA_ARGS_FILE in output and 'the kubelet is healthy again' in output, output_tail(result)
        assert events_since(node, mark, 'refused')  # it did refuse with the flag
        assert differences(before, snapshot(node, ('/var/lib/kubelet', '/etc/default'))) == []
        deadline = time.monotonic() + 30
        while not events_since(node, mark, 'healthy'):
            assert time.monotonic() < deadline, 'the kubelet did not come back without --config-dir'
            time.sleep(0.3)
        pid, argv = kubelet_cmdline(fresh_fleet, node)
        assert not [a for a in argv if a.startswith('--config-dir')], argv
        assert events_since(node, mark, 'start')[-1]['pid'] == pid
    finally:
        os.unlink(testnodes.node_path(node, os.path.join(NODE_CONFIG_DIR, '10-stale.conf')))
        os.unlink(testnodes.node_path(node, '/etc/kubelet-standin/faults.json'))
        undo_kubeadm_node(fresh_fleet, node)


def test_a_kubespray_node_is_stopped_before_anything_is_written(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    testnodes.write(testnodes.node_path(node, KUBESPRAY_ENV),
                    'KUBELET_ARGS="--config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.conf"\n')
    testnodes.write(testnodes.node_path(node, KUBESPRAY_DROP_IN),
                    '[Service]\nEnvironmentFile=-%s\nExecStart=\nExecStart=/usr/bin/python3 /usr/bin/kubelet $KUBELET_ARGS\n'
                    % KUBESPRAY_ENV)
    try:
        restart_and_wait(fresh_fleet, node)
        before = snapshot(node, TREES)
        mark = time.time()
        result = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'], ENABLE)
        after = snapshot(node, TREES)
        starts = events_since(node, mark, 'start')
    finally:
        for path in (KUBESPRAY_ENV, KUBESPRAY_DROP_IN):
            os.unlink(testnodes.node_path(node, path))
        restart_and_wait(fresh_fleet, node)
    assert result.returncode != 0
    output = ' '.join(result.stdout.split())
    assert 'is managed by kubespray (kubespray: %s): add kubelet_custom_flags:' % KUBESPRAY_ENV in output, \
        output_tail(result)
    assert '--config-dir=%s' % NODE_CONFIG_DIR in output
    assert differences(before, after) == []
    assert not starts
