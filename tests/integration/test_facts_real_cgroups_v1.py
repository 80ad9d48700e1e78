"""node_reservation_facts' measuring logic against real cgroup v1 groups holding real processes.

Each test builds the layout a kubelet would (systemd or cgroupfs driver, QoS and pod
children), starts processes that allocate known amounts and burn CPU inside it,
measures, and compares with what the processes really did. Tolerances:
* memory: each Python workload adds its interpreter (about 8-10 MiB) to what it
  allocated, so a group's working set must lie in [allocated, allocated + 16 MiB
  per process];
* CPU: a busy loop gets what the machine leaves it (on a busy 2-core machine, well
  under 1000m), so the measurement is bracketed by the loop's own CPU time from
  /proc/<pid>/stat read just before and after the measuring: over the 2 s sample it
  used at least what it used in the bracket minus one core for the bracket's extra
  wall time, and at most all of it (50m either side for clock ticks). A busy loop in an SSH
  session's group is bracketed the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError

MIB = 1024 * 1024
PER_PROCESS_OVERHEAD = 16 * MIB

KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
kubeReserved:
  cpu: 100m
  memory: 256Mi
systemReserved:
  memory: 128Mi
evictionHard:
  memory.available: 200Mi
"""


def pod(qos_slice, qos_name):
    uid = str(uuid.uuid4()).replace('-', '_')
    return 'kubepods.slice/%s/kubepods-%s-pod%s.slice' % (qos_slice, qos_name, uid)


def assert_within(value, low, high, what):
    assert low <= value <= high, '%s = %d, expected between %d and %d' % (what, value, low, high)


def cpu_seconds(pid):
    """utime + stime of a process (proc(5)), in seconds."""
    with open('/proc/%d/stat' % pid, encoding='ascii') as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf('SC_CLK_TCK'))


def systemd_driver_layout(cgroup_tree, directory):
    """(config path, the best-effort pod's busy loop, the kubelet) of a node with the systemd driver: a burstable pod
    allocating 200 MiB, a best-effort one allocating 100 MiB and burning a CPU, a kubelet (60 MiB, KUBELET_CONFIG)
    and containerd (30 MiB) in their units. Also docs/arithmetic.md's worked example (hack/worked-example.py)."""
    config = directory / 'config.yaml'
    config.write_text(KUBELET_CONFIG)
    cgroup_tree.spawn(pod('kubepods-burstable.slice', 'burstable'), alloc_mib=200)
    burner = cgroup_tree.spawn(pod('kubepods-besteffort.slice', 'besteffort'), alloc_mib=100, burn=True)
    cgroup_tree.make('kubepods.slice/kubepods-guaranteed.slice')
    kubelet = cgroup_tree.spawn('system.slice/kubelet.service', alloc_mib=60, program='kubelet',
                                extra_args=['--config=%s' % config, '--kubeconfig=/dev/null'])
    cgroup_tree.spawn('system.slice/containerd.service', alloc_mib=30, program='containerd')
    return config, burner, kubelet


def test_systemd_driver_layout(cgroup_tree, tmp_path):
    config, burner, kubelet = systemd_driver_layout(cgroup_tree, tmp_path)

    sample = 2.0
    cpu_before, wall_before = cpu_seconds(burner.pid), time.monotonic()
    facts = _gather.gather({'sample_seconds': sample, 'history_path': str(tmp_path / 'history.jsonl')})
    burned, bracket = cpu_seconds(burner.pid) - cpu_before, time.monotonic() - wall_before

    assert facts['cgroup']['version'] == 'v1'
    assert facts['cgroup']['driver'] == 'systemd'
    assert facts['cgroup']['kubepods'] == '/kubepods.slice'
    # The kernel's own limit file of the kubepods group, where the rollout reads the kubelet's limit back.
    limit_file = facts['cgroup']['kubepods_limit_file']
    assert limit_file.endswith('/kubepods.slice/memory.limit_in_bytes') and os.path.isfile(limit_file)
    assert int(open(limit_file).read()) > 0
    memory = facts['memory']
    assert_within(memory['kubepods_working_set_bytes'], 300 * MIB, 300 * MIB + 2 * PER_PROCESS_OVERHEAD,
                  'kubepods working set')
    assert memory['non_pod_poc_bytes'] == (memory['mem_total_bytes'] - memory['mem_available_bytes']
                                           - memory['kubepods_working_set_bytes'])
    accounting = memory['non_pod_accounting']
    assert memory['non_pod_bytes'] == (memory['non_pod_poc_bytes'] + accounting['pods_counted_available_bytes']
                                       - accounting['measurement_tool_bytes'])
    assert_within(memory['kube_components_working_set_bytes'], 90 * MIB, 90 * MIB + 2 * PER_PROCESS_OVERHEAD,
                  'kubelet + runtime working set')
    assert sorted(c['cgroup'] for c in memory['kube_components']['cgroups']) == [
        '/system.slice/containerd.service', '/system.slice/kubelet.service']

    cpu = facts['cpu']
    assert_within(cpu['kubepods_millicores'], 1000 * (burned - (bracket - sample)) / sample - 50,
                  1000 * burned / sample + 50, 'kubepods CPU (the busy loop used %.0fm over %.2f s)' % (1000 * burned / bracket, bracket))
    assert cpu['node_busy_millicores'] >= cpu['kubepods_millicores'] - 200
    assert cpu['non_pod_millicores'] == max(0, cpu['node_busy_millicores'] - cpu['kubepods_millicores']
                                            - cpu['session_millicores'])

    assert facts['kubelet']['pid'] == kubelet.pid
    assert facts['kubelet']['config_path'] == str(config)
    assert facts['kubelet']['config_found_by'] == 'running kubelet command line'
    current = facts['current']
    assert current['kube_reserved'] == {'cpu': '100m', 'memory': '256Mi'}
    assert current['eviction_hard'] == {'memory.available': '200Mi'}
    assert facts['recommendation']['eviction_hard_memory_bytes'] == 200 * MIB
    # The kubelet and runtime hold part of non-pod memory, so kubeReserved gets a measured share.
    assert facts['recommendation']['kube_reserved']['memory'] != '0'


def test_cpu_of_an_ssh_session_is_reported_and_not_counted_as_non_pod(cgroup_tree, tmp_path):
    # Where sessions stay in sshd's unit (no pam_systemd), as Ansible's tasks on a node do: a busy loop there.
    session = cgroup_tree.spawn('system.slice/ssh.service', burn=True)
    sample = 2.0
    cpu_before, wall_before = cpu_seconds(session.pid), time.monotonic()
    facts = _gather.gather({'sample_seconds': sample, 'history': False,
                           'kubelet_config_path': str(tmp_path / 'none.yaml')})
    burned, bracket = cpu_seconds(session.pid) - cpu_before, time.monotonic() - wall_before

    cpu = facts['cpu']
    assert 'system.slice/ssh.service' in cpu['session_cgroups']
    assert_within(cpu['session_millicores'], 1000 * (burned - (bracket - sample)) / sample - 50,
                  1000 * burned / sample + 50, 'session CPU (the busy loop used %.0fm over %.2f s)'
                  % (1000 * burned / bracket, bracket))
    assert cpu['non_pod_millicores'] == max(0, cpu['node_busy_millicores'] - cpu['kubepods_millicores']
                                            - cpu['session_millicores'])


def test_cgroupfs_driver_layout_without_a_kubelet(cgroup_tree, tmp_path):
    uid = uuid.uuid4()
    cgroup_tree.spawn('kubepods/burstable/pod%s' % uid, alloc_mib=150)
    cgroup_tree.make('kubepods/besteffort')

    facts = _gather.gather({'sample_seconds': 0.5, 'kubelet_config_path': str(tmp_path / 'absent.yaml'),
                           'history': False})

    assert facts['cgroup']['driver'] == 'cgroupfs'
    assert facts['cgroup']['kubepods'] == '/kubepods'
    assert_within(facts['memory']['kubepods_working_set_bytes'], 150 * MIB, 150 * MIB + PER_PROCESS_OVERHEAD,
                  'kubepods working set')
    assert facts['current'] is None
    # No kubelet config at the path given. Whether a kubelet process runs is not this test's to say: make test's other
    # lanes run kubelet-named processes on this host meanwhile (two full runs found one here); the process search is
    # tested on /proc trees of its own (tests/unit/plugins/module_utils/_node/test__kubelet_process.py).
    assert any(str(tmp_path / 'absent.yaml') in line for line in facts['not_found'])


def test_inactive_file_cache_is_not_working_set(cgroup_tree, tmp_path):
    # Page cache read once sits on the inactive list: usage grows, the working set does not.
    relative = cgroup_tree.make('kubepods.slice/kubepods-besteffort.slice')
    data = tmp_path / 'cache.bin'
    data.write_bytes(os.urandom(64 * MIB))
    before = _gather.gather({'sample_seconds': 0, 'history': False})['memory']['kubepods']

    def read_inside_group():
        with open('/sys/fs/cgroup/memory/%s/cgroup.procs' % relative, 'w') as handle:
            handle.write(str(os.getpid()))

    # Write back and drop the file's pages first, so that the read below is charged to the group.
    with open(data, 'rb+') as handle:
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    subprocess.run([sys.executable, '-c', 'open(%r, "rb").read()' % str(data)], check=True,
                   preexec_fn=read_inside_group)
    after = _gather.gather({'sample_seconds': 0, 'history': False})['memory']['kubepods']
    assert after['usage_bytes'] - before['usage_bytes'] >= 60 * MIB
    assert after['inactive_file_bytes'] - before['inactive_file_bytes'] >= 60 * MIB
    assert after['working_set_bytes'] - before['working_set_bytes'] < 8 * MIB


@pytest.mark.parametrize('relative', ['nope', 'kubepods.slice/missing'])
def test_override_to_a_missing_cgroup_is_refused(cgroup_tree, relative):
    cgroup_tree.make('kubepods.slice')
    with pytest.raises(LayoutError, match='does not exist'):
        _gather.gather({'sample_seconds': 0, 'kubepods_cgroup': relative, 'history': False})
