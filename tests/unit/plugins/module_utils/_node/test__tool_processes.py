"""The measuring tool's own processes: which are Ansible's module runs, what of their memory is left out, and what not.

The command lines are the ones a 1-GiB Debian 12 test guest showed during a rollout (tests/scenarios/test_rollout.py,
VM variant, ansible-core 2.19 with pipelining): the pipelined module interpreter under Ansible's command wrapper,
the three interpreters of an ``async`` task (async_wrapper, its daemonised fork, the module), the stand-in kubelet
and the sampler. The become wrapper is the one ansible-core's sudo plugin builds (plugins/become/sudo.py).
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _memory_accounting, _tool_processes

MIB = 1024 * 1024
TMP = '/root/.ansible/tmp/ansible-tmp-1795689751.0442383-38116-149528170330001'


def _process(proc, pid, argv, ppid, cgroup='0::/system.slice/ssh.service\n', pss_anon_kib=None, rss_anon_kib=0, uid=0):
    base = proc / str(pid)
    base.mkdir(parents=True)
    (base / 'cmdline').write_bytes(b'\0'.join(a.encode() for a in argv) + b'\0')
    (base / 'status').write_text('Name:\tx\nPPid:\t%d\nUid:\t%d\t%d\t%d\t%d\nRssAnon:\t%d kB\n'
                                 % (ppid, uid, uid, uid, uid, rss_anon_kib))
    (base / 'cgroup').write_text(cgroup)
    if pss_anon_kib is not None:
        (base / 'smaps_rollup').write_text('Rss:  99999 kB\nPss:  88888 kB\nPss_Anon:  %d kB\nPss_File:  1 kB\n'
                                           % pss_anon_kib)


def _node(tmp_path):
    proc = tmp_path / 'proc'
    _process(proc, 1, ['/sbin/init'], 0, cgroup='0::/init.scope\n', pss_anon_kib=4000)
    # The stand-in kubelet is a Python program too, started by systemd: not Ansible's.
    _process(proc, 381, ['/usr/bin/python3', '/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'], 1,
             cgroup='0::/system.slice/kubelet.service\n', pss_anon_kib=13000)
    _process(proc, 208, ['sshd: root@notty'], 1, pss_anon_kib=2000)
    # A pipelined module: Ansible's wrapper shell, the interpreter reading the module on stdin.
    _process(proc, 525, ['/bin/sh', '-c', '/usr/bin/python3 && sleep 0'], 208, pss_anon_kib=200)
    _process(proc, 526, ['/usr/bin/python3'], 525, pss_anon_kib=11000, rss_anon_kib=11500)
    # An async task: async_wrapper, its fork and the module, all running files of the remote tmp directory. The
    # forks share their pages: Pss_Anon counts them once across the three, RssAnon three times.
    for pid, ppid in ((517, 1), (518, 517), (519, 518)):
        _process(proc, pid, ['/usr/bin/python3', TMP + '/AnsiballZ_kubelet_reservations_apply.py'], ppid,
                 pss_anon_kib=5200, rss_anon_kib=15400)
    # What a shell task runs is the playbook's workload: the shell module's child and its Python program stay counted.
    _process(proc, 600, ['/bin/sh', '-c', 'python3 /opt/batch.py'], 526, pss_anon_kib=100)
    _process(proc, 601, ['python3', '/opt/batch.py'], 600, pss_anon_kib=300000)
    # The sampler, which passes its own pid.
    _process(proc, 520, ['/usr/bin/python3', '-I', '-S', '/usr/local/lib/nodealloc-sampler/nodealloc-sampler.py'], 1,
             cgroup='0::/system.slice/nodealloc-sampler.service\n', pss_anon_kib=5000)
    return str(proc)


def test_ansibles_module_interpreters_and_the_sampler_are_found_and_the_workload_is_not(tmp_path):
    found = _tool_processes.find(_node(tmp_path), 'kubepods.slice', own_pids=(520,), tool_uid=0)
    assert [p['pid'] for p in found['processes']] == [517, 518, 519, 520, 526]
    by_pid = {p['pid']: p for p in found['processes']}
    assert by_pid[526]['why'].startswith('the interpreter of an Ansible module')
    assert by_pid[517]['why'] == "runs a file of Ansible's remote temporary directory"
    assert by_pid[520]['why'] == 'the measuring process itself'
    # Pss_Anon, not RssAnon: the async forks' shared pages once.
    assert by_pid[526]['source'] == 'smaps_rollup Pss_Anon'
    assert found['bytes'] == (11000 + 3 * 5200 + 5000) * 1024


def test_rss_anon_where_the_kernel_has_no_pss_anon(tmp_path):
    proc = tmp_path / 'proc'
    _process(proc, 525, ['/bin/sh', '-c', '/usr/bin/python3 && sleep 0'], 1)
    _process(proc, 526, ['/usr/bin/python3'], 525, rss_anon_kib=11500)
    found = _tool_processes.find(str(proc), tool_uid=0)
    assert [(p['pid'], p['anonymous_bytes'], p['source']) for p in found['processes']] == [
        (526, 11500 * 1024, 'status RssAnon')]


def test_the_become_wrapper_is_ansibles_too():
    argv = ['/bin/sh', '-c', 'echo BECOME-SUCCESS-tnkqgbmhjnasfqaqmcqzywqubpsgyvrh ; /usr/bin/python3']
    assert _tool_processes.why_ansible(['/usr/bin/python3'], argv)
    # The same interpreter under a shell that is not Ansible's wrapper is not.
    assert _tool_processes.why_ansible(['/usr/bin/python3'], ['/bin/sh', '-c', '/usr/bin/python3 job.py']) is None
    assert _tool_processes.why_ansible(['/usr/bin/python3'], ['bash']) is None
    # Nor a program other than an interpreter under Ansible's wrapper (a raw task's command).
    assert _tool_processes.why_ansible(['/usr/bin/stress', '--vm', '1'], ['/bin/sh', '-c', 'stress --vm 1 && sleep 0']) is None


def test_ansible_running_inside_a_pod_is_not_left_out_twice(tmp_path):
    proc = tmp_path / 'proc'
    pod = '0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-2.scope\n'
    _process(proc, 525, ['/bin/sh', '-c', '/usr/bin/python3 && sleep 0'], 1, cgroup=pod)
    _process(proc, 526, ['/usr/bin/python3'], 525, cgroup=pod, pss_anon_kib=11000)
    assert _tool_processes.find(str(proc), 'kubepods.slice', tool_uid=0)['processes'] == []
    # v1: the memory controller's line names kubepods (cgroupfs driver).
    proc = tmp_path / 'proc1'
    _process(proc, 525, ['/bin/sh', '-c', '/usr/bin/python3 && sleep 0'], 1, cgroup='4:memory:/kubepods/burstable/pod1/c\n')
    _process(proc, 526, ['/usr/bin/python3'], 525, cgroup='4:memory:/kubepods/burstable/pod1/c\n', pss_anon_kib=11000)
    assert _tool_processes.find(str(proc), 'kubepods', tool_uid=0)['processes'] == []
    assert [p['pid'] for p in _tool_processes.find(str(proc), 'kubepods.slice', tool_uid=0)['processes']] == [526]


def test_an_unreadable_process_list_leaves_nothing_out(tmp_path):
    found = _tool_processes.find(os.path.join(str(tmp_path), 'absent'))
    assert found['bytes'] == 0 and found['processes'] == [] and 'absent' in found['note']


def test_the_non_pod_figure_leaves_the_tool_out_and_says_so():
    meminfo = {'MemTotal': 1024 * MIB, 'MemAvailable': 768 * MIB, 'Active(file)': 0, 'Inactive(file)': 0}
    kubepods = {'working_set_bytes': 10 * MIB}
    plain = _memory_accounting.non_pod_memory(meminfo, kubepods, 0)
    less = _memory_accounting.non_pod_memory(meminfo, kubepods, 0, tool_bytes=30 * MIB)
    assert plain['bytes'] - less['bytes'] == less['measurement_tool_bytes'] == 30 * MIB
    assert less['poc_bytes'] == plain['poc_bytes']  # the PoC's figure is the PoC's
    assert less['explanation'][-1] == ("less the measuring tool's own processes (Ansible's module interpreters, the "
                                       "sampler; anonymous memory, _tool_processes) = %d - %d = %d B (%.1f MiB)"
                                       % (246 * MIB, 30 * MIB, 216 * MIB, 216.0))
    # Never below 0, and what was left out says how much was.
    capped = _memory_accounting.non_pod_memory(meminfo, kubepods, 0, tool_bytes=900 * MIB)
    assert capped['bytes'] == 0 and capped['measurement_tool_bytes'] == 246 * MIB


def test_a_users_program_under_an_ansible_tmp_path_stays_counted(tmp_path):
    """The finding: a user's ``python3 /home/u/ansible-tmp-1/hog.py`` holding 4 GiB was left out as the tool."""
    proc = tmp_path / 'proc'
    _process(proc, 700, ['python3', '/home/u/ansible-tmp-1/hog.py'], 1, pss_anon_kib=4 * 1024 * 1024, uid=1000)
    # And one that dresses its parent as Ansible's command wrapper.
    _process(proc, 710, ['/bin/sh', '-c', 'python3 && sleep 0'], 1, uid=1000)
    _process(proc, 711, ['python3'], 710, pss_anon_kib=1024 * 1024, uid=1000)
    found = _tool_processes.find(str(proc), 'kubepods.slice', tool_uid=0)
    assert found['processes'] == [] and found['bytes'] == 0
    # Root's own (the become user's) of the same shape are the tool.
    assert [p['pid'] for p in _tool_processes.find(str(proc), 'kubepods.slice', tool_uid=1000)['processes']] == [
        700, 711]


def test_what_is_left_out_is_capped(tmp_path):
    proc = tmp_path / 'proc'
    for pid in (700, 701, 702):
        _process(proc, pid, ['python3', TMP + '/AnsiballZ_x.py'], 1, pss_anon_kib=300 * 1024)
    found = _tool_processes.find(str(proc), tool_uid=0)
    assert [p['left_out_bytes'] for p in found['processes']] == [256 * MIB, 256 * MIB, 0]
    assert found['bytes'] == _tool_processes.TOTAL_CAP_BYTES == 512 * MIB


def test_the_measuring_process_and_its_interpreter_chain_are_the_tool(tmp_path):
    """The facts module run by ``async``: its pid, and async_wrapper's interpreters above it; not the shell."""
    proc = tmp_path / 'proc'
    _process(proc, 517, ['/usr/bin/python3', '/opt/wrapper.py'], 1, pss_anon_kib=100)
    _process(proc, 518, ['/bin/sh', '-c', 'x'], 517, pss_anon_kib=100)
    _process(proc, 519, ['/usr/bin/python3'], 518, pss_anon_kib=200)
    found = _tool_processes.find(str(proc), own_pids=(519,), tool_uid=0)
    assert [(p['pid'], p['why']) for p in found['processes']] == [
        (517, 'an ancestor of the measuring process (its interpreter chain)'), (519, 'the measuring process itself')]


def test_no_interpreters_parent_is_read_while_no_ansible_wrapper_runs(tmp_path, monkeypatch):
    # A node runs many Python programs and, between playbook runs, no Ansible wrapper shell: an interpreter is
    # Ansible's only under one, so none of their parents is read then (only the measuring process's own chain).
    proc = tmp_path / 'proc'
    _process(proc, 1, ['/sbin/init'], 0, cgroup='0::/init.scope\n')
    for pid in range(100, 120):
        _process(proc, pid, ['/usr/bin/python3', '/opt/app%d.py' % pid], 1, pss_anon_kib=1000)
    _process(proc, 520, ['/usr/bin/python3', '/usr/local/lib/nodealloc-sampler/nodealloc-sampler.py'], 1,
             pss_anon_kib=5000)
    reads = []
    real = _tool_processes._procfs.read_process_file
    monkeypatch.setattr(_tool_processes._procfs, 'read_process_file',
                        lambda pid, name, root='/proc': reads.append((pid, name)) or real(pid, name, root))
    found = _tool_processes.find(str(proc), own_pids=(520,), tool_uid=0)
    assert [p['pid'] for p in found['processes']] == [520]
    assert [pid for pid, name in reads if name == 'status'] == [520]
    # With a wrapper running, its interpreter is found, so the parents are read again.
    _process(proc, 525, ['/bin/sh', '-c', '/usr/bin/python3 && sleep 0'], 1)
    _process(proc, 526, ['/usr/bin/python3'], 525, pss_anon_kib=11000)
    found = _tool_processes.find(str(proc), own_pids=(520,), tool_uid=0)
    assert [p['pid'] for p in found['processes']] == [520, 526]
