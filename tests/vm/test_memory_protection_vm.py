"""memory.min/memory.low and cpu.pressure read end to end on the cgroup v2 guest, from what a kubelet wrote.

The guest's stand-in kubelet is made a 1.36 kubelet with the MemoryQoS gate on, ``memoryReservationPolicy:
TieredReservation`` and ``system-reserved`` enforced on ``/sysres.slice`` (a drop-in, then a restart): from its own
reading of node_container_manager_linux.go it writes that group's memory.max and, with MemoryQoS on cgroup v2, its
memory.min (tests/standin/kubelet.py). The module's code then runs on the guest (``_gather.gather``) and must report
the memory.min the kernel shows, the group's working set between the test's own reads, the cost that follows from
them, and PSI parsed from the kernel's cpu.pressure. The guest is put back as it was afterwards (the other tests in
tests/vm share it).
"""

from __future__ import annotations

import json

from nodes import vmnodes

MIB = 1024 * 1024
DROPIN = '/etc/kubernetes/kubelet.conf.d/50-memory-qos.conf'
DROPIN_TEXT = json.dumps({
    'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
    'featureGates': {'MemoryQoS': True}, 'memoryReservationPolicy': 'TieredReservation',
    'enforceNodeAllocatable': ['pods', 'system-reserved'], 'systemReservedCgroup': '/sysres.slice',
    'systemReserved': {'memory': '64Mi', 'cpu': '100m'}})
# The stand-in answers /healthz once it started, i.e. once its start-up checks passed and the groups were written.
HEALTHY_AFTER_RESTART = ('systemctl restart kubelet.service && for i in $(seq 600); do python3 -c "import urllib.request '
                         'as u; u.urlopen(\'http://127.0.0.1:10248/healthz\', timeout=5)" 2>/dev/null && exit 0; '
                         'sleep 0.5; done; exit 1')
PROBE = r'''
import json, sys
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
# The module's argument spec as _module_glue builds it, without its Ansible import: the guest has no Ansible.
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import FACTS, argument_spec
NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)

def working_set(group):
    base = "/sys/fs/cgroup/" + group
    stat = dict(line.split() for line in open(base + "/memory.stat"))
    return int(open(base + "/memory.current").read()) - int(stat["inactive_file"])

before = working_set("sysres.slice")
options = {name: spec.get("default") for name, spec in NODE_RESERVATION_FACTS_OPTIONS.items()}
options.update(sample_seconds=1, history=False, _check_mode=True)
facts = _gather.gather(options)
after = working_set("sysres.slice")
print(json.dumps({"before": before, "after": after, "memory_min": open("/sys/fs/cgroup/sysres.slice/memory.min").read(),
                  "cpu_pressure": open("/sys/fs/cgroup/system.slice/cpu.pressure").read(),
                  "protection": facts["memory_protection"], "proposal": facts["enforcement_proposal"],
                  "explanation": facts["recommendation"]["explanation"], "pressure": facts["pressure"],
                  "version": facts["kubelet"]["version"]}, default=str))
'''


def test_memory_min_the_kubelet_wrote_and_cpu_pressure_reach_the_facts(vm_guests):
    node = vm_guests['facts-v2']
    state_dir = node['state_dir']

    def sh(command):
        return vmnodes.ssh(node, state_dir, command).stdout

    vmnodes.push_module_utils(node, state_dir)
    sh('systemd-run --quiet --unit=sysres-daemon.service --slice=sysres.slice -- sleep infinity')
    try:
        sh("mkdir -p /etc/kubelet-standin && echo v1.36.0 > /etc/kubelet-standin/version && cat > %s <<'EOF'\n%s\nEOF"
           % (DROPIN, DROPIN_TEXT))
        sh(HEALTHY_AFTER_RESTART)
        probe = json.loads(sh("python3 - <<'EOF'\n%s\nEOF" % PROBE))
    finally:
        sh('rm -f %s /etc/kubelet-standin/version; systemctl stop sysres-daemon.service; systemctl stop sysres.slice; '
           '%s' % (DROPIN, HEALTHY_AFTER_RESTART))

    assert probe['version']['version'] == '1.36.0' and probe['version']['refusals'] == []
    protection = probe['protection']
    assert protection['memory_qos_enabled'] is True
    assert protection['memory_reservation_policy'] == 'TieredReservation'
    groups = {g['cgroup']: g for g in protection['cgroups']}
    reserved = groups['/sysres.slice']
    # The kernel's file, read by the test after the module: what the stand-in kubelet wrote from systemReserved.
    assert reserved['memory_min'] == int(probe['memory_min']) == 64 * MIB
    assert reserved['role'] == 'system-reserved' and reserved['exists'] is True
    low, high = sorted((probe['before'], probe['after']))
    assert low <= reserved['working_set_bytes'] <= high
    cost = protection['cost']
    assert cost['protected_beyond_use_bytes'] == reserved['memory_min'] - reserved['working_set_bytes']
    assert any(line.startswith('memory.min beyond use of /sysres.slice') for line in probe['explanation'])
    assert groups['/kubepods.slice']['memory_min'] == 0  # no pod requests: TieredReservation protects nothing there
    # cpu.pressure of system.slice, parsed from the kernel's file: the same fields the test reads itself.
    some = probe['pressure']['cgroups']['/system.slice']['cpu']['some']
    assert set(some) == {'avg10', 'avg60', 'avg300', 'total_usec'}
    assert probe['cpu_pressure'].startswith('some avg10=')
    # The module's avg300 is the kernel's: the test's own read, a moment later, moves by far less than a point
    # (a five-minute average).
    kernel_avg300 = float(probe['cpu_pressure'].split()[3].split('=')[1])
    assert abs(kernel_avg300 - some['avg300']) < 1.0, (kernel_avg300, some)
    # The proposal follows that reading: the guest is not idle (it just restarted its kubelet, and the tests before
    # this one loaded it; a busy build host's guest read avg300 10.95 %), so either branch can be the true one.
    # Each daemon group at or above the threshold is named, none below it is, and the reasons say which branch ran.
    proposal = probe['proposal']
    threshold = proposal['threshold_some_avg300_percent']
    daemons = ['/system.slice'] + [g for g in probe['pressure']['cgroups'] if g != '/system.slice']
    averages = {g: probe['pressure']['cgroups'][g]['cpu']['some']['avg300'] for g in daemons}
    expected = sorted(g for g, value in averages.items() if value >= threshold)
    assert sorted(s['cgroup'] for s in proposal['starved']) == expected, (averages, proposal)
    if not expected:
        assert proposal['proposed'] is False and proposal['reasons'][0].startswith('no daemon group waits for CPU')
    else:
        # The drop-in names systemReservedCgroup /sysres.slice and already enforces system-reserved there: the
        # starved groups are not in it, so nothing is proposed, and the reasons say so.
        assert proposal['proposed'] is False and proposal['changes'] == {}
        assert any(r.startswith('system-reserved-compressible would weigh /sysres.slice') for r in proposal['reasons'])
