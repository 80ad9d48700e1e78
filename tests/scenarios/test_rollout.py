"""Rollout scenarios on real nodes: systemd as PID 1, sshd, kubelet.service running the stand-in.

Each scenario runs playbooks/apply.yml over SSH against the whole fleet (FLEET_SIZE >= 3
nodes) and proves what happened from the stand-in kubelets' own logs and the files on
the nodes, never from what the playbook says about itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._quantity import parse_quantity

from nodes import testnodes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# A 3-s soak keeps these scenarios short; the soak scenario below runs the shipped 30 s.
NOISE_TOLERANT = {'reservations_sample_seconds': 1, 'reservations_health_poll_seconds': 1,
                  'reservations_health_soak_seconds': 3,
                  'reservations_change_threshold_min_bytes': 268435456,
                  # An increase also acts when less than half the headroom is left: 512 MiB keeps the host's
                  # memory noise (the nodes read its /proc/meminfo) from looking like that.
                  'reservations_memory_headroom_min_bytes': 536870912,
                  # CPU likewise, from the host's /proc/stat: a 1000m least headroom reaches the 50 % cap on these
                  # 2-CPU nodes, so the reserved CPU is the cap after the first run whatever the host is doing.
                  'reservations_cpu_headroom_min_millicores': 1000,
                  'reservations_change_threshold_min_millicores': 1500}


def command_for(fleet, *extra, check=False, playbook='playbooks/apply.yml'):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOST_KEY_CHECKING='False')
    # Every node reads the host's /proc/meminfo and /proc/stat, which also count the Ansible controller
    # running the test (tens of MiB per fork, a CPU burst as each play starts): thresholds of 256Mi
    # and 1500m keep that noise from looking like a change. The first run's changes are far larger.
    command = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet['inventory'], playbook] + [
        '-e%s=%s' % item for item in sorted(NOISE_TOLERANT.items())] + [
        '-ereservations_kubeconfig=%s' % fleet['kubeconfig'],
        # These scenarios prove the main-file path (the nodes' kubelets have --config-dir, where the
        # default would write a drop-in); the drop-in default is proven in test_safety.py.
        '-ereservations_use_drop_in=false'] + list(extra)
    if check:
        command.append('--check')
    return command, env


def log_output(fleet, stdout, stderr, start):
    test_name = os.environ.get('PYTEST_CURRENT_TEST', 'playbook').split('::')[-1].split(' ')[0]
    with open(os.path.join(fleet['state_dir'], '%s-%d.log' % (test_name, int(start))), 'a') as handle:
        handle.write(stdout + '\n--- stderr ---\n' + stderr)


def apply(fleet, *extra, check=False, playbook='playbooks/apply.yml'):
    command, env = command_for(fleet, *extra, check=check, playbook=playbook)
    start = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=900)
    result.wall_seconds = time.monotonic() - start
    log_output(fleet, result.stdout, result.stderr, start)
    return result


def config_digest(node):
    with open(testnodes.node_path(node, '/var/lib/kubelet/config.yaml'), 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def starts_since(node, mark):
    return [e for e in testnodes.events(node) if e['event'] == 'start' and e['time'] >= mark]


def restart_windows(nodes, mark):
    """(node, stop time, healthy time) for every restart since ``mark``, from the stand-ins' logs."""
    windows = []
    for node in nodes:
        log = [e for e in testnodes.events(node) if e['time'] >= mark]
        stops = [e['time'] for e in log if e['event'] == 'stop']
        healthy = [e['time'] for e in log if e['event'] == 'healthy']
        for stop in stops:
            after = [h for h in healthy if h >= stop]
            windows.append((node['name'], stop, after[0] if after else None))
    return sorted(windows, key=lambda w: w[1])


def test_happy_path_changes_every_node_once_in_order_never_two_at_once(fresh_fleet):
    nodes = fresh_fleet['nodes']
    mark = time.time()
    result = apply(fresh_fleet)
    assert result.returncode == 0, result.stdout[-3000:]
    for node in nodes:
        starts = starts_since(node, mark)
        assert len(starts) == 1, (node['name'], starts)  # one restart each
        assert 'cpu' in starts[0]['system_reserved']  # running the new reservations
    for node in nodes:  # the stand-in API server holds each Node Ready with the allocatable its kubelet reported
        with urllib.request.urlopen('http://127.0.0.1:6443/api/v1/nodes/%s' % node['name']) as response:
            status = json.load(response)['status']
        assert [c['status'] for c in status['conditions'] if c['type'] == 'Ready'] == ['True']
        with open(testnodes.node_path(node, '/var/lib/kubelet/config.yaml')) as handle:
            config = yaml.safe_load(handle)
        reserved = sum(parse_quantity(config[f]['memory']) for f in ('kubeReserved', 'systemReserved'))
        assert parse_quantity(status['allocatable']['memory']) == (
            parse_quantity(status['capacity']['memory']) - reserved - 100 * 1024 * 1024)  # default eviction
    windows = restart_windows(nodes, mark)
    assert [w[0] for w in windows] == [n['name'] for n in nodes]  # in inventory order
    for (_name, _stop, healthy), (_next, next_stop, _h) in zip(windows, windows[1:]):
        assert healthy is not None and healthy <= next_stop  # the next node stops only once this one is healthy
    print('rollout of %d nodes: %.1f s' % (len(nodes), result.wall_seconds))
    check_the_sampler_runs_and_writes_metrics_promtool_accepts(fresh_fleet, nodes[0])


def check_the_sampler_runs_and_writes_metrics_promtool_accepts(fleet, node):
    """A fresh node given the role has the sampler's timer running, and a run writes what the dashboard reads."""
    ssh = functools.partial(testnodes.ssh, node, fleet['state_dir'])
    assert ssh('systemctl is-enabled nodealloc-sampler.timer', check=False).stdout.strip() == 'enabled'
    assert ssh('systemctl is-active nodealloc-sampler.timer', check=False).stdout.strip() == 'active'
    # A oneshot: start returns once the run is over (joining a run the timer began, if any).
    started = ssh('systemctl start nodealloc-sampler.service', check=False)
    assert started.returncode == 0, started.stderr + ssh('journalctl -u nodealloc-sampler.service -n 20', check=False).stdout
    shown = ssh('systemctl show -p Result -p ExecMainStatus nodealloc-sampler.service').stdout.split()
    assert sorted(shown) == ['ExecMainStatus=0', 'Result=success'], (node['name'], shown)
    with open(os.path.join(ROOT, 'roles', 'reservations', 'defaults', 'main.yml')) as handle:
        textfile = yaml.safe_load(handle)['reservations_sampler_textfile_path']
    with open(testnodes.node_path(node, textfile)) as handle:
        text = handle.read()
    if shutil.which('promtool'):
        check = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
    with open(os.path.join(ROOT, 'monitoring', 'nodealloc-dashboard.json')) as handle:
        dashboard = set(re.findall(r'\bnodealloc_[a-z_]+\b', handle.read()))
    # Written only on cgroup v2 (these nodes share the host's v1 hierarchies), and only while a change is pending.
    conditional = {'nodealloc_pressure_stall_seconds_total', 'nodealloc_memory_recommended_reserved_bytes'}
    written = {line.split()[2] for line in text.splitlines() if line.startswith('# TYPE ')}
    assert len(dashboard) > 10 and dashboard - conditional <= written, sorted(dashboard - conditional - written)


def test_second_run_changes_nothing_and_restarts_nothing(fresh_fleet):
    assert apply(fresh_fleet).returncode == 0
    digests = [config_digest(n) for n in fresh_fleet['nodes']]
    mark = time.time()
    result = apply(fresh_fleet)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    decisions = [line for line in lines if 'memory: reserved now' in line]
    changed_tasks, task = [], None
    for line in lines:  # name what changed, should anything have
        task = line if line.startswith('TASK [') else task
        if line.startswith('changed:'):
            changed_tasks.append('%s %s' % (task, line))
    assert all(line.split('changed=')[1].startswith('0') for line in lines if 'changed=' in line), \
        (changed_tasks, decisions)
    assert [config_digest(n) for n in fresh_fleet['nodes']] == digests
    assert all(not starts_since(n, mark) for n in fresh_fleet['nodes'])


def test_check_mode_touches_nothing(fresh_fleet):
    digests = [config_digest(n) for n in fresh_fleet['nodes']]
    mark = time.time()
    result = apply(fresh_fleet, check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert [config_digest(n) for n in fresh_fleet['nodes']] == digests
    assert all(not starts_since(n, mark) for n in fresh_fleet['nodes'])
    for node in fresh_fleet['nodes']:
        assert not [f for f in os.listdir(testnodes.node_path(node, '/var/lib/kubelet')) if f.endswith('.bak')]


def test_refused_config_is_rolled_back_and_the_rollout_halts(fresh_fleet):
    first, bad, *rest = fresh_fleet['nodes']
    before = {n['name']: config_digest(n) for n in fresh_fleet['nodes']}
    # The stand-in on `bad` refuses any config whose systemReserved sets cpu: every recommendation does.
    testnodes.set_faults(bad, {'refuse_config_containing': '"systemReserved": {"cpu"'})
    testnodes.ssh(bad, fresh_fleet['state_dir'], 'systemctl restart kubelet.service')
    mark = time.time()
    result = apply(fresh_fleet, '-e', 'reservations_health_timeout_seconds=10')
    assert result.returncode != 0
    assert 'Restored /var/lib/kubelet/config.yaml from' in result.stdout
    assert config_digest(first) != before[first['name']]  # the node before it was changed
    assert config_digest(bad) == before[bad['name']]  # rolled back byte for byte
    bad_log = [e for e in testnodes.events(bad) if e['time'] >= mark]
    assert any(e['event'] == 'refused' for e in bad_log)
    last_start = [e for e in bad_log if e['event'] == 'start'][-1]
    assert last_start['system_reserved'] == {'memory': '100Mi'}  # running the old config again
    assert bad_log[-1]['event'] == 'healthy' or any(e['event'] == 'healthy' and e['time'] > last_start['time']
                                                    for e in bad_log)
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


def test_slow_but_within_timeout_passes(fresh_fleet):
    slow = fresh_fleet['nodes'][1]
    testnodes.set_faults(slow, {'healthy_after_seconds': 6})
    mark = time.time()
    result = apply(fresh_fleet, '-e', 'reservations_health_timeout_seconds=30')
    assert result.returncode == 0, result.stdout[-3000:]
    log = [e for e in testnodes.events(slow) if e['time'] >= mark]
    start = [e['time'] for e in log if e['event'] == 'start'][-1]
    healthy = [e['time'] for e in log if e['event'] == 'healthy' and e['time'] >= start][0]
    assert healthy - start >= 6
    assert all(len(starts_since(n, mark)) == 1 for n in fresh_fleet['nodes'])


def test_rollback_playbook_restores_the_last_backup(fresh_fleet):
    node = fresh_fleet['nodes'][0]
    original = config_digest(node)
    assert apply(fresh_fleet).returncode == 0
    assert config_digest(node) != original
    result = apply(fresh_fleet, '-e', 'nodealloc_hosts=%s' % node['name'], playbook='playbooks/rollback.yml')
    assert result.returncode == 0, result.stdout[-3000:]
    assert config_digest(node) == original
    with open(testnodes.node_path(node, '/var/lib/kubelet/config.yaml')) as handle:
        assert yaml.safe_load(handle)['systemReserved'] == {'memory': '100Mi'}


def test_runs_through_ansible_runner_like_awx(fresh_fleet, tmp_path, monkeypatch):
    import ansible_runner
    private = tmp_path / 'runner'
    (private / 'project').mkdir(parents=True)
    (private / 'inventory').mkdir()
    with open(fresh_fleet['inventory']) as handle:
        (private / 'inventory' / 'hosts').write_text(handle.read())
    (private / 'env').mkdir()
    (private / 'env' / 'envvars').write_text(yaml.safe_dump({
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(ROOT, '.build'), 'ANSIBLE_HOST_KEY_CHECKING': 'False'}))
    (private / 'env' / 'extravars').write_text(json.dumps(NOISE_TOLERANT))
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
