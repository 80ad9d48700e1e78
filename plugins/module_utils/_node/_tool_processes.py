# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The measuring tool's own processes on a node (Ansible's module interpreters, the sampler): left out of non-pod memory.

Why. A reading taken while this collection's tasks run on the node measures them. On three 1-GiB cgroup v2 test
guests (tests/scenarios/test_rollout.py, happy path, VM variant) the sampler's reading at the first run's start
found two Ansible module interpreters resident (15 and 13 MiB anonymous) and read 267 MB against 226 MB a minute
later; with the default percentile 100 that reading became the class's peak, and a second run minutes later raised
every node by 71 MiB and restarted every kubelet again. The step's own lock (_sample_once, ``step_dir``) covers only the
write-to-soak window; these processes come with every task. They exist only while a playbook runs, the headroom
covers such a transient, and counted they make each run measure the one before it. Their CPU is already out of the
non-pod CPU (the SSH session groups, _measure.SESSION_CGROUPS); this leaves out their memory, and only theirs.

How they are recognised (ansible-core, ``plugins/action/__init__.py`` ``_low_level_execute_command`` and
``plugins/shell/__init__.py``): every remote command runs as ``<shell> -c '<cmd> && sleep 0'`` (the ``sleep 0``
is Ansible's mitigation for an SSH race, ansible/ansible#13876). With pipelining ``<cmd>`` is the interpreter
itself, reading the module on stdin; without it, and always for ``async``, the interpreter runs a file in the
remote temporary directory ``ansible-tmp-<time>-<pid>-<random>`` (``AnsiballZ_<module>.py``, ``async_wrapper``).
With ``become``, ``<cmd>`` is ``sudo ... <shell> -c 'echo BECOME-SUCCESS-<id> ; <interpreter>'``
(``plugins/become/__init__.py``). So a process is Ansible's own when its argv names a path under an
``ansible-tmp-`` directory, or when it is a Python interpreter whose parent is such a shell (its script ends with
``&& sleep 0`` or holds ``BECOME-SUCCESS-``). What a module starts (``ansible.builtin.shell``'s program, an
``apt`` run) is the workload the playbook puts on the node: it stays counted. Modules run another way (mitogen)
are not recognised and stay counted, the safe side.

Whose. A command line is what its owner says it is: any user can run ``python3 /home/u/ansible-tmp-1/hog.py``, or a
Python under a shell whose script ends with ``&& sleep 0``, and a figure that left such a program out could be
emptied by any user (4 GiB hidden took a node's non-pod figure from 6.00 to 2.00 GiB). So only this run's own
processes are left out: the measuring process itself and its Python ancestors (the module's own pid and its Ansible
parent chain; the sampler passes its own pid), and the processes of the shape above that run as the measuring
process's own user (every uid on the ``Uid:`` status line: the become user, root, whose processes root trusts
anyway; the sampler runs as root too). A process of another user is never left out. And at most PROCESS_CAP_BYTES of
one process and TOTAL_CAP_BYTES of all: Ansible's interpreters hold 5 to 15 MiB each (the measurements above), so
the caps leave every real one out whole and keep a mistake, or a root program that only looks like Ansible's, from
hiding more than that.

What is left out: each one's anonymous memory, ``Pss_Anon`` of ``/proc/<pid>/smaps_rollup`` (Linux 5.3+,
Documentation/ABI/testing/procfs-smaps_rollup: a page shared by the forks of ``async_wrapper`` counts once in
all), else ``RssAnon`` of ``/proc/<pid>/status``. Never a process in kubepods: a pod's processes are already out of
the non-pod figure (an AWX execution environment runs Ansible in a pod).
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError

ANSIBLE_TMP_MARK = '/ansible-tmp-'
PIPELINE_SUFFIX = '&& sleep 0'
BECOME_MARK = 'BECOME-SUCCESS-'
_KIB = 1024
_MIB = 1024 * _KIB
# Some twenty times the largest interpreter seen (15 MiB), and twice that for all of a run's (module docstring).
PROCESS_CAP_BYTES = 256 * _MIB
TOTAL_CAP_BYTES = 512 * _MIB


def _is_python(argv):
    return bool(argv) and 'python' in os.path.basename(argv[0])


def _ansible_shell(argv):
    """True for ``<shell> -c <script>`` whose script is the wrapper Ansible runs a module in."""
    if not argv or len(argv) < 3 or argv[-2] != '-c':
        return False
    script = argv[-1].rstrip()
    return script.endswith(PIPELINE_SUFFIX) or BECOME_MARK in script


def _runs_tmp_file(argv):
    """Whether an argument names a path under Ansible's remote temporary directory (one search over the joined
    arguments: no argument holds a NUL)."""
    return bool(argv) and ANSIBLE_TMP_MARK in '\0'.join(argv)


def why_ansible(argv, parent_argv):
    """Why a process with ``argv`` (its parent's ``parent_argv``) is one of Ansible's module runs, or None."""
    if _runs_tmp_file(argv):
        return 'runs a file of Ansible\'s remote temporary directory'
    if _is_python(argv) and _ansible_shell(parent_argv):
        return 'the interpreter of an Ansible module (its parent is Ansible\'s command wrapper)'
    return None


def anonymous_bytes(pid, proc_root='/proc'):
    """(bytes, source): Pss_Anon of smaps_rollup where the kernel has it, else RssAnon; (0, None) if gone."""
    raw = _procfs.read_process_file(pid, 'smaps_rollup', proc_root)
    for line in (raw or b'').decode('utf-8', 'replace').splitlines():
        if line.startswith('Pss_Anon:'):
            return int(line.split()[1]) * _KIB, 'smaps_rollup Pss_Anon'
    value = _procfs.read_process_status_field(pid, 'RssAnon', proc_root)
    if value:
        return int(value.split()[0]) * _KIB, 'status RssAnon'
    return 0, None


def _in_kubepods(pid, kubepods, proc_root):
    groups = _procfs.read_process_cgroups(pid, proc_root) or {}
    prefix = '/' + kubepods.strip('/')
    return any(path == prefix or path.startswith(prefix + '/') for path in groups.values())


def _own_chain(own_pids, cmdlines, proc_root):
    """{pid: why} of the measuring processes and their Python ancestors (async_wrapper's, a module's own chain)."""
    chain = {}
    for pid in own_pids:
        chain[pid] = 'the measuring process itself'
        parent, seen = _procfs.read_process_parent(pid, proc_root), {pid}
        while parent and parent not in seen and parent != 1:
            seen.add(parent)
            argv = cmdlines.get(parent)
            if _is_python(argv) or _runs_tmp_file(argv):
                chain.setdefault(parent, 'an ancestor of the measuring process (its interpreter chain)')
            parent = _procfs.read_process_parent(parent, proc_root)
    return chain


def find(proc_root='/proc', kubepods=None, own_pids=(), cmdlines=None, tool_uid=None):
    """The tool's processes outside kubepods: {'bytes': their anonymous memory, capped, 'processes': [...]}.

    ``own_pids``: the caller's own process (the facts module's, the sampler's); ``cmdlines``: _procfs.read_cmdlines's
    answer where the caller read it once for the kubelet search too; ``tool_uid``: the user the tool runs as (this
    process's, unless given). Each process: pid, the first 80 characters of its command line, why it counts, its
    anonymous bytes, where they were read and how many of them are left out (``left_out_bytes``, capped).
    """
    if cmdlines is None:
        try:
            cmdlines = _procfs.read_cmdlines(proc_root)
        except MeasurementError as exc:
            # Nothing is left out then: the figure keeps everything, the safe side.
            return {'bytes': 0, 'processes': [], 'note': str(exc)}
    tool_uid = os.geteuid() if tool_uid is None else tool_uid
    own = _own_chain(own_pids, cmdlines, proc_root)
    # An interpreter is Ansible's only under one of these: without any, no interpreter's parent need be read (the
    # read was a third of the facts' own cost on a machine running a score of Python programs).
    shells = any(_ansible_shell(argv) for argv in cmdlines.values())
    processes = []
    room = TOTAL_CAP_BYTES
    for pid, argv in sorted(cmdlines.items()):
        runs_tmp_file = _runs_tmp_file(argv)
        if pid in own:
            why = own[pid]
        elif runs_tmp_file or (shells and _is_python(argv)):
            # Only these can match: the parent is read for them alone (a node runs thousands of processes), and only
            # where it decides (why_ansible does not look at it for a file of the temporary directory).
            parent_argv = None if runs_tmp_file else cmdlines.get(_procfs.read_process_parent(pid, proc_root))
            why = why_ansible(argv, parent_argv)
            if why and _procfs.read_process_uids(pid, proc_root) != (tool_uid,) * 4:
                continue  # another user's program, whatever its command line says: counted
        else:
            continue
        if why is None or (kubepods and _in_kubepods(pid, kubepods, proc_root)):
            continue
        amount, source = anonymous_bytes(pid, proc_root)
        if source is None:
            continue  # gone since it was listed
        left_out = min(amount, PROCESS_CAP_BYTES, room)
        room -= left_out
        processes.append({'pid': pid, 'command': _procfs.shown(' '.join(argv))[:80], 'why': why,
                          'anonymous_bytes': amount, 'left_out_bytes': left_out, 'source': source})
    return {'bytes': sum(p['left_out_bytes'] for p in processes), 'processes': processes, 'note': None}
