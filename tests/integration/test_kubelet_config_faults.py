"""kubelet_config against real files and real failures: full disks, read-only mounts, SIGKILL, two runs at once.

Mount-based tests need root (tmpfs mounts); the module is run as Ansible runs it,
a separate process fed ANSIBLE_MODULE_ARGS, so a crash is a real crash.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import yaml

MODULE = 'ansible_collections.nodealloc.kubelet.plugins.modules.kubelet_config'
OLD = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# written by kubeadm
cgroupDriver: systemd
kubeReserved:
  cpu: 100m
  memory: 1Gi
"""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='needs root to mount tmpfs')


def run_module(tmp_path, args, check_mode=False):
    args_file = tmp_path / ('args-%d.json' % random.randrange(10**9))
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=check_mode)}))
    completed = subprocess.run([sys.executable, '-m', MODULE, str(args_file)], capture_output=True, text=True,
                               check=False, timeout=120)
    assert 'Traceback' not in completed.stdout + completed.stderr, completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture
def tmpfs(tmp_path):
    mount_point = tmp_path / 'mnt'
    mount_point.mkdir()
    mounted = []

    def mount(size='256k'):
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s,mode=755' % size, 'nodealloc-test', str(mount_point)],
                       check=True)
        mounted.append(mount_point)
        return mount_point
    yield mount
    for point in mounted:
        subprocess.run(['umount', '-l', str(point)], check=False)


@pytest.mark.parametrize('content,message', [
    ('kind: [oops\n', 'invalid YAML'),
    ('apiVersion: v1\nkind: ConfigMap\n', "kind is 'ConfigMap'"),
    ('apiVersion: kubelet.config.k8s.io/v2\nkind: KubeletConfiguration\n', "apiVersion is 'kubelet.config.k8s.io/v2'"),
])
def test_bad_files_are_refused_and_left_alone(tmp_path, content, message):
    path = tmp_path / 'config.yaml'
    path.write_text(content)
    result = run_module(tmp_path, {'path': str(path), 'kube_reserved': {'memory': '1Gi'}})
    assert result['failed'] and message in result['msg'] and str(path) in result['msg']
    assert path.read_text() == content


def test_unreadable_path_is_refused(tmp_path):
    result = run_module(tmp_path, {'path': str(tmp_path / 'missing.yaml'), 'kube_reserved': {'memory': '1Gi'}})
    assert result['failed'] and 'no kubelet config found at %s' % (tmp_path / 'missing.yaml') in result['msg']
    result = run_module(tmp_path, {'path': str(tmp_path), 'kube_reserved': {'memory': '1Gi'}})
    assert result['failed'] and 'cannot read' in result['msg']


@pytest.mark.parametrize('check_mode', [True, False])
def test_a_node_without_kubelet_config_says_so_and_creates_nothing(tmp_path, check_mode):
    # A node with no /var/lib/kubelet at all: the message says what is missing, not that a lock failed.
    missing = tmp_path / 'var/lib/kubelet/config.yaml'
    result = run_module(tmp_path, {'path': str(missing), 'kube_reserved': {'memory': '1Gi'}}, check_mode=check_mode)
    assert result['failed'] and result['msg'].startswith('no kubelet config found at %s' % missing)
    assert 'lock' not in result['msg'] and not (tmp_path / 'var').exists()
    config = tmp_path / 'config.yaml'
    config.write_text(OLD)
    result = run_module(tmp_path, {'path': str(config), 'drop_in_dir': str(tmp_path / 'conf.d'),
                                   'kube_reserved': {'memory': '1Gi'}}, check_mode=check_mode)
    assert result['failed'] and 'is not a directory' in result['msg'] and not (tmp_path / 'conf.d').exists()


def test_validation_failure_names_field_and_rule(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(OLD)
    result = run_module(tmp_path, {'path': str(path), 'enforce_node_allocatable': ['pods', 'system-reserved']})
    assert result['failed'] and result['rule'] == 'enforce-node-allocatable'
    assert result['field'] == 'systemReservedCgroup' and 'nothing written' in result['msg']
    assert path.read_text() == OLD


@needs_root
def test_disk_full_leaves_the_old_file_and_no_temporary(tmp_path, tmpfs):
    mount_point = tmpfs('64k')
    path = mount_point / 'config.yaml'
    path.write_text(OLD)
    filler = mount_point / 'filler'
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b'\0' * 4096):
            pass
    except OSError:
        pass  # the file system is full now
    finally:
        os.close(fd)
    result = run_module(tmp_path, {'path': str(path), 'system_reserved': {'memory': '500Mi'},
                                   'kube_reserved': {'memory': '%dKi' % (1 << 20)},
                                   'validate_against_node': False})
    assert result['failed'], result
    assert 'no space left' in result['msg'] or 'No space left' in result['msg']
    assert path.read_text() == OLD
    assert sorted(os.listdir(mount_point)) == ['config.yaml', 'filler']


@needs_root
def test_read_only_directory_is_refused_cleanly(tmp_path, tmpfs):
    mount_point = tmpfs()
    path = mount_point / 'config.yaml'
    path.write_text(OLD)
    subprocess.run(['mount', '-o', 'remount,ro', str(mount_point)], check=True)
    result = run_module(tmp_path, {'path': str(path), 'kube_reserved': {'memory': '2Gi'}})
    assert result['failed'] and 'Read-only file system' in result['msg']
    assert path.read_text() == OLD
    # Check mode still reports what would change, without writing.
    result = run_module(tmp_path, {'path': str(path), 'kube_reserved': {'memory': '2Gi'}}, check_mode=True)
    assert result['changed'] is True and path.read_text() == OLD


WRITER = textwrap.dedent('''
    import sys
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change as change
    path = sys.argv[1]
    print("ready", flush=True)
    i = 0
    while True:
        memory = "2Gi" if i % 2 == 0 else "1Gi"
        params = {"path": path, "state": "present", "kube_reserved": {"memory": memory},
                  "system_reserved": {"memory": "%dMi" % (100 + i % 2)}}
        change.apply(change.plan(params))
        i += 1
''')


def test_sigkill_during_writes_leaves_old_or_new_never_a_mix(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(OLD)
    valid = [{'memory': '2Gi'}, {'memory': '1Gi'}, {'cpu': '100m', 'memory': '1Gi'}, {'cpu': '100m', 'memory': '2Gi'}]
    kills = 0
    random.seed(7)
    for _round in range(25):
        writer = subprocess.Popen([sys.executable, '-c', WRITER, str(path)], stdout=subprocess.PIPE,
                                  env=dict(os.environ))
        assert writer.stdout.readline().strip() == b'ready'
        time.sleep(random.uniform(0.0, 0.15))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        kills += 1
        data = yaml.safe_load(path.read_text())
        assert data['kind'] == 'KubeletConfiguration'
        assert data['kubeReserved'] in valid
        assert '# written by kubeadm' in path.read_text()
    leftovers = [name for name in os.listdir(tmp_path) if name.endswith('.nodealloc.tmp')]
    # A kill between mkstemp and rename can leave a temporary file; never a damaged config.
    assert kills == 25 and all(name.startswith('.config.yaml.') for name in leftovers)


def test_two_runs_at_once_wait_for_each_other(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(OLD)
    # The holder keeps the lock until told to let go: no sleep whose length a busy machine could eat up.
    holder = subprocess.Popen([sys.executable, '-c', (
        'import fcntl, os, sys\n'
        'fd = os.open(sys.argv[1], os.O_RDONLY)\n'
        'fcntl.flock(fd, fcntl.LOCK_EX)\n'
        'print("held", flush=True)\n'
        'sys.stdin.readline()\n'), str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b'held'
        result = run_module(tmp_path, {'path': str(path), 'kube_reserved': {'memory': '2Gi'}, 'lock_timeout': 0.3})
        assert result['failed'] and 'another run holds the nodealloc lock' in result['msg']
        assert path.read_text() == OLD
        waiting = {}
        second = threading.Thread(target=lambda: waiting.update(result=run_module(
            tmp_path, {'path': str(path), 'kube_reserved': {'memory': '2Gi'}, 'lock_timeout': 60})))
        second.start()
        # While the lock is held the second run can neither finish nor write, however long this takes.
        second.join(timeout=2)
        assert second.is_alive() and path.read_text() == OLD
        holder.stdin.write(b'release\n')
        holder.stdin.flush()
        second.join()
        assert waiting['result']['changed'] and path.read_text() != OLD
    finally:
        holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
