"""Ansible's own module interpreters found in the real /proc while real ansible-core runs a task on this machine.

The test starts ``ansible localhost`` twice with the project's ansible.cfg (pipelining on): a pipelined module that
waits, and an ``async`` command (async_wrapper) whose program is ``sleep``. While each runs (the module; the async
job, which outlives ansible's own exit with ``-P 0``, is waited for through its results file) it reads /proc itself:
the module's interpreter must be among what _tool_processes finds (a descendant of the ``ansible`` process the test
started, which nothing else on the machine is), and the task's own program (``sleep``) must not be: that is the
workload, not the tool. Other Ansible runs on a busy CI host (the matrix lanes) may be found too; the test only
looks at its own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs, _tool_processes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ansible(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    return subprocess.Popen([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-c', 'local',
                             '-e', 'ansible_python_interpreter=' + sys.executable] + list(args),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _ancestors(pid):
    chain = []
    while pid and pid not in chain:
        chain.append(pid)
        status = (_procfs.read_process_file(pid, 'status') or b'').decode()
        ppid = [line.split()[1] for line in status.splitlines() if line.startswith('PPid:')]
        pid = int(ppid[0]) if ppid else 0
    return chain


def _descendants(root):
    return {pid: _procfs.read_cmdline(pid) for pid in _procfs.list_pids() if root in _ancestors(pid)[1:]}


def _wait_for(predicate, what, ended, seconds=120):
    """What predicate returns once it is true; fails at once when ended() says it never will, else after seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        why = ended()
        if why:
            raise AssertionError('%s before %s' % (why, what))
        time.sleep(0.2)
    raise AssertionError('no %s within %d s' % (what, seconds))


def _ansible_ended(process):
    return lambda: process.poll() is not None and 'ansible ended (%s)' % process.stdout.read()


def _job(results_file):
    """The async job's results file: {started, finished: false} while it runs, its module's result once it ended."""
    try:
        with open(results_file) as f:
            return json.load(f)
    except (OSError, ValueError):  # not written yet, or being replaced
        return None


def _job_ended(results_file):
    def ended():
        job = _job(results_file)
        return job is not None and not (job.get('started') and job.get('finished') is False) and (
            'the async job ended (%s)' % job)
    return ended


def test_a_pipelined_modules_interpreter_is_found_in_the_real_proc():
    # Longer than any wait below: the module must still run when the test looks (the test ends it).
    process = _ansible('-m', 'ansible.builtin.wait_for', '-a', 'timeout=600')
    try:
        def ours():
            mine = [p for p in _tool_processes.find()['processes'] if process.pid in _ancestors(p['pid'])[1:]]
            return mine
        mine = _wait_for(ours, "the module's interpreter", _ansible_ended(process))
        # The wrapper shell is Ansible's (script ending '&& sleep 0'); the interpreter is the found process.
        assert [p['why'] for p in mine] == ['the interpreter of an Ansible module (its parent is Ansible\'s command '
                                            'wrapper)'], mine
        parent = _procfs.read_cmdline(_ancestors(mine[0]['pid'])[1])
        assert parent[-1].endswith('&& sleep 0'), parent
        assert mine[0]['anonymous_bytes'] > 1024 * 1024  # a Python interpreter holding ansible's module_utils
    finally:
        # Ansible's worker starts a session of its own: its processes are killed one by one, then the group.
        for pid in _descendants(process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_an_async_tasks_interpreters_are_found_and_its_program_is_not():
    seconds = str(300 + os.getpid() % 600)  # a sleep of its own: nothing else on the machine runs this one
    process = _ansible('-m', 'ansible.builtin.command', '-a', 'sleep ' + seconds, '-B', '900', '-P', '0')
    results_file = None
    try:
        # With -P 0 ansible returns once async_wrapper has started the job, which may be before the job's module
        # has started its program: the job is waited for through its own results file, not ansible's exit.
        output = process.communicate(timeout=120)[0]
        assert process.returncode == 0, output
        results_file = re.search(r'results_file"?:\s*"?([^"\s,]+)', output).group(1)
        # async_wrapper daemonises (its parent becomes 1): the task's program is found by its command line.
        sleeping = _wait_for(lambda: _sleeps(seconds), "the task's sleep", _job_ended(results_file))
        found = {p['pid']: p for p in _tool_processes.find()['processes']}
        # Its ancestors up to init: the command module's interpreter and async_wrapper's, each running a file of
        # Ansible's remote tmp directory.
        chain = _ancestors(sleeping[0])[1:-1]
        runs = [pid for pid in chain if any('/ansible-tmp-' in part for part in _procfs.read_cmdline(pid) or [])]
        assert runs and set(runs) <= set(found), (chain, runs, found)
        assert all(found[pid]['why'] == "runs a file of Ansible's remote temporary directory" for pid in runs)
        assert sleeping[0] not in found  # the workload stays counted
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        # Ending the job's sleep ends the job: its module writes the result and async_wrapper exits.
        for pid in _sleeps(seconds):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if results_file:
            deadline = time.monotonic() + 30
            while not _job_ended(results_file)() and time.monotonic() < deadline:
                time.sleep(0.2)
            try:
                os.unlink(results_file)
            except OSError:
                pass


def _sleeps(seconds):
    return [pid for pid in _procfs.list_pids() if _procfs.read_cmdline(pid) == ['sleep', seconds]]
