"""Rollout scenarios on real nodes: systemd as PID 1, sshd, kubelet.service running the stand-in.

Each scenario runs playbooks/apply.yml over SSH against the whole fleet (three nodes) and proves what
happened from the stand-in kubelets' own logs, the files on the nodes, their kubepods cgroup and the
stand-in API server, never from what the playbook says about itself. The scenarios that take
``rollout_fleet`` run on the nspawn nodes (tests/nodes/fleets.py), which read the host's /proc/meminfo
and so use noise-tolerant thresholds, and on three cgroup v2 VM guests with their own kernel (one each of
Debian 11, 12 and 13, their own python3 and systemd), memory at the shipped thresholds, with
NODEALLOC_VM_ROLLOUT=1; every run has one rollout there, a good canary and then the refused config and the dying
kubelet as one batch (test_rollout_onnode.py). The stand-in's log times come from each node's clock (a guest's is
set from the host's at boot).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time

import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._quantity import parse_quantity

from helpers.rollout import (BIN, ROOT, api_node_status, apply, changed_tasks, config_digest, output_tail,
                             recap_changed_counts, restart_windows, running_config, starts_since)
from nodes import nodeio, testnodes

MIB = 1024 * 1024
# The kubelet's default evictionHard memory.available (pkg/kubelet/apis/config/v1beta1/defaults_linux.go).
DEFAULT_EVICTION_HARD_BYTES = 100 * MIB
# What the nodes' first config reserves (testnodes.KUBELET_CONFIG, as kubeadm writes it, shortened).
INITIAL = yaml.safe_load(testnodes.KUBELET_CONFIG)
INITIAL_KUBE_RESERVED, INITIAL_SYSTEM_RESERVED = INITIAL['kubeReserved'], INITIAL['systemReserved']


def reserved_memory(config):
    return sum(parse_quantity(config[field]['memory']) for field in ('kubeReserved', 'systemReserved'))


def assert_rolled(fleet, node, mark):
    """Since ``mark`` the node's kubelet restarted once, on the new reservations, and its kernel and its Node status
    show them: kubepods capped at capacity minus them, allocatable the same less the hard eviction threshold; no async
    job file is left on it."""
    starts = starts_since(node, mark)
    assert len(starts) == 1, (node['name'], starts)  # one restart each
    config = running_config(node)
    assert (starts[0]['kube_reserved'], starts[0]['system_reserved']) == (
        config['kubeReserved'], config['systemReserved']) != (INITIAL_KUBE_RESERVED, INITIAL_SYSTEM_RESERVED)
    reserved = reserved_memory(config)
    # The node's kernel: MemTotal is the kubelet's memory capacity (cadvisor's MemoryCapacity), and the
    # kubepods cgroup is capped at capacity minus the reservations (enforceNodeAllocatable: pods).
    meminfo = nodeio.read_bytes(node, '/proc/meminfo').decode()
    capacity = int(re.search(r'^MemTotal:\s+(\d+) kB', meminfo, re.M).group(1)) * 1024
    limit = int(nodeio.read_bytes(node, '/sys/fs/cgroup/kubepods.slice/memory.max')
                or nodeio.read_bytes(node, '/sys/fs/cgroup/memory/kubepods.slice/memory.limit_in_bytes'))
    assert limit == capacity - reserved, (node['name'], limit, capacity, reserved)
    status = api_node_status(fleet, node)  # what the node's stand-in kubelet reported
    assert [c['status'] for c in status['conditions'] if c['type'] == 'Ready'] == ['True']
    assert parse_quantity(status['capacity']['memory']) == capacity
    assert parse_quantity(status['allocatable']['memory']) == capacity - reserved - DEFAULT_EVICTION_HARD_BYTES
    # The step's async job file was read and removed on the node (kubelet_reservations_wait): nothing left behind.
    assert nodeio.listdir(node, '/root/.ansible_async') == [], (node['name'], nodeio.listdir(node, '/root/.ansible_async'))


def test_happy_path_changes_every_node_once_in_order_and_a_second_run_changes_nothing(rollout_fleet):
    fleet = rollout_fleet
    nodes = fleet['nodes']
    mark = time.time()
    result = apply(fleet)
    assert result.returncode == 0, output_tail(result)
    for node in nodes:
        assert_rolled(fleet, node, mark)
    windows = restart_windows(nodes, mark)
    assert [w[0] for w in windows] == [n['name'] for n in nodes]  # in inventory order
    for (_name, _stop, healthy), (_next, next_stop, _h) in zip(windows, windows[1:]):
        assert healthy is not None and healthy <= next_stop  # the next node stops only once this one is healthy
    print('rollout of %d nodes: %.1f s' % (len(nodes), result.wall_seconds))
    assert_kept_and_sampled(nodes)
    assert_a_second_run_changes_nothing(fleet, nodes)


def assert_kept_and_sampled(nodes):
    """Each rolled node's step recorded its change as done, and the first node's sampler runs and reads it."""
    text = check_the_sampler_runs_and_writes_metrics_promtool_accepts(nodes[0])
    # The reservation applied, as the sampler's near-reservation flag reads it: what the config now holds.
    applied = json.loads(nodeio.read_bytes(nodes[0], '/var/lib/nodealloc/reservation.json'))
    assert applied['reserved_memory_bytes'] == reserved_memory(running_config(nodes[0]))
    # Written by the step itself (its status option) once the change was verified: nothing is pending any more.
    assert all(json.loads(nodeio.read_bytes(n, '/var/lib/nodealloc/decision.json'))['action'] == 'keep' for n in nodes)
    metrics = dict(line.rsplit(' ', 1) for line in text.splitlines() if not line.startswith('#'))
    assert int(metrics['nodealloc_memory_planned_headroom_bytes']) == applied['memory_headroom_bytes'] > 0
    assert metrics['nodealloc_memory_near_reservation'] in ('0', '1')


def assert_a_second_run_changes_nothing(fleet, nodes, *extra):
    """A second apply.yml over ``nodes`` (``extra``: its other arguments, e.g. the limit to them) changes and restarts
    nothing and runs no task in the serial play."""
    digests = [config_digest(n) for n in nodes]
    second_mark = time.time()
    # With a pause between batches: a batch whose nodes all keep their reservations has nothing to wait for.
    again = apply(fleet, '-e', 'reservations_pause_seconds=20', *extra)
    assert again.returncode == 0, output_tail(again)
    # Both resources' lines and what follows each (a wrapped line ends the figure): which one moved, and by which rule.
    lines = again.stdout.splitlines()
    decisions = [' '.join(lines[i:i + 2]) for i, line in enumerate(lines)
                 if 'memory: reserved now' in line or 'cpu: reserved now' in line]
    print('second run decisions:', *decisions, sep='\n  ')
    if recap_changed_counts(again.stdout) != [0] * len(nodes):
        # What the decision rested on: each node's recorded readings since the first run (shown with the failure).
        for node in nodes:
            print('%s history:' % node['name'])
            for line in (nodeio.read_bytes(node, '/var/lib/nodealloc/history.jsonl') or b'').decode().splitlines()[-40:]:
                print('  ' + line)
    assert recap_changed_counts(again.stdout) == [0] * len(nodes), (changed_tasks(again.stdout), decisions)
    assert [config_digest(n) for n in nodes] == digests
    assert all(not starts_since(n, second_mark) for n in nodes)
    # Nothing to change: the serial play holds only the nodes that roll, so it matches no host and runs no task (no
    # batch, no connection, no pause): a scheduled run over hundreds of nodes that keep costs nothing there.
    serial_play = again.stdout.split('PLAY [Set kubelet reservations from the measurements, batch by batch]', 1)[1]
    serial_play = serial_play.split('PLAY RECAP')[0]
    ran = [line for line in serial_play.splitlines() if re.match(r'(ok|changed|fatal|failed|unreachable): ', line)]
    assert ran == [] and 'skipping: no hosts matched' in serial_play, serial_play
    print('second run: %.1f s' % again.wall_seconds)


def check_the_sampler_runs_and_writes_metrics_promtool_accepts(node):
    """A fresh node given the role has the sampler's timer running, and a run writes what the dashboard reads."""
    assert nodeio.ssh(node, 'systemctl is-enabled nodealloc-sampler.timer', check=False).stdout.strip() == 'enabled'
    assert nodeio.ssh(node, 'systemctl is-active nodealloc-sampler.timer', check=False).stdout.strip() == 'active'

    def journal():
        return nodeio.ssh(node, 'journalctl -u nodealloc-sampler.service -n 20', check=False).stdout

    def start(prefix=''):
        # A oneshot: start returns once the run is over (joining a run the timer began, if any).
        started = nodeio.ssh(node, prefix + 'systemctl start nodealloc-sampler.service', check=False)
        if started.returncode != 0 and not nodeio.is_vm(node) and 'status=219/CGROUP' in journal():
            # nspawn nodes only (the host's cgroup v1 tree delegated to a container's systemd): now and then systemd
            # there cannot remove a finished run's group ("Failed to kill control group ...: Input/output error") and
            # the next start fails with 219/CGROUP; seen twice in some twenty runs, never on a VM guest, whose
            # systemd owns its kernel's hierarchy. Once more, after the group had time to go.
            time.sleep(5)
            nodeio.ssh(node, 'systemctl reset-failed nodealloc-sampler.service', check=False)
            started = nodeio.ssh(node, prefix + 'systemctl start nodealloc-sampler.service', check=False)
        assert started.returncode == 0, started.stderr + journal()

    start()
    shown = nodeio.ssh(node, 'systemctl show -p Result -p ExecMainStatus nodealloc-sampler.service').stdout.split()
    assert sorted(shown) == ['ExecMainStatus=0', 'Result=success'], (node['name'], shown)
    # The sandbox as systemd loaded it (module_utils/_sampler_unit.py), and the run's bytecode in the cache directory
    # it may write: the code's own directory is read-only to it, so nothing lands there.
    sandbox = nodeio.ssh(node, 'systemctl show -p ProtectSystem -p NoNewPrivileges -p PrivateNetwork '
                               'nodealloc-sampler.service').stdout.split()
    assert sorted(sandbox) == ['NoNewPrivileges=yes', 'PrivateNetwork=yes', 'ProtectSystem=strict'], sandbox
    cached = nodeio.ssh(node, 'find /var/cache/nodealloc-sampler -name "*.pyc" | wc -l; '
                              'find /usr/local/lib/nodealloc -name __pycache__ | wc -l').stdout.split()
    assert int(cached[0]) > 0 and cached[1] == '0', cached
    with open(os.path.join(ROOT, 'roles', 'reservations', 'defaults', 'main.yml')) as handle:
        textfile = yaml.safe_load(handle)['reservations_sampler_textfile_path']
    text = nodeio.read_bytes(node, textfile).decode()
    if shutil.which('promtool'):
        check = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
    with open(os.path.join(ROOT, 'monitoring', 'nodealloc-dashboard.json')) as handle:
        dashboard = set(re.findall(r'\bnodealloc_[a-z_]+\b', handle.read()))
    # Written only while a change is pending, and only on cgroup v2 (VM guests; nspawn nodes have the host's v1).
    conditional = {'nodealloc_memory_recommended_reserved_bytes'}
    if nodeio.read_bytes(node, '/sys/fs/cgroup/cgroup.controllers') is None:
        conditional.add('nodealloc_pressure_stall_seconds_total')
    written = {line.split()[2] for line in text.splitlines() if line.startswith('# TYPE ')}
    assert len(dashboard) > 10 and dashboard - conditional <= written, sorted(dashboard - conditional - written)
    # While a step holds the node lock (here flock(1) holds it as kubelet_reservations_apply does), a run records
    # nothing and still succeeds. The timer is stopped meanwhile so that no run it starts can be the one joined.
    nodeio.ssh(node, 'systemctl stop nodealloc-sampler.timer')
    start()
    history = nodeio.read_bytes(node, '/var/lib/nodealloc/history.jsonl')
    try:
        start('flock /var/lib/nodealloc/step ')
    finally:
        nodeio.ssh(node, 'systemctl start nodealloc-sampler.timer')
    assert nodeio.read_bytes(node, '/var/lib/nodealloc/history.jsonl') == history
    assert 'not recorded: a nodealloc step holds the node lock' in journal()
    assert 'nodealloc_sample_recorded 0\n' in nodeio.read_bytes(node, textfile).decode()
    return text


def refuse_every_change(node):
    """The stand-in on ``node`` refuses any config without the systemReserved it runs with now: every change."""
    nodeio.set_faults(node, {'refuse_config_lacking': '"systemReserved": ' + json.dumps(INITIAL_SYSTEM_RESERVED)})
    nodeio.ssh(node, 'systemctl restart kubelet.service')
    nodeio.wait_healthy(node)


def assert_put_back(node, before, mark, event):
    """Since ``mark`` the node's kubelet logged ``event`` ('refused', 'died'), and its step put the old config back
    byte for byte, the kubelet healthy on it, the change still pending; returns that pending decision."""
    assert config_digest(node) == before[node['name']], node['name']  # rolled back byte for byte
    log = [e for e in nodeio.events(node) if e['time'] >= mark]
    assert any(e['event'] == event for e in log), (node['name'], log)
    last_start = [e for e in log if e['event'] == 'start'][-1]
    assert last_start['system_reserved'] == INITIAL_SYSTEM_RESERVED, node['name']  # running the old config again
    assert any(e['event'] == 'healthy' and e['time'] >= last_start['time'] for e in log), node['name']
    # The step wrote its failure status after the restore: the change it could not apply is still pending.
    pending = json.loads(nodeio.read_bytes(node, '/var/lib/nodealloc/decision.json'))
    assert pending['action'] in ('increase', 'decrease'), (node['name'], pending)
    return pending


def test_refused_config_is_rolled_back_byte_for_byte_and_the_rollout_halts(rollout_fleet):
    fleet = rollout_fleet
    first, bad, *rest = fleet['nodes']
    before = {n['name']: config_digest(n) for n in fleet['nodes']}
    refuse_every_change(bad)
    mark = time.time()
    result = apply(fleet, '-e', 'reservations_health_timeout_seconds=20')
    assert result.returncode != 0
    assert 'Restored /var/lib/kubelet/config.yaml from' in result.stdout, output_tail(result)
    assert config_digest(first) != before[first['name']]  # the node before it was changed
    assert assert_put_back(bad, before, mark, 'refused')['recommended_kubepods_memory_limit_bytes'] > 0
    for node in rest:  # untouched
        assert config_digest(node) == before[node['name']]
        assert not starts_since(node, mark)


def test_a_node_whose_api_status_never_updates_is_put_back_and_the_rollout_halts(fresh_fleet):
    """The API server check's rescue (roles/reservations/tasks/apply.yml): the step's write, restart, /healthz and
    soak all pass, but the node's Node in the API server keeps the old allocatable (the stand-in's no_node_status
    fault: its status updates never arrive, as with an expired client certificate or a cut route). The role puts
    the backup back on the path the plan named, restarts the kubelet on it, leaves the change pending, forgets the
    applied reservation and halts: the node after it is not touched."""
    fleet = fresh_fleet
    first, silent, *rest = fleet['nodes']
    before = {n['name']: config_digest(n) for n in fleet['nodes']}
    nodeio.set_faults(silent, {'no_node_status': True})
    nodeio.ssh(silent, 'systemctl restart kubelet.service')
    nodeio.wait_healthy(silent)
    mark = time.time()
    result = apply(fleet, '-e', 'reservations_health_timeout_seconds=12', '-e', 'reservations_health_poll_seconds=2')
    assert result.returncode != 0
    assert '%s: the API server check failed' % silent['name'] in result.stdout, output_tail(result)
    assert config_digest(first) != before[first['name']]  # the node before it was changed
    assert config_digest(silent) == before[silent['name']]  # put back byte for byte
    log = [e for e in nodeio.events(silent) if e['time'] >= mark]
    starts = [e for e in log if e['event'] == 'start']
    # One start on the new reservations (healthy, so the step itself succeeded), one on the restored file.
    assert len(starts) == 2 and starts[0]['system_reserved'] != INITIAL_SYSTEM_RESERVED, starts
    assert starts[-1]['system_reserved'] == INITIAL_SYSTEM_RESERVED
    assert any(e['event'] == 'healthy' and e['time'] >= starts[-1]['time'] for e in log)
    pending = json.loads(nodeio.read_bytes(silent, '/var/lib/nodealloc/decision.json'))
    assert pending['action'] in ('increase', 'decrease')
    assert nodeio.read_bytes(silent, '/var/lib/nodealloc/reservation.json') is None  # no longer in force
    for node in rest:  # untouched
        assert config_digest(node) == before[node['name']]
        assert not starts_since(node, mark)


def test_node_unreachable_mid_rollout_halts_before_the_rest(fresh_fleet):
    first, lost, *rest = fresh_fleet['nodes']
    mark = time.time()
    before = {n['name']: config_digest(n) for n in rest}

    def cut_link_when_first_restarts():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not starts_since(first, mark):
            time.sleep(0.1)
        subprocess.run(['ip', 'link', 'set', lost['host_if'], 'down'], check=True)

    cutter = threading.Thread(target=cut_link_when_first_restarts)
    cutter.start()
    try:
        result = apply(fresh_fleet)
    finally:
        cutter.join()
        subprocess.run(['ip', 'link', 'set', lost['host_if'], 'up'], check=True)
    assert result.returncode != 0
    assert 'UNREACHABLE' in result.stdout
    assert starts_since(first, mark)
    for node in rest:
        assert config_digest(node) == before[node['name']] and not starts_since(node, mark)


def test_rollback_playbook_restores_the_last_backup(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    original = config_digest(node)
    # One node is all a rollback needs (the fleet-wide rollout is the happy path's).
    assert apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name']).returncode == 0
    assert config_digest(node) != original
    assert nodeio.read_bytes(node, '/var/lib/nodealloc/reservation.json') is not None
    result = apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name'], playbook='playbooks/rollback.yml')
    assert result.returncode == 0, output_tail(result)
    assert config_digest(node) == original
    # The applied reservation is gone with it: the sampler's near-reservation flag no longer compares with it.
    assert nodeio.read_bytes(node, '/var/lib/nodealloc/reservation.json') is None
    with open(testnodes.node_path(node, '/var/lib/kubelet/config.yaml')) as handle:
        assert yaml.safe_load(handle)['systemReserved'] == {'memory': '100Mi'}
    # Rolling back onto the config already in force changes nothing and restarts nothing.
    mark = time.time()
    result = apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name'], playbook='playbooks/rollback.yml')
    assert result.returncode == 0 and not any(recap_changed_counts(result.stdout)), output_tail(result)
    assert not starts_since(node, mark)
    # The role's variables apply to a rollback as to the rollout: with a change to undo again, a /healthz URL
    # nothing answers on fails the rollback, naming it; the step then puts back the config it found (a failed
    # rollback used to leave the restored backup, on which the kubelet had not been seen healthy).
    assert apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name']).returncode == 0
    applied = config_digest(node)
    assert applied != original
    unanswered = 'http://127.0.0.1:9/healthz'
    result = apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name'], '-e', 'reservations_healthz_url=%s' % unanswered,
                   '-e', 'reservations_health_timeout_seconds=4', playbook='playbooks/rollback.yml')
    assert result.returncode != 0 and unanswered in result.stdout, output_tail(result)
    assert 'Put back what the kubelet ran before the rollback' in ' '.join(result.stdout.split()), output_tail(result)
    assert config_digest(node) == applied


def test_runs_through_ansible_runner_like_awx(fresh_fleet, tmp_path, monkeypatch):
    """Three things on one fresh fleet, each of which took a fleet reset and a rollout of its own (the nspawn line's
    wall is the suite's: issue 48): check mode with the main-file target touches nothing (the drop-in target's is
    test_safety.py's, every file hashed); then the rollout through ansible-runner as AWX runs it, where the middle
    node's kubelet is slow to become healthy (6 s) but within the health timeout, and passes."""
    digests = [config_digest(n) for n in fresh_fleet['nodes']]
    mark = time.time()
    result = apply(fresh_fleet, check=True)
    assert result.returncode == 0, output_tail(result)
    assert [config_digest(n) for n in fresh_fleet['nodes']] == digests
    assert all(not starts_since(n, mark) for n in fresh_fleet['nodes'])
    for node in fresh_fleet['nodes']:
        assert not [f for f in os.listdir(testnodes.node_path(node, '/var/lib/kubelet')) if f.endswith('.bak')]

    slow = fresh_fleet['nodes'][1]
    nodeio.set_faults(slow, {'healthy_after_seconds': 6})
    import ansible_runner
    private = tmp_path / 'runner'
    (private / 'project').mkdir(parents=True)
    (private / 'inventory').mkdir()
    with open(fresh_fleet['inventory']) as handle:
        (private / 'inventory' / 'hosts').write_text(handle.read())
    (private / 'env').mkdir()
    (private / 'env' / 'envvars').write_text(yaml.safe_dump({
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(ROOT, '.build'), 'ANSIBLE_HOST_KEY_CHECKING': 'False'}))
    (private / 'env' / 'extravars').write_text(json.dumps(dict(fresh_fleet['extra_vars'],
                                                               reservations_health_timeout_seconds=30)))
    mark = time.time()
    monkeypatch.setenv('PATH', BIN + os.pathsep + os.environ.get('PATH', ''))
    runner = ansible_runner.run(private_data_dir=str(private), project_dir=ROOT, playbook='playbooks/apply.yml',
                                quiet=True)
    assert runner.status == 'successful' and runner.rc == 0
    ok_hosts = {e['event_data']['host'] for e in runner.events
                if e['event'] == 'runner_on_ok'
                and e['event_data'].get('task') == 'Write, restart and verify on the node (it restores the backup itself on failure)'}
    assert ok_hosts == {n['name'] for n in fresh_fleet['nodes']}
    assert (private / 'artifacts' / runner.config.ident / 'job_events').is_dir()
    # Every node changed (the write, and the sampler the role installs by default); none failed.
    assert set(runner.stats['changed']) == {n['name'] for n in fresh_fleet['nodes']} and not runner.stats['failures']
    # The slow node: healthy no sooner than 6 s after its start, restarted once like the others.
    log = [e for e in nodeio.events(slow) if e['time'] >= mark]
    start = [e['time'] for e in log if e['event'] == 'start'][-1]
    healthy = [e['time'] for e in log if e['event'] == 'healthy' and e['time'] >= start][0]
    assert healthy - start >= 6
    assert all(len(starts_since(n, mark)) == 1 for n in fresh_fleet['nodes'])
