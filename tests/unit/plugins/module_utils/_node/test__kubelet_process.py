"""Kubelet command-line discovery: argv as real kubelets are started."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process as kp
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

# kubeadm's systemd drop-in (10-kubeadm.conf) expands to this command line.
KUBEADM_ARGV = ['/usr/bin/kubelet', '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
                '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=/var/lib/kubelet/config.yaml',
                '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock']


@pytest.mark.parametrize('argv,name', [
    (KUBEADM_ARGV, 'kubelet'),
    (['/usr/bin/python3', '/usr/local/bin/kubelet', '--config', 'x'], 'kubelet'),
    (['/usr/bin/containerd'], 'containerd'),
    (['python3.11'], 'python3.11'),
    ([], None),
])
def test_program_name(argv, name):
    assert kp.program_name(argv) == name


def test_config_paths_from_both_flag_spellings():
    assert kp.config_paths(KUBEADM_ARGV) == ('/var/lib/kubelet/config.yaml', None)
    assert kp.config_paths(['kubelet', '--config', '/a.yaml', '--config-dir', '/d']) == ('/a.yaml', '/d')


def test_reservation_flags_become_config_fields():
    argv = ['kubelet', '--kube-reserved=cpu=100m,memory=1Gi', '--system-reserved', 'memory=500Mi',
            '--eviction-hard=memory.available<100Mi,nodefs.available<10%',
            '--enforce-node-allocatable=pods,kube-reserved', '--kube-reserved-cgroup=/kube.slice',
            '--cgroup-driver=systemd']
    fields = kp.config_from_flags(argv)
    assert fields['kubeReserved'] == {'cpu': '100m', 'memory': '1Gi'}
    assert fields['systemReserved'] == {'memory': '500Mi'}
    assert fields['evictionHard'] == {'memory.available': '100Mi', 'nodefs.available': '10%'}
    assert fields['enforceNodeAllocatable'] == ['pods', 'kube-reserved']
    assert fields['kubeReservedCgroup'] == '/kube.slice'
    assert fields['cgroupDriver'] == 'systemd'


@pytest.mark.parametrize('argv,expected', [
    (['kubelet', '--max-pods=29'], 29),
    (['kubelet', '--max-pods', '58'], 58),
    # Karpenter's AL2 user data passes it through --kubelet-extra-args: one argv item each, as the kubelet gets them.
    (['kubelet', '--config=/etc/kubernetes/kubelet/kubelet-config.json', '--max-pods=110', '--node-labels=a=b'], 110),
])
def test_max_pods_on_the_command_line_becomes_max_pods(argv, expected):
    # Issue 45 review: the kubelet takes a flag over its config file; a maxPods set so was not read before, and the
    # class model and the templates assumed 110.
    assert kp.config_from_flags(argv)['maxPods'] == expected


@pytest.mark.parametrize('value', ['many', '-1', '1e3', '', '9999999999', '29 ', '２９'])
def test_a_max_pods_flag_that_is_no_count_is_left_out(value):
    fields = kp.config_from_flags(['kubelet', '--max-pods=%s' % value])
    assert fields.get('maxPods') == (29 if value == '29 ' else None)


def test_malformed_map_flag_is_refused():
    with pytest.raises(ValueError, match='key=value'):
        kp.config_from_flags(['kubelet', '--kube-reserved=cpu'])


# A program only root can have put there, whoever runs these tests: root's, in root's directories, on every machine.
ROOTS_PROGRAM = os.path.realpath(shutil.which('true'))
KUBELET_ARGV = ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml']


def _fake_proc(tmp_path, processes, own_nspid, systemd=False):
    """A /proc with ``self`` and ``processes`` ({pid: (argv, NSpid ids)} or {pid: dict(argv=, nspid=, uid=, exe=,
    cgroup=)}); no ns/mnt link is readable, as for the sandboxed sampler (no CAP_SYS_PTRACE): only ``status`` tells a
    container's process apart. ``exe`` (a program file, ROOTS_PROGRAM unless given) is the target of the ``exe``
    link; ``uid`` fills the ``Uid:`` line (root's unless given). ``systemd``: pid 1 is systemd (its ``comm``)."""
    def write(name, argv, nspid, uid=0, exe=ROOTS_PROGRAM, cgroup=b'0::/system.slice/kubelet.service\n'):
        directory = tmp_path / str(name)
        directory.mkdir()
        (directory / 'cmdline').write_bytes(b'\0'.join(arg if isinstance(arg, bytes) else arg.encode()
                                                       for arg in argv) + b'\0')
        # Lines as Linux 5.10+ prints them (fs/proc/array.c task_state), trimmed.
        (directory / 'status').write_text('Name:\t%s\nUid:\t%d\t%d\t%d\t%d\nPid:\t%s\nNSpid:\t%s\n'
                                          % (os.path.basename(str(argv[0])), uid, uid, uid, uid, nspid[0],
                                             '\t'.join(nspid)))
        (directory / 'cgroup').write_bytes(cgroup)
        os.symlink(exe, str(directory / 'exe'))
    tmp_path.mkdir(parents=True, exist_ok=True)
    write('self', ['python3'], own_nspid)
    if systemd:
        (tmp_path / '1').mkdir()
        (tmp_path / '1' / 'comm').write_text('systemd\n')
    for pid, spec in processes.items():
        if isinstance(spec, tuple):
            spec = {'argv': spec[0], 'nspid': spec[1]}
        spec.setdefault('nspid', [str(pid)])
        write(pid, **spec)
    return str(tmp_path)


def test_a_kubelet_in_a_nested_pid_namespace_is_not_this_nodes(tmp_path):
    proc = _fake_proc(tmp_path, {
        101: (['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'], ['101']),
        202: (['/usr/bin/containerd'], ['202']),
        303: (['/usr/bin/kubelet', '--config=/kind/config.yaml'], ['303', '57']),  # a kind node's kubelet
    }, own_nspid=['999'])
    found = kp.find_processes(kp.DEFAULT_KUBELET_NAMES + kp.DEFAULT_RUNTIME_NAMES, proc)
    assert [process.pid for process in found] == [101, 202]


def test_inside_a_container_its_own_kubelet_counts(tmp_path):
    """The sampler on an nspawn node: it and the node's kubelet are one pid namespace deep, seen from the host's."""
    proc = _fake_proc(tmp_path, {101: (['/usr/bin/kubelet'], ['4101', '101'])}, own_nspid=['4999', '999'])
    assert [process.pid for process in kp.find_processes(kp.DEFAULT_KUBELET_NAMES, proc)] == [101]


def _users_program(tmp_path, mode=0o755, uid=1000, directory_mode=0o755):
    """A program file a user could have made, or changed: owned by ``uid``, or writable by others (``mode``)."""
    directory = tmp_path / 'home-u-bin'
    directory.mkdir(exist_ok=True)
    program = directory / 'kubelet'
    program.write_text('#!/bin/sh\n')
    os.chmod(str(program), mode)
    os.chmod(str(directory), directory_mode)
    if os.geteuid() == 0:
        os.chown(str(program), uid, uid)
    return str(program)


def test_a_users_process_named_kubelet_is_ignored_and_said_so_even_with_the_lower_pid(tmp_path):
    """The finding: any user's ``exec -a /home/u/kubelet`` was the kubelet (lowest pid first), its binary run as root."""
    proc = _fake_proc(tmp_path / 'proc', {
        50: {'argv': ['/home/u/kubelet', '--config=/home/u/config.yaml'], 'uid': 1000},
        101: {'argv': KUBELET_ARGV},
    }, own_nspid=['999'])
    ignored = []
    found = kp.find_processes(kp.DEFAULT_KUBELET_NAMES, proc, ignored=ignored)
    assert [process.pid for process in found] == [101]
    assert ignored == ['ignored a process named kubelet: pid 50 (/home/u/kubelet --config=/home/u/config.yaml), '
                       'uid 1000']


def test_alone_it_is_still_ignored(tmp_path):
    proc = _fake_proc(tmp_path / 'proc', {50: {'argv': ['/home/u/kubelet'], 'uid': 1000}}, own_nspid=['999'])
    assert kp.find_processes(kp.DEFAULT_KUBELET_NAMES, proc) == []


def test_a_set_uid_program_a_user_started_is_not_root_s(tmp_path):
    proc = tmp_path / 'proc'
    _fake_proc(proc, {50: {'argv': ['kubelet']}}, own_nspid=['999'])
    (proc / '50' / 'status').write_text('Name:\tkubelet\nUid:\t1000\t0\t0\t0\nNSpid:\t50\n')
    assert 'uid 1000' in kp.why_untrusted(50, ['kubelet'], str(proc))


@pytest.mark.skipif(os.geteuid() != 0, reason='makes a file of uid 1000')
def test_a_root_process_running_a_users_program_is_ignored(tmp_path):
    """Root started /home/u/kubelet by mistake, or after the user swapped it: what root would run is the user's."""
    proc = _fake_proc(tmp_path / 'proc', {50: {'argv': ['kubelet'], 'exe': _users_program(tmp_path)}},
                      own_nspid=['999'])
    ignored = []
    assert kp.find_processes(kp.DEFAULT_KUBELET_NAMES, proc, ignored=ignored) == []
    assert ignored[0].endswith('the program %s is owned by uid 1000' % (tmp_path / 'home-u-bin' / 'kubelet'))


@pytest.mark.parametrize('mode,directory_mode,why', [
    (0o775, 0o755, 'the program .* is writable by group or others \\(mode 775\\)'),
    (0o757, 0o755, 'the program .* is writable by group or others'),
    (0o755, 0o777, 'its directory .* is writable by group or others \\(mode 777\\)'),
    (0o755, 0o1777, 'its directory .* is writable by group or others \\(mode 1777\\)'),  # sticky: not for its own
])
def test_a_program_others_may_change_is_not_roots_alone(tmp_path, mode, directory_mode, why):
    program = _users_program(tmp_path, mode=mode, uid=0, directory_mode=directory_mode)
    if os.geteuid() != 0:
        pytest.skip('needs a root-owned file')
    assert re.search(why, kp.program_file_reason(program))


def test_a_roots_program_passes():
    assert kp.program_file_reason(ROOTS_PROGRAM) is None


@pytest.mark.parametrize('cgroup,kubelet_unit,why', [
    (b'0::/system.slice/kubelet.service\n', None, None),
    (b'1:name=systemd:/system.slice/kubelet.service\n0::/\n', None, None),  # v1 / hybrid
    (b'0::/runtime.slice/kubelet.service\n', None, None),  # EKS's AMI and others: a slice for kubeReservedCgroup
    (b'0::/system.slice/k3s.service\n', None, None),
    (b'0::/system.slice/k3s.service\n', 'kubelet.service', 'not in the unit of kubelet.service'),
    (b'0::/system.slice/cron.service\n', None, 'runs in cgroup /system.slice/cron.service'),
    # A user's delegated subtree may hold a group of any name: below user@.service, not a system unit.
    (b'0::/user.slice/user-1000.slice/user@1000.service/app.slice/kubelet.service\n', None, 'runs in cgroup'),
    (b'0::/user.slice/user-1000.slice/session-3.scope\n', None, 'runs in cgroup'),
])
def test_where_systemd_runs_the_node_the_kubelet_runs_in_its_unit(tmp_path, cgroup, kubelet_unit, why):
    proc = _fake_proc(tmp_path / 'proc', {101: {'argv': KUBELET_ARGV, 'cgroup': cgroup}}, own_nspid=['999'],
                      systemd=True)
    reason = kp.why_untrusted(101, KUBELET_ARGV, proc, kp.units_for(kubelet_unit))
    assert (reason is None) if why is None else (why in reason), reason


def test_without_systemd_the_unit_is_not_asked(tmp_path):
    proc = _fake_proc(tmp_path / 'proc', {101: {'argv': KUBELET_ARGV, 'cgroup': b'0::/\n'}}, own_nspid=['999'])
    assert kp.why_untrusted(101, KUBELET_ARGV, proc) is None


def test_version_probing_runs_the_verified_executable_never_argv0(tmp_path):
    proc = _fake_proc(tmp_path / 'proc', {101: {'argv': ['/home/u/kubelet', '--config=/c.yaml']}}, own_nspid=['9'])
    assert kp.version_command(['/home/u/kubelet'], 101, proc) == [ROOTS_PROGRAM, '--version']
    # A stand-in run by an interpreter: the interpreter /proc/<pid>/exe names, and its script, verified too.
    argv = ['python3', ROOTS_PROGRAM, '--config=/c.yaml']
    proc = _fake_proc(tmp_path / 'proc2', {101: {'argv': argv}}, own_nspid=['9'])
    assert kp.version_command(argv, 101, proc) == [ROOTS_PROGRAM, ROOTS_PROGRAM, '--version']


@pytest.mark.skipif(os.geteuid() != 0, reason='makes a file of uid 1000')
def test_a_stand_ins_script_of_a_user_is_not_run_and_said_so(tmp_path):
    argv = ['python3', _users_program(tmp_path)]
    proc = _fake_proc(tmp_path / 'proc', {101: {'argv': argv}}, own_nspid=['9'])
    problems = []
    assert kp.version_command(argv, 101, proc, problems=problems) is None
    assert problems == ['not asking pid 101 its version: the program %s is owned by uid 1000'
                        % (tmp_path / 'home-u-bin' / 'kubelet')]


def test_the_kubelet_on_the_path_is_verified_too(tmp_path):
    assert kp.version_command(None, None, which=lambda name: ROOTS_PROGRAM) == [ROOTS_PROGRAM, '--version']
    if os.geteuid() == 0:
        problems = []
        assert kp.version_command(None, None, which=lambda name: _users_program(tmp_path), problems=problems) is None
        assert 'owned by uid 1000' in problems[0]


def test_the_sampler_without_ptrace_access_measures_a_roots_process_it_cannot_verify(tmp_path, monkeypatch):
    """``/proc/<pid>/exe`` of a root process with capabilities is not readable to the sandboxed sampler."""
    proc = _fake_proc(tmp_path / 'proc', {101: {'argv': KUBELET_ARGV}, 102: {'argv': ['kubelet'], 'uid': 1000}},
                      own_nspid=['9'])
    real_readlink = os.readlink

    def readlink(path):
        if path.endswith('/exe'):
            raise PermissionError(13, 'Permission denied')
        return real_readlink(path)
    monkeypatch.setattr(os, 'readlink', readlink)
    assert [p.pid for p in kp.find_processes(['kubelet'], proc, need_executable=False)] == [101]
    ignored = []
    assert kp.find_processes(['kubelet'], proc, ignored=ignored) == []
    assert ignored[0].endswith('its executable cannot be read (Permission denied)')


def test_a_cgroup_name_of_any_bytes_changes_nothing_but_the_reading(tmp_path):
    """A user may name a group in their delegated subtree with any byte; a runtime's line must still be read."""
    cgroup = b'0::/system.slice/containerd.service/\xff\xfe\x1c0::/user.slice\n'
    proc = _fake_proc(tmp_path / 'proc', {202: {'argv': ['/usr/bin/containerd'], 'cgroup': cgroup}},
                      own_nspid=['9'], systemd=True)
    assert [p.pid for p in kp.find_processes(kp.DEFAULT_RUNTIME_NAMES, proc)] == [202]
    groups = _procfs.read_process_cgroups(202, proc)
    # The same bytes back (the group is read again by its path), and the \x1c in a name starts no line of its own.
    assert os.fsencode(groups['']) == b'/system.slice/containerd.service/\xff\xfe\x1c0::/user.slice'
    assert _procfs.shown(groups['']) == '/system.slice/containerd.service/\\xff\\xfe\x1c0::/user.slice'
    # Nor does a user's own group in their subtree, named so, make a process of theirs one of the units.
    cgroup = b'0::/user.slice/user-1000.slice/user@1000.service/x\x1c0::/system.slice/kubelet.service\n'
    proc = _fake_proc(tmp_path / 'proc2', {101: {'argv': KUBELET_ARGV, 'cgroup': cgroup}}, own_nspid=['9'],
                      systemd=True)
    assert 'runs in cgroup /user.slice/' in kp.why_untrusted(101, KUBELET_ARGV, proc)
