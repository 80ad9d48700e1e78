"""Create real cgroup v1 groups, start processes inside them, and remove everything afterwards.

Used by the integration tests on machines with v1 controllers mounted under
/sys/fs/cgroup/<controller> (this one, and CI). Processes are placed in their
groups before they allocate (through preexec_fn), because v1 charges memory
to the group that was current when the page was first touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from helpers import host_cgroups_lock

CONTROLLERS = ('memory', 'cpu', 'cpuacct')
ROOT = '/sys/fs/cgroup'
WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'workload.py')


def v1_available():
    return os.geteuid() == 0 and all(
        os.path.isfile(os.path.join(ROOT, c, 'cgroup.procs')) for c in CONTROLLERS) and os.path.isfile(
        os.path.join(ROOT, 'memory', 'memory.usage_in_bytes'))


class CgroupTree:
    """Groups made by one test; ``cleanup`` kills their processes and removes them, deepest first."""

    def __init__(self):
        self.groups = []
        self.processes = []
        self.scratch = []

    def make(self, relative):
        with host_cgroups_lock.held():  # no lane measures the host between two controllers' groups
            return self._make(relative)

    def _make(self, relative):
        parts = relative.strip('/').split('/')
        for depth in range(1, len(parts) + 1):
            partial = '/'.join(parts[:depth])
            for controller in CONTROLLERS:
                path = os.path.join(ROOT, controller, partial)
                if not os.path.isdir(path):
                    os.mkdir(path)
                    self.groups.append(path)
        return relative.strip('/')

    def spawn(self, relative, alloc_mib=0, burn=False, program=None, extra_args=()):
        """Start a workload inside ``relative``; returns once it has allocated its memory."""
        relative = self.make(relative)
        script = WORKLOAD
        if program:
            # A copy named like the program, so /proc/<pid>/cmdline shows it as argv[1].
            directory = os.path.join('/tmp', 'nodealloc-bin-%d' % os.getpid())
            os.makedirs(directory, exist_ok=True)
            script = os.path.join(directory, program)
            shutil.copy(WORKLOAD, script)
            self.scratch.append(directory)

        def enter_groups():
            for controller in CONTROLLERS:
                with open(os.path.join(ROOT, controller, relative, 'cgroup.procs'), 'w') as handle:
                    handle.write(str(os.getpid()))

        argv = [sys.executable, script, '--alloc-mib', str(alloc_mib)] + (['--burn'] if burn else []) + list(extra_args)
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, preexec_fn=enter_groups)
        self.processes.append(process)
        line = process.stdout.readline()
        if not line.startswith(b'ready'):
            raise RuntimeError('workload did not start: %r' % line)
        return process

    def cleanup(self):
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait()
            process.stdout.close()
        with host_cgroups_lock.held():
            self._remove_groups()
        for directory in self.scratch:
            shutil.rmtree(directory, ignore_errors=True)

    def _remove_groups(self):
        for path in sorted(self.groups, key=lambda p: p.count('/'), reverse=True):
            for _attempt in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)  # the kernel frees a group a moment after its last task exits
