"""_task_count: the node's tasks outside the pods and its PID limits, from /proc and cgroup trees laid out as the kernel
lays them out (a node's /proc/loadavg '0.68 1.53 4.24 3/135 21666', pid_max 32768 on a 4-CPU guest, threads-max
192735; kubepods.slice/pids.current on v2, /sys/fs/cgroup/pids/kubepods/pids.current on v1)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _task_count
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._cgroup import CgroupLayout


def proc_tree(tmp_path, loadavg='0.68 1.53 4.24 3/135 21666\n', pid_max='32768\n', threads_max='192735\n',
              processes=None):
    """A /proc of the files read; ``processes``: {pid: (cgroup file text, threads)}."""
    proc = tmp_path / 'proc'
    (proc / 'sys' / 'kernel').mkdir(parents=True)
    for name, text in (('loadavg', loadavg), ('sys/kernel/pid_max', pid_max), ('sys/kernel/threads-max', threads_max)):
        if text is not None:
            (proc / name).write_text(text)
    for pid, (cgroup, threads) in (processes or {}).items():
        (proc / str(pid) / 'task').mkdir(parents=True)
        (proc / str(pid) / 'cgroup').write_text(cgroup)
        for tid in range(threads):
            (proc / str(pid) / 'task' / str(pid + tid)).mkdir()
    return str(proc)


def v2_layout(tmp_path, pids_current=None):
    root = tmp_path / 'cgroup'
    (root / 'kubepods.slice').mkdir(parents=True)
    if pids_current is not None:
        (root / 'kubepods.slice' / 'pids.current').write_text(pids_current)
    return CgroupLayout('v2', 'unified', str(root), str(root), {str(root): '/'})


def v1_layout(tmp_path, pids_current=None):
    root = tmp_path / 'cgroup'
    (root / 'memory' / 'kubepods').mkdir(parents=True)
    (root / 'pids' / 'kubepods').mkdir(parents=True)
    if pids_current is not None:
        (root / 'pids' / 'kubepods' / 'pids.current').write_text(pids_current)
    memory = str(root / 'memory')
    return CgroupLayout('v1', 'legacy', memory, str(root / 'cpuacct'), {memory: '/'})


def test_v2_pods_from_pids_current_and_the_tool_left_out(tmp_path):
    proc = proc_tree(tmp_path, processes={4242: ('0::/user.slice/session-3.scope\n', 3)})
    found = _task_count.measure(v2_layout(tmp_path, '40\n'), 'kubepods.slice', proc, own_pids=(4242,))
    assert found == {'pid_max': 32768, 'threads_max': 192735, 'capacity': 32768, 'tasks_total': 135,
                     'kubepods_tasks': 40, 'kubepods_source': str(tmp_path / 'cgroup' / 'kubepods.slice' / 'pids.current'),
                     'measuring_tool_tasks': 3, 'non_pod_tasks': 135 - 40 - 3, 'available': 32768 - 135,
                     'problems': []}


def test_v1_pods_from_the_pids_hierarchy(tmp_path):
    found = _task_count.measure(v1_layout(tmp_path, '25\n'), 'kubepods', proc_tree(tmp_path))
    assert (found['kubepods_tasks'], found['non_pod_tasks']) == (25, 110)


def test_without_pids_current_the_pods_threads_are_counted_by_process(tmp_path):
    processes = {100: ('0::/kubepods.slice/kubepods-burstable.slice/pod1/cri-containerd-a.scope\n', 7),
                 200: ('0::/kubepods.slice\n', 2),
                 300: ('0::/kubepods.slice.not/x\n', 5),  # a name that only starts like it
                 400: ('0::/system.slice/containerd.service\n', 11)}
    found = _task_count.measure(v2_layout(tmp_path), 'kubepods.slice', proc_tree(tmp_path, processes=processes))
    assert (found['kubepods_tasks'], found['non_pod_tasks']) == (9, 126)
    assert found['kubepods_source'] == '/proc/<pid>/task of the processes in /kubepods.slice'


def test_v1_count_by_process_reads_the_pids_controller_line(tmp_path):
    processes = {100: ('12:pids:/kubepods/besteffort/pod1/c\n11:memory:/system.slice\n', 4),
                 200: ('12:pids:/system.slice\n11:memory:/kubepods/x\n', 6)}
    found = _task_count.measure(v1_layout(tmp_path), 'kubepods', proc_tree(tmp_path, processes=processes))
    assert found['kubepods_tasks'] == 4


def test_a_measuring_process_in_a_pod_is_not_taken_out_twice(tmp_path):
    proc = proc_tree(tmp_path, processes={4242: ('0::/kubepods.slice/pod9/c\n', 3)})
    found = _task_count.measure(v2_layout(tmp_path, '40\n'), 'kubepods.slice', proc, own_pids=(4242,))
    assert (found['measuring_tool_tasks'], found['non_pod_tasks']) == (0, 95)


def test_capacity_is_the_smaller_limit_as_the_kubelet_takes_it(tmp_path):
    found = _task_count.measure(v2_layout(tmp_path), None, proc_tree(tmp_path, pid_max='4194304\n', threads_max='63465\n'))
    assert (found['capacity'], found['available']) == (63465, 63465 - 135)


def test_files_not_in_the_kernels_form_leave_their_figure_unknown(tmp_path):
    proc = proc_tree(tmp_path, loadavg='0.68 1.53 4.24 3-135 21666\n', pid_max=None, threads_max='lots\n')
    found = _task_count.measure(v2_layout(tmp_path, 'x\n'), 'kubepods.slice', proc)
    assert (found['capacity'], found['tasks_total'], found['non_pod_tasks'], found['available']) == (None,) * 4
    assert len(found['problems']) == 4  # pid_max, threads-max, loadavg, pids.current (then counted by process)


@pytest.mark.parametrize('text, expected', [('32768\n', 32768), ('0', 0), ('1073741823\n', _task_count.MAX_TASKS)])
def test_parse_count(text, expected):
    assert _task_count.parse_count(text, 'f') == expected


@pytest.mark.parametrize('text', ['', '\n', ' 1\n', '1 \n', '+1', '-1', '1\n\n', '\u0661', '1073741824', '99999999999', 'max'])
def test_parse_count_refuses(text):
    with pytest.raises(ParseError):
        _task_count.parse_count(text, 'f')


@pytest.mark.parametrize('text', ['0.68 1.53 4.24 3/135\n', '0.68 1.53 4.24 3/135 21666', '0.68 1.53 4.24 135 1\n',
                                  '0.68 1.53 4.24 136/135 1\n', '0.68 1.53 4.24 0/0 1\n', '0.68  1.53 4.24 3/135 1\n'])
def test_parse_loadavg_refuses(text):
    with pytest.raises(ParseError):
        _task_count.parse_loadavg_tasks(text)


def test_pods_not_countable_leave_the_non_pod_figure_unknown(tmp_path):
    # No pids.current and a /proc that cannot be listed: the pods' tasks are unknown, and so is what is left.
    layout = v2_layout(tmp_path)
    found = _task_count.measure(layout, 'kubepods.slice', proc_tree(tmp_path) + '/absent')
    assert (found['kubepods_tasks'], found['non_pod_tasks']) == (None, None)
    assert any('not counted' in p for p in found['problems'])
