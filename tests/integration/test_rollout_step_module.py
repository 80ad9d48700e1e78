"""kubelet_reservations_apply as Ansible runs it (a process fed ANSIBLE_MODULE_ARGS), against a scripted systemd.

``systemctl`` is a small script first on PATH that keeps the unit's MainPID and NRestarts in files
(a restart gives a new MainPID), and ``/healthz`` is a local HTTP server whose answer the test
sets. The config, backups, journal and lock are real files. A step killed with SIGKILL in the
middle of its soak must be undone by the next step, and only over what it wrote.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

MODULE = 'ansible_collections.nodealloc.kubelet.plugins.modules.kubelet_reservations_apply'
OLD = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
systemReserved:
  memory: 100Mi
"""
SYSTEMCTL = """#!/bin/sh
# systemctl restart UNIT | systemctl show UNIT --property=...
state="$FAKE_SYSTEMD"
case "$1" in
  restart)
    echo restart >> "$state/log"
    echo $(( $(cat "$state/pid") + 1 )) > "$state/pid.new" && mv "$state/pid.new" "$state/pid" ;;
  show)
    echo "ActiveState=active"; echo "SubState=running"
    echo "MainPID=$(cat "$state/pid")"; echo "NRestarts=0" ;;
esac
"""


class Healthz(http.server.BaseHTTPRequestHandler):
    answer = (200, b'ok')

    def do_GET(self):
        status, body = type(self).answer
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def node(tmp_path):
    fake = tmp_path / 'systemd'
    fake.mkdir()
    (fake / 'pid').write_text('100\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'systemctl').write_text(SYSTEMCTL)
    (bin_dir / 'systemctl').chmod(0o755)
    (tmp_path / 'no-cgroups').mkdir()  # the kubepods check is skipped: no cgroup of the host is read
    config_dir = tmp_path / 'kubelet'
    config_dir.mkdir()
    (config_dir / 'config.yaml').write_text(OLD)
    server = http.server.HTTPServer(('127.0.0.1', 0), Healthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Healthz.answer = (200, b'ok')
    env = dict(os.environ, FAKE_SYSTEMD=str(fake), PATH='%s:%s' % (bin_dir, os.environ['PATH']))
    args = {'path': str(config_dir / 'config.yaml'), 'kube_reserved': {'memory': '300Mi'},
            'system_reserved': {'memory': '700Mi', 'cpu': '200m'}, 'kubepods_margin': '0',
            'healthz_url': 'http://127.0.0.1:%d/healthz' % server.server_address[1],
            'health_timeout': 3, 'health_poll': 0.2, 'soak_seconds': 1, 'state_dir': str(tmp_path / 'step'),
            'controller': 'test-controller', 'cgroup_root': str(tmp_path / 'no-cgroups')}
    try:
        yield {'dir': config_dir, 'fake': fake, 'env': env, 'args': args, 'tmp': tmp_path}
    finally:
        server.shutdown()
        server.server_close()


def start(node, **overrides):
    args_file = node['tmp'] / ('args-%d.json' % time.monotonic_ns())
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(node['args'], **overrides)}))
    return subprocess.Popen([sys.executable, '-m', MODULE, str(args_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=node['env'])


def finish(process):
    stdout, stderr = process.communicate(timeout=120)
    assert 'Traceback' not in stdout + stderr, stderr
    return json.loads(stdout)


def run(node, **overrides):
    return finish(start(node, **overrides))


def config(node):
    return (node['dir'] / 'config.yaml').read_text()


def backups(node):
    return [(node['dir'] / n).read_text() for n in sorted(os.listdir(node['dir'])) if n.endswith('.nodealloc.bak')]


def restarts(node):
    log = node['fake'] / 'log'
    return len(log.read_text().splitlines()) if log.exists() else 0


def wait_for(predicate, seconds=60):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def holds_open(process, directory):
    """Whether ``process`` has ``directory`` open: the node lock's descriptor, opened just before it tries the lock."""
    fds = '/proc/%d/fd' % process.pid
    try:
        names = os.listdir(fds)
    except OSError:
        return False
    for name in names:
        try:
            if os.path.realpath(os.readlink(os.path.join(fds, name))) == os.path.realpath(directory):
                return True
        except OSError:
            pass
    return False


def test_applies_verifies_soaks_and_leaves_nothing_behind(node):
    result = run(node)
    assert result['changed'] and not result.get('failed'), result
    assert yaml.safe_load(config(node))['systemReserved'] == {'memory': '700Mi', 'cpu': '200m'}
    assert backups(node) == [OLD] and restarts(node) == 1
    assert result['health']['soak_seconds'] == 1 and result['health']['main_pid'] == 101
    assert os.listdir(node['tmp'] / 'step') == []  # no journal, no holder
    again = run(node)
    assert not again['changed'] and restarts(node) == 1  # nothing to do, nothing restarted


def test_unhealthy_kubelet_is_restored_on_the_node_with_the_reason(node):
    Healthz.answer = (500, b'[-]kubelet refused its config')
    result = run(node)
    assert result['failed']
    assert 'waited 3 s for unit kubelet.service active' in result['msg']
    assert "HTTP 500 '[-]kubelet refused its config'" in result['msg']
    assert 'Restored %s from' % (node['dir'] / 'config.yaml') in result['msg']
    assert config(node) == OLD and restarts(node) == 2  # the new config, then the restored one


def test_a_step_killed_mid_soak_is_undone_by_the_next_step(node):
    process = start(node, soak_seconds=60)
    wait_for(lambda: restarts(node) == 1 and (node['tmp'] / 'step' / 'step.json').exists())
    process.send_signal(signal.SIGKILL)
    process.communicate()
    written = config(node)
    assert written != OLD  # a config nobody verified
    result = run(node)
    assert not result.get('failed'), result
    assert 'was killed before verifying its change' in result['recovered']
    assert 'Restored %s from' % (node['dir'] / 'config.yaml') in result['recovered']
    # Undone (one restart), then applied and verified again (another).
    assert restarts(node) == 3 and config(node) == written and result['changed']
    assert all(b == OLD for b in backups(node))
    assert os.listdir(node['tmp'] / 'step') == []


def test_recovery_never_overwrites_what_someone_else_wrote_since(node):
    process = start(node, soak_seconds=60)
    wait_for(lambda: restarts(node) == 1 and (node['tmp'] / 'step' / 'step.json').exists())
    process.send_signal(signal.SIGKILL)
    process.communicate()
    theirs = OLD.replace('100Mi', '900Mi')
    (node['dir'] / 'config.yaml').write_text(theirs)
    result = run(node, state='restored', backup_file=str(node['tmp'] / 'none'), only_if_sha256='0' * 64)
    assert 'no longer holds what this step wrote' in result['recovered']
    assert config(node) == theirs and restarts(node) == 1


def test_second_step_waits_then_refuses_naming_the_holder(node):
    first = start(node, soak_seconds=60)
    wait_for((node['tmp'] / 'step' / 'holder.json').exists)
    try:
        result = run(node, node_lock_timeout=1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    assert result['failed']
    assert 'another nodealloc step holds the node lock' in result['msg']
    assert 'pid %d' % first.pid in result['msg'] and 'from controller test-controller' in result['msg']


def test_rollback_restores_the_newest_backup_and_verifies(node):
    assert run(node)['changed']
    result = run(node, state='restored')
    assert result['changed'] and not result.get('failed'), result
    assert config(node) == OLD and restarts(node) == 2
    assert run(node, state='restored')['changed'] is False  # already on it: no restart
    assert restarts(node) == 2


def test_rollback_of_a_drop_in_removes_the_one_we_created(node):
    drop_ins = node['dir'] / 'conf.d'
    drop_ins.mkdir()
    ours = drop_ins / '50-nodealloc.conf'
    assert run(node, drop_in_dir=str(drop_ins))['changed'] and ours.exists()
    result = run(node, state='restored', drop_in_dir=str(drop_ins))
    assert result['changed'] and not result.get('failed'), result
    assert not ours.exists() and config(node) == OLD  # before our first write there was no drop-in
    assert restarts(node) == 2


def test_rollback_of_a_drop_in_restores_its_newest_backup(node):
    drop_ins = node['dir'] / 'conf.d'
    drop_ins.mkdir()
    ours = drop_ins / '50-nodealloc.conf'
    assert run(node, drop_in_dir=str(drop_ins))['changed']
    first = ours.read_text()
    assert run(node, drop_in_dir=str(drop_ins), system_reserved={'memory': '900Mi'})['changed']
    assert ours.read_text() != first
    result = run(node, state='restored', drop_in_dir=str(drop_ins))
    assert result['changed'] and not result.get('failed'), result
    assert ours.read_text() == first and config(node) == OLD  # the drop-in's own backup; the main file untouched


def test_a_step_that_waited_changes_nothing_and_says_for_whom(node):
    # health_timeout: the first may be stopped below while it waits for health.
    first = start(node, soak_seconds=3, health_timeout=60)
    wait_for((node['tmp'] / 'step' / 'holder.json').exists)
    # The first holds the lock. Stopped, it cannot let go before the second is at the lock, however slowly the second
    # starts (the first's 3 s soak was the second's whole margin on a busy machine).
    first.send_signal(signal.SIGSTOP)
    try:
        waiting = start(node, system_reserved={'memory': '900Mi', 'cpu': '300m'}, node_lock_timeout=60)
        wait_for(lambda: holds_open(waiting, node['tmp'] / 'step') or waiting.poll() is not None)
    finally:
        first.send_signal(signal.SIGCONT)
    second = finish(waiting)
    first_result = json.loads(first.communicate(timeout=60)[0])
    assert first_result['changed'] and not first_result.get('failed')
    assert not second['changed'] and not second.get('failed')
    assert 'for the node lock held by another step (pid %d' % first.pid in second['msg']
    assert yaml.safe_load(config(node))['systemReserved'] == {'memory': '700Mi', 'cpu': '200m'}  # the first's, kept
    assert restarts(node) == 1


def test_a_config_changed_since_it_was_measured_is_left_alone(node):
    result = run(node, measured_reserved={'kube_reserved': {}, 'system_reserved': {'memory': '50Mi'}})
    assert not result['changed'] and 'the config changed since this node was measured' in result['msg']
    assert config(node) == OLD and restarts(node) == 0
    result = run(node, measured_reserved={'kube_reserved': {}, 'system_reserved': {'memory': '100Mi'}})
    assert result['changed'] and restarts(node) == 1


def test_a_rollback_the_kubelet_does_not_come_up_on_is_undone(node):
    # Before: a failed rollback left the restored backup in place, on a kubelet that did not come up on it.
    assert run(node)['changed']
    applied = config(node)
    before = backups(node)
    Healthz.answer = (500, b'not ok')
    result = run(node, state='restored')
    assert result.get('failed') is True, result
    assert 'the rollback to ' in result['msg'] and 'Put back what the kubelet ran before the rollback' in result['msg']
    assert config(node) == applied  # as the rollback found it
    assert restarts(node) == 3  # the apply, the rollback, the undo
    assert backups(node) == before  # the kept copy is no backup a later rollback would take
    assert not [n for n in os.listdir(node['dir']) if n.endswith('.nodealloc.undo')]
    assert not (node['tmp'] / 'step' / 'step.json').exists()  # the journal is cleared


def enable_args(node, config_dir):
    return dict(drop_in_dir=str(config_dir), enable_config_dir=str(config_dir),
                extra_args_file=str(node['tmp'] / 'default-kubelet'))


def test_config_dir_is_enabled_inside_the_step_and_a_rollback_takes_it_back(node):
    # Before: enable_config_dir.yml edited KUBELET_EXTRA_ARGS and restarted outside the node lock and the soak, and a
    # rollback left the flag and the directory behind.
    env = node['tmp'] / 'default-kubelet'
    env.write_text('KUBELET_EXTRA_ARGS="--v=2"\n')
    config_dir = node['dir'] / 'kubelet.conf.d'
    result = run(node, **enable_args(node, config_dir))
    assert result['changed'] and not result.get('failed'), result
    assert env.read_text() == 'KUBELET_EXTRA_ARGS="--v=2 --config-dir=%s"\n' % config_dir
    assert os.listdir(config_dir) == ['50-nodealloc.conf'] and config(node) == OLD
    assert restarts(node) == 1 and result['health']['soak_seconds'] == 1  # one restart for both, soaked
    assert os.listdir(node['tmp'] / 'step') == ['config_dir.json']  # no journal: what a rollback takes back
    assert not run(node, **enable_args(node, config_dir))['changed'] and restarts(node) == 1
    rollback = run(node, state='restored', drop_in_dir=str(config_dir))
    assert rollback['changed'] and not rollback.get('failed'), rollback
    assert env.read_text() == 'KUBELET_EXTRA_ARGS="--v=2"\n' and not config_dir.exists()
    assert restarts(node) == 2 and rollback['health']['soak_seconds'] == 1
    assert os.listdir(node['tmp'] / 'step') == []


def test_a_kubelet_unhealthy_with_config_dir_gets_its_old_command_line_back_in_the_step(node):
    config_dir = node['dir'] / 'kubelet.conf.d'
    Healthz.answer = (500, b'[-]unknown flag: --config-dir')
    result = run(node, **enable_args(node, config_dir))
    assert result['failed'] and "unknown flag: --config-dir" in result['msg'], result
    assert 'removed %s' % (node['tmp'] / 'default-kubelet') in result['msg']
    assert not (node['tmp'] / 'default-kubelet').exists() and not config_dir.exists()
    assert restarts(node) == 2 and os.listdir(node['tmp'] / 'step') == []


def test_a_rollback_leaves_a_config_dir_someone_else_made(node):
    config_dir = node['dir'] / 'kubelet.conf.d'
    config_dir.mkdir()
    assert run(node, **enable_args(node, config_dir))['changed']
    rollback = run(node, state='restored', drop_in_dir=str(config_dir))
    assert rollback['changed'] and not rollback.get('failed'), rollback
    assert not (node['tmp'] / 'default-kubelet').exists()  # the flag, and the file the step made, are gone
    assert config_dir.is_dir() and os.listdir(config_dir) == []  # the directory was not ours


def test_a_step_killed_after_adding_config_dir_is_undone_by_the_next_step(node):
    config_dir = node['dir'] / 'kubelet.conf.d'
    process = start(node, soak_seconds=60, **enable_args(node, config_dir))
    wait_for(lambda: restarts(node) == 1 and (node['tmp'] / 'step' / 'step.json').exists())
    process.send_signal(signal.SIGKILL)
    process.communicate()
    result = run(node, state='restored', drop_in_dir=str(config_dir))
    assert 'was killed before verifying its change' in result['recovered'], result
    assert not (node['tmp'] / 'default-kubelet').exists() and not config_dir.exists()


def _status(node):
    files = node['tmp'] / 'nodealloc'
    return {'on_success': [{'path': str(files / 'decision.json'), 'content': {'action': 'keep'}},
                           {'path': str(files / 'reservation.json'), 'content': {'reserved_memory_bytes': 1048576000}}],
            'on_failure': [{'path': str(files / 'decision.json'), 'content': {'action': 'increase'}}]}


def _status_files(node):
    files = node['tmp'] / 'nodealloc'
    return {n: (files / n).read_text() for n in sorted(os.listdir(files))} if files.is_dir() else {}


def test_the_step_writes_its_success_status_in_the_same_call(node):
    result = run(node, status=_status(node))
    assert result['changed'] and not result.get('failed'), result
    assert _status_files(node) == {'decision.json': '{\n    "action": "keep"\n}\n',
                                   'reservation.json': '{\n    "reserved_memory_bytes": 1048576000\n}\n'}


def test_a_restored_step_writes_its_failure_status_after_the_restore(node):
    Healthz.answer = (500, b'[-]kubelet refused its config')
    result = run(node, status=_status(node))
    assert result['failed'] and config(node) == OLD
    assert _status_files(node) == {'decision.json': '{\n    "action": "increase"\n}\n'}


def test_check_mode_writes_no_status_file(node):
    result = run(node, status=_status(node), _ansible_check_mode=True)
    assert result['changed'] and not result.get('failed'), result
    assert _status_files(node) == {} and config(node) == OLD
