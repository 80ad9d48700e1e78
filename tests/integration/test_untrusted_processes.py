"""A node's own users steer nothing root does or measures: real processes on this machine (issue 35).

Each test starts real processes, some as uid 65534 (nobody) with ``exec -a``, and calls the facts module's
measurement (_gather.measure) or _tool_processes.find on the real /proc. The processes named like the kubelet or a
runtime that must be trusted run under names no other process here has (``kubelet_process_names``), so that a
concurrent test's search never finds them; the user's ``kubelet`` is named ``kubelet`` itself, as the finding was.
Needs root (it starts processes as another user); touches no cgroup. About 2 s in all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs, _tool_processes

NOBODY = 65534
PYTHON = os.path.realpath('/usr/bin/python3')
SLEEPER = 'import time; time.sleep(120)'
OPTIONS = {'sample_seconds': 0, 'kubelet_config_path': '/nonexistent/config.yaml'}

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(PYTHON),
                                reason='needs root (starts processes as nobody) and /usr/bin/python3')


def _start(argv, user=None, argv0=None):
    """Start ``argv`` (``exec -a argv0`` where given); return it once its command line is the one exec'd."""
    script = 'exec -a "$0" "$@"' if argv0 else 'exec "$@"'
    process = subprocess.Popen(['bash', '-c', script, argv0 or 'bash'] + argv, user=user,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd='/')
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        cmdline = _procfs.read_process_file(process.pid, 'cmdline') or b''
        if cmdline.split(b'\0')[0] == os.fsencode(argv0 or argv[0]):
            return process
        time.sleep(0.02)
    process.kill()
    raise AssertionError('%r did not start' % argv)


@pytest.fixture
def processes():
    started = []
    yield started
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def users_home(tmp_path):
    """/home/u as a user has it: their ``bin/kubelet`` (a script leaving a marker when anyone runs it) and config."""
    home = tmp_path / 'home-u'
    (home / 'bin').mkdir(parents=True)
    marker = home / 'ran-as-root'
    program = home / 'bin' / 'kubelet'
    program.write_text('#!/bin/sh\nid -u > %s\necho "Kubernetes v1.31.0"\n' % marker)
    (home / 'config.yaml').write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
                                      'kubeReserved: {memory: 5Gi}\n')
    os.chmod(str(program), 0o755)
    for path in (home, home / 'bin', program, home / 'config.yaml'):
        os.chown(str(path), NOBODY, NOBODY)
    return {'program': str(program), 'config': str(home / 'config.yaml'), 'marker': marker}


def _users_kubelet(users_home, processes, argv0=None):
    process = _start([PYTHON, '-c', SLEEPER, '--config=' + users_home['config']], user=NOBODY,
                     argv0=argv0 or users_home['program'])
    processes.append(process)
    return process


def _roots_kubelet(tmp_path, processes, name):
    """Root's kubelet: a stand-in in a directory of root's only, answering ``--version``, run by an interpreter."""
    directory = tmp_path / 'usr-bin'
    directory.mkdir()
    os.chmod(str(directory), 0o755)
    program = directory / name
    program.write_text('import sys, time\nif "--version" in sys.argv:\n    print("Kubernetes v1.31.4")\n'
                       'else:\n    time.sleep(120)\n')
    os.chmod(str(program), 0o755)
    config = directory / 'config.yaml'
    config.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n')
    process = _start([PYTHON, str(program), '--config=' + str(config)])
    processes.append(process)
    return process, str(config)


def test_a_users_kubelet_alone_is_ignored_and_its_program_never_runs(users_home, processes):
    users = _users_kubelet(users_home, processes)
    measured = _gather.measure(_gather.with_defaults(dict(OPTIONS)))
    assert not users_home['marker'].exists(), 'root ran the user\'s program (as uid %s)' % (
        users_home['marker'].read_text().strip())
    assert measured['kubelet']['pid'] != users.pid
    assert measured['kubelet']['config_path'] != users_home['config']
    said = [line for line in measured['not_found'] if line.startswith('ignored a process named kubelet: pid %d (%s '
                                                                      % (users.pid, users_home['program']))]
    assert len(said) == 1 and said[0].endswith('), uid %d' % NOBODY), measured['not_found']


def test_a_users_kubelet_with_a_lower_pid_than_roots_is_ignored_and_roots_is_asked(tmp_path, users_home, processes):
    name = 'kubelet-untrusted-test'
    users = _users_kubelet(users_home, processes, argv0=os.path.join(os.path.dirname(users_home['program']), name))
    shutil.copy(users_home['program'], os.path.join(os.path.dirname(users_home['program']), name))
    roots, config = _roots_kubelet(tmp_path, processes, name)
    assert users.pid < roots.pid
    measured = _gather.measure(_gather.with_defaults(dict(OPTIONS, kubelet_process_names=[name])))
    assert not users_home['marker'].exists()
    assert (measured['kubelet']['pid'], measured['kubelet']['config_path']) == (roots.pid, config)
    assert measured['kubelet']['version']['command'] == [PYTHON, str(tmp_path / 'usr-bin' / name), '--version']
    assert measured['kubelet']['version']['git_version'] == 'v1.31.4'


def test_a_users_program_under_an_ansible_tmp_path_stays_counted(processes):
    home = tempfile.mkdtemp(prefix='nodealloc-home-u-')  # a place nobody may read (pytest's tmp_path is root's alone)
    try:
        os.chmod(home, 0o755)
        os.mkdir(os.path.join(home, 'ansible-tmp-1'), 0o755)
        hog = os.path.join(home, 'ansible-tmp-1', 'hog.py')
        with open(hog, 'w', encoding='utf-8') as handle:
            handle.write('import sys, time\nheld = bytearray(64 * 1024 * 1024)\nprint("ready", flush=True)\n'
                         'time.sleep(120)\n')
        process = subprocess.Popen([PYTHON, hog], user=NOBODY, stdout=subprocess.PIPE, cwd='/')
        processes.append(process)
        assert process.stdout.readline() == b'ready\n'
        found = _tool_processes.find()
        assert process.pid not in [p['pid'] for p in found['processes']], found
        # Not for want of looking: this very process is the tool (the measuring process itself).
        assert os.getpid() in [p['pid'] for p in _tool_processes.find(own_pids=(os.getpid(),))['processes']]
    finally:
        shutil.rmtree(home)


def test_a_runtime_with_bytes_of_any_kind_in_its_name_and_command_line_changes_nothing_but_the_reading(processes):
    """Its name (``comm``, in ``stat`` and ``status``) and its command line not UTF-8: measured as any other."""
    name = 'runtime-untrusted-test'
    rename = ("import time; open('/proc/self/comm', 'wb').write(b'rt-\\xff\\xfe'); print('ready', flush=True); "
              "time.sleep(120)")
    process = subprocess.Popen(['bash', '-c', 'exec -a "$0" "$@"', '/usr/bin/' + name, PYTHON, '-c', rename,
                                os.fsdecode(b'--root=/var/lib/\xff\xfe')], stdout=subprocess.PIPE, cwd='/')
    processes.append(process)
    assert process.stdout.readline() == b'ready\n'
    assert b'\xff' in _procfs.read_process_file(process.pid, 'stat')
    # The readings a runtime measured by its process (in a shared group: system.slice, '/') goes through: each
    # raised UnicodeDecodeError, or kept other bytes than the process's.
    assert os.fsencode(_procfs.read_process_status_field(process.pid, 'Name')) == b'rt-\xff\xfe'
    assert os.fsencode(_procfs.read_cmdline(process.pid)[-1]) == b'--root=/var/lib/\xff\xfe'
    assert _procfs.read_process_rss_bytes(process.pid) > 0
    assert _procfs.read_process_cpu_ticks(process.pid) is not None
    measured = _gather.measure(_gather.with_defaults(dict(OPTIONS, runtime_process_names=[name])))
    assert {'pid': process.pid, 'program': name} in measured['components']
    # Measured by its group here (this machine gives each job a memory cgroup of its own), or by its RSS.
    assert measured['memory']['kube_components_working_set_bytes'] > 0
