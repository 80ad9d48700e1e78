"""A module's result holding node text that is not UTF-8 reaches the play (issue 44 item 6), through ansible-playbook.

On this machine, as root: a container runtime's stand-in (a root-owned program, found through
``runtime_process_names``) runs in a cgroup v1 group named with the bytes ``\\xf8bad`` in the memory, cpu and cpuacct
hierarchies, and node_reservation_facts measures it through ``ansible-playbook -c local``. The group's name is in the
result (the runtime is measured by its group). Before, ansible-core 2.19 and later refused the whole answer
(``MODULE_STRICT_UTF8_RESPONSE``: "surrogates not allowed") and the task failed; 2.16 (as measured) warned that the module
"returned non UTF-8 data" and passed the lone surrogates on to the play. Now the name is shown as docs/security.md says:
each byte that is not UTF-8 as ``\\xNN``.

It runs with the ansible-playbook beside the Python running it and the collection of NODEALLOC_TEST_COLLECTIONS_PATH,
so each lane of the controller matrix (noxfile.py, LANE_TESTS) runs it with its own ansible-core, 2.16 to 2.21. The
stand-in's name is no other process's, so a test measuring this machine meanwhile never takes it for a runtime
(as tests/integration/test_untrusted_processes.py). One playbook run: about 3 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH
from helpers import cgroups_v1, host_cgroups_lock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GROUP = os.fsdecode(b'\xf8bad')  # os.mkdir and open() write these very bytes back (surrogateescape)
RUNTIME = 'containerd-utf8-test'
PLAYBOOK = '''
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Measure this machine, whose runtime runs in a group named with a byte that is not UTF-8
      nodealloc.kubelet.node_reservation_facts:
        sample_seconds: 0
        runtime_process_names: [%s]
        kubelet_config_path: /nonexistent/config.yaml
      register: facts
    - name: Keep the result as the play received it
      ansible.builtin.copy:
        content: "{{ facts | to_json }}"
        dest: "{{ result_path }}"
        mode: "0600"
''' % RUNTIME


@pytest.fixture
def runtime_in_a_group_not_utf8():
    if not cgroups_v1.v1_available():
        pytest.skip('needs root and cgroup v1 memory, cpu and cpuacct controllers under /sys/fs/cgroup')
    tree = cgroups_v1.CgroupTree()
    try:
        # A copy of tests/helpers/workload.py named like the runtime, in a directory of root's alone, run by this Python.
        yield tree.spawn(GROUP, program=RUNTIME)
    finally:
        tree.cleanup()


def test_the_facts_module_returns_a_group_named_with_bytes_not_utf8_shown_as_hex(tmp_path, runtime_in_a_group_not_utf8):
    playbook, result_path = tmp_path / 'measure.yml', tmp_path / 'result.json'
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR='1')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
               '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', 'result_path=%s' % result_path, str(playbook)]
    # Measured under the host's cgroup lock, as the matrix lanes' own runs on localhost are (noxfile.py): the real-cgroup
    # tests beside this one make and remove kubepods.slice, and a measurement between the listing of that group and the
    # read of its files failed ("kubepods.slice/memory.usage_in_bytes: expected a readable file", ci54, 2026-12-07).
    with host_cgroups_lock.held():
        run = subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert 'non UTF-8' not in run.stdout + run.stderr  # ansible-core 2.16's deprecation warning
    facts = json.loads(result_path.read_text(encoding='utf-8'))
    assert {'pid': runtime_in_a_group_not_utf8.pid, 'program': RUNTIME} in facts['components']
    # Measured by its own group, whose name the result shows with the byte 0xf8 as the four characters \xf8.
    measured = facts['memory']['kube_components']['cgroups']
    assert '/\\xf8bad' in [group['cgroup'] for group in measured], measured
    assert '/sys/fs/cgroup/memory/\\xf8bad/memory.stat' in [group['stat_file'] for group in measured], measured
