"""The one write path under SIGKILL at every syscall it makes in the config's directory, and on a full disk.

The module runs as Ansible runs it (a separate process fed ANSIBLE_MODULE_ARGS). strace records
which syscalls touch the config's directory (-y prints the path behind every file descriptor),
then the same run is repeated once per such syscall with strace's fault injection killing the
process there (-e inject=SYSCALL:signal=KILL:when=N). After each kill the config must be the old
file or the new one byte for byte, every backup must be whole and parse as a KubeletConfiguration,
and a second run must converge on the new file leaving no temporary file. Mount-based tests need
root (tmpfs) and run under the global lock like every test in tests/integration.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys

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
ARGS = {'kube_reserved': {'memory': '2Gi'}, 'system_reserved': {'memory': '500Mi'}, 'backup': True,
        'validate_against_node': False}
SYSCALLS = ('openat', 'write', 'fsync', 'fdatasync', 'rename', 'renameat', 'renameat2', 'unlink', 'unlinkat',
            'fchmod', 'fchown', 'close', 'flock', 'ftruncate', 'getdents64')
LINE = re.compile(r'^(?P<pid>\d+)\s+(?P<name>\w+)\((?P<args>.*)$')

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='needs root to mount tmpfs')
needs_strace = pytest.mark.skipif(shutil.which('strace') is None, reason='needs strace')


def module_command(tmp_path, directory, name='args.json'):
    args_file = tmp_path / name
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(ARGS, path=str(directory / 'config.yaml'))}))
    return [sys.executable, '-m', MODULE, str(args_file)]


def run(command, **kwargs):
    # A fixed hash seed keeps the interpreter's syscalls the same from run to run, so that the
    # N-th call of a syscall is the same call in the recording and in the injected run.
    env = dict(os.environ, PYTHONHASHSEED='0')
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120, env=env, **kwargs)


@pytest.fixture(autouse=True)
def own_bytecode(tmp_path, monkeypatch):
    """Every run of the test reads its bytecode from a cache that only this test writes.

    A run that compiles a module (and writes its .pyc) makes more openat calls than one that reads the .pyc,
    so the N-th openat of the recording would not be the N-th of a later run whenever another process (the
    ansible-test run beside the main line, another test) wrote bytecode in the collection between the two.
    """
    monkeypatch.setenv('PYTHONPYCACHEPREFIX', str(tmp_path / 'pycache'))
    monkeypatch.delenv('PYTHONDONTWRITEBYTECODE', raising=False)  # the first run fills the cache


def fresh(directory):
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    (directory / 'config.yaml').write_text(OLD)


def crash_points(trace_file, directory):
    """(syscall, N, line): the N-th call of that syscall in the traced process, for calls in ``directory``."""
    counts = collections.Counter()
    points = []
    main_pid = None
    with open(trace_file) as handle:
        for line in handle:
            match = LINE.match(line)
            if not match:
                continue
            if main_pid is None:
                main_pid = match['pid']
            if match['pid'] != main_pid:
                continue
            counts[match['name']] += 1
            if str(directory) in match['args']:
                points.append((match['name'], counts[match['name']], line.strip()))
    return points


def check_invariants(directory, new):
    names = os.listdir(directory)
    config = (directory / 'config.yaml').read_text()
    assert config in (OLD, new), config
    for name in names:
        if name.endswith('.nodealloc.bak'):
            backup = (directory / name).read_text()
            assert backup == OLD, (name, backup)  # whole, byte for byte
            assert yaml.safe_load(backup)['kind'] == 'KubeletConfiguration'
        else:
            assert name == 'config.yaml' or (name.startswith('.config.yaml.') and name.endswith('.nodealloc.tmp')), name
    return config


@needs_strace
def test_sigkill_at_every_syscall_in_the_directory_leaves_old_or_new_and_whole_backups(tmp_path):
    directory = tmp_path / 'kubelet'
    fresh(directory)
    # A first run fills the test's bytecode cache (own_bytecode): the recording and every run after it read it.
    assert run(module_command(tmp_path, directory)).returncode == 0
    fresh(directory)
    trace = tmp_path / 'trace.txt'
    traced = run(['strace', '-f', '-y', '-qq', '-s', '512', '-e', 'trace=' + ','.join(SYSCALLS), '-o', str(trace)]
                 + module_command(tmp_path, directory))
    assert traced.returncode == 0, traced.stderr
    assert json.loads(traced.stdout)['changed']
    new = (directory / 'config.yaml').read_text()
    assert new != OLD
    points = crash_points(trace, directory)
    names = {name for name, _n, _line in points}
    # The write path's own steps are all among them: a backup and a config, each temp + fsync + rename (renameat:
    # relative to the directory's descriptor, _safe_open).
    assert {'openat', 'write', 'fsync'} <= names and names & {'rename', 'renameat', 'renameat2'}, points
    seen = collections.Counter()
    for name, number, line in points:
        fresh(directory)
        killed = run(['strace', '-f', '-qq', '-o', '/dev/null', '-e', 'trace=%s' % name,
                      '-e', 'inject=%s:signal=KILL:when=%d' % (name, number)] + module_command(tmp_path, directory))
        assert killed.returncode != 0 and not killed.stdout, (line, killed.stdout)  # killed, no result
        state = check_invariants(directory, new)
        seen['old' if state == OLD else 'new'] += 1
        again = run(module_command(tmp_path, directory, 'again.json'))
        result = json.loads(again.stdout)
        assert not result.get('failed'), (line, result)
        check_invariants(directory, new)
        assert (directory / 'config.yaml').read_text() == new, line
        assert not [n for n in os.listdir(directory) if n.endswith('.nodealloc.tmp')], (line, os.listdir(directory))
    # Both outcomes happen: killed before the rename the old file stays, after it the new one is there.
    assert seen['old'] and seen['new'], seen
    print('%d crash points in %s: %s' % (len(points), directory, dict(seen)))


@pytest.fixture
def tmpfs(tmp_path):
    mount_point = tmp_path / 'mnt'
    mount_point.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k,mode=755', 'nodealloc-test', str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(['umount', '-l', str(mount_point)], check=False)


def fill(mount_point, leave_pages):
    filler = mount_point / 'filler'
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b'\0' * 4096):
            pass
    except OSError:
        pass  # the file system is full now
    finally:
        os.close(fd)
    os.truncate(filler, max(0, os.path.getsize(filler) - 4096 * leave_pages))


@needs_root
@pytest.mark.parametrize('leave_pages,what', [(0, 'the backup'), (1, 'the config after its backup')])
def test_full_disk_says_so_and_leaves_nothing_behind(tmp_path, tmpfs, leave_pages, what):
    (tmpfs / 'config.yaml').write_text(OLD)
    fill(tmpfs, leave_pages)
    completed = run(module_command(tmp_path, tmpfs))
    result = json.loads(completed.stdout)
    assert result.get('failed'), (what, result)
    assert 'no space left on the device' in result['msg'], result['msg']
    assert (tmpfs / 'config.yaml').read_text() == OLD
    assert sorted(os.listdir(tmpfs)) == ['config.yaml', 'filler'], what
