"""node_reservation_facts on a real kernel with a real systemd: a cgroup v2 guest and a cgroup v1 guest.

A Burstable pod allocating 256 MiB runs where the kubelet's systemd driver puts it
(kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice); the stand-in kubelet
and the runtime stand-in run as kubelet.service and containerd.service in the system.slice the
guest's systemd made. On the guest, one script reads /proc/meminfo and the kubepods cgroup files,
runs the module's measuring code (_gather.gather, as the module does), and reads them again; the
module's figures must lie between the two reads (MemAvailable: within the range of reads taken every
millisecond throughout, as it moves both ways), and its derived figures must follow from them exactly.
Nothing the test asserts was written by the test into the code under test.
"""

from __future__ import annotations

import json
import uuid

import pytest

from nodes import vmnodes

MIB = 1024 * 1024
# Python's interpreter and the pod's page tables on top of the 256 MiB it touches.
POD_OVERHEAD = 24 * MIB
# pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust: Burstable gets 1000 - (1000 * request) / capacity,
# clamped to [2, 999] (here request 128 MiB of the guest's capacity, computed on the guest).
ALLOCATE = 'import time; b = b"\\x01" * (256 << 20); open("/run/pod-ready", "w").close(); time.sleep(100000)'
PROBE = r'''
import json, os, sys, threading, time
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
# The module's argument spec as _module_glue builds it, without its Ansible import: the guest has no Ansible.
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import FACTS, argument_spec
NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)

def meminfo():
    with open("/proc/meminfo") as handle:
        return {line.split(":")[0]: int(line.split()[1]) * 1024 for line in handle}

def kubepods(root):
    version = "v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1"
    base = "/sys/fs/cgroup/kubepods.slice" if version == "v2" else "/sys/fs/cgroup/memory/kubepods.slice"
    usage = int(open(base + ("/memory.current" if version == "v2" else "/memory.usage_in_bytes")).read())
    stat = dict(line.split() for line in open(base + "/memory.stat"))
    inactive = int(stat["inactive_file" if version == "v2" else "total_inactive_file"])
    return {"usage": usage, "inactive": inactive}

def own_memory(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field + ":"))

# MemAvailable is not monotone while the module measures for a second: the guest's daemons allocate and free,
# per-CPU page lists drain. Reads taken every millisecond throughout give the range it took.
seen, measuring = {"low": None, "high": None, "reads": 0}, threading.Event()

def note(value):
    seen["low"] = value if seen["low"] is None else min(seen["low"], value)
    seen["high"] = value if seen["high"] is None else max(seen["high"], value)
    seen["reads"] += 1

def watch():
    while not measuring.is_set():
        note(meminfo()["MemAvailable"])
        time.sleep(0.001)

before = {"meminfo": meminfo(), "kubepods": kubepods(None), "rss": own_memory("VmRSS")}
note(before["meminfo"]["MemAvailable"])
watcher = threading.Thread(target=watch)
watcher.start()
# The module's parameters as AnsibleModule fills them: every default, then what a task would set.
options = {name: spec.get("default") for name, spec in NODE_RESERVATION_FACTS_OPTIONS.items()}
options.update(sample_seconds=1, history_path="/run/nodealloc-history.jsonl", _check_mode=False)
facts = _gather.gather(options)
measuring.set()
watcher.join()
after = {"meminfo": meminfo(), "kubepods": kubepods(None), "rss_peak": own_memory("VmHWM"),
         # What the per-CPU page lists may hold (each pageset's "high:", in pages): free pages there are not in
         # MemFree, so a drain between two of the watcher's reads lifts MemAvailable by up to this, unseen.
         "pcp_bytes": sum(int(line.split()[1]) for line in open("/proc/zoneinfo")
                          if line.split()[:1] == ["high:"]) * os.sysconf("SC_PAGE_SIZE")}
note(after["meminfo"]["MemAvailable"])
print(json.dumps({"before": before, "after": after, "available_seen": [seen["low"], seen["high"], seen["reads"]],
                  "facts": facts}, default=str))
'''


def within(value, first, second, what, below=0, above=0):
    """``value`` between two reads taken around it, or up to ``below`` under the lower one or ``above`` over the
    higher one."""
    low, high = min(first, second) - below, max(first, second) + above
    assert low <= value <= high, '%s = %d, outside the bracketing reads %d and %d (less %d, more %d)' % (
        what, value, first, second, below, above)


@pytest.mark.parametrize('guest', ['facts-v2', 'facts-v1'])
def test_facts_on_guest(vm_guests, guest):
    check_facts(vm_guests[guest])


def check_facts(node):
    """The whole check on one guest, whichever cgroup version and Debian release it boots
    (tests/vm/test_releases_vm.py runs it on the other releases)."""
    state_dir = node['state_dir']

    def sh(command):
        return vmnodes.ssh(node, state_dir, command).stdout

    capacity = int(sh("awk '/^MemTotal:/ {print $2}' /proc/meminfo")) * 1024
    oom_score_adj = min(999, max(2, 1000 - (1000 * 128 * MIB) // capacity))
    vmnodes.push_module_utils(node, state_dir)
    uid = str(uuid.uuid4()).replace('-', '_')
    sh('rm -f /run/pod-ready')
    unit = vmnodes.run_pod(node, state_dir, uid, 'burstable', "/usr/bin/python3 -c '%s'" % ALLOCATE, oom_score_adj)
    sh('for i in $(seq 600); do [ -e /run/pod-ready ] && exit 0; sleep 0.2; done; exit 1')
    # The kubelet puts a pod's limits on its pod slice: a 512 MiB memory limit and a 250m CPU request, which
    # it writes as cpu.shares 256 (v1) or cpu.weight 10 (v2, CpuSharesToCpuWeight(256)).
    cpu_property = 'CPUShares=256' if node['cgroup'] == 'v1' else 'CPUWeight=10'
    sh('systemctl set-property --runtime kubepods-burstable-pod%s.slice MemoryMax=%d %s' % (uid, 512 * MIB, cpu_property))
    try:
        pod_pid = int(sh('systemctl show -p MainPID --value %s' % unit))
        kubelet_pid = int(sh('systemctl show -p MainPID --value kubelet.service'))
        pod_cgroup = sh('cat /proc/%d/cgroup' % pod_pid)
        probe = json.loads(sh("python3 - <<'EOF'\n%s\nEOF" % PROBE))
    finally:
        sh('systemctl stop %s' % unit)

    expected_version = node['cgroup']
    # The pod is where the kubelet's systemd driver puts a Burstable pod, with its QoS class's score.
    slice_path = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/%s' % (uid, unit)
    assert slice_path in pod_cgroup, pod_cgroup
    facts = probe['facts']
    before, after = probe['before'], probe['after']
    assert facts['cgroup']['version'] == expected_version
    assert facts['cgroup']['driver'] == 'systemd'
    assert facts['cgroup']['kubepods'] == '/kubepods.slice'
    assert facts['kubelet']['pid'] == kubelet_pid

    memory = facts['memory']
    assert memory['mem_total_bytes'] == before['meminfo']['MemTotal'] == after['meminfo']['MemTotal']
    # While it measures, the probe process itself holds more memory than at either read (seen: MemAvailable 65 KB
    # under both reads): the lower bound gives way by its own peak growth (VmHWM after - VmRSS before).
    # Above: the watcher reads every millisecond when it gets the interpreter, which the measuring thread holds for
    # up to 5 ms at a time (more on a busy TCG guest); a per-CPU list drained and refilled in such a gap lifts
    # MemAvailable unseen (ci70: 20 KB over the highest read on Debian 11), by at most what the lists hold.
    lowest, highest, _reads = probe['available_seen']
    within(memory['mem_available_bytes'], lowest, highest, 'MemAvailable (the range of reads taken throughout)',
           below=max(0, after['rss_peak'] - before['rss']), above=after['pcp_bytes'])
    kubepods = memory['kubepods']
    within(kubepods['usage_bytes'], before['kubepods']['usage'], after['kubepods']['usage'], 'kubepods usage')
    within(kubepods['inactive_file_bytes'], before['kubepods']['inactive'], after['kubepods']['inactive'],
           'kubepods inactive_file')
    # The kubelet's working set (cadvisor): usage minus inactive file pages, and the pod's 256 MiB is in it.
    assert memory['kubepods_working_set_bytes'] == kubepods['usage_bytes'] - kubepods['inactive_file_bytes']
    assert 256 * MIB <= memory['kubepods_working_set_bytes'] <= 256 * MIB + POD_OVERHEAD
    # The PoC's non-pod figure, and the module's: the PoC's plus the pods' page cache MemAvailable already counts.
    accounting = memory['non_pod_accounting']
    assert memory['non_pod_poc_bytes'] == (memory['mem_total_bytes'] - memory['mem_available_bytes']
                                           - memory['kubepods_working_set_bytes'])
    assert memory['non_pod_bytes'] == (memory['non_pod_poc_bytes'] + accounting['pods_counted_available_bytes']
                                       - accounting['measurement_tool_bytes'])
    assert 0 <= accounting['pods_counted_available_bytes'] <= kubepods['active_file_bytes'] + kubepods['slab_reclaimable_bytes']
    # The kubelet and the runtime are measured in the units the guest's systemd made for them.
    assert sorted(c['cgroup'] for c in memory['kube_components']['cgroups']) == [
        '/system.slice/containerd.service', '/system.slice/kubelet.service']
    # The runtime stand-in holds 20 MiB; the kubelet stand-in is a Python process (more than 8 MiB).
    assert memory['kube_components_working_set_bytes'] >= 28 * MIB
    # The overcommit audit reads the pod's limit and request back from the kernel's files.
    overcommit = facts['overcommit']
    pods = [p for p in overcommit['pod_details'] if uid in p['cgroup']]
    assert len(pods) == 1 and pods[0]['qos'] == 'burstable', overcommit['pod_details']
    assert pods[0]['memory_limit_bytes'] == 512 * MIB
    if expected_version == 'v1':
        assert pods[0]['cpu_request_millicores'] == 250  # sharesToMilliCPU(256)
    else:
        # A weight holds about 26 shares: 250m comes back as what weight 10 stands for.
        assert abs(pods[0]['cpu_request_millicores'] - 250) <= 26, pods[0]
    assert overcommit['kubepods_memory_limit_bytes'] and overcommit['memory_limits_sum_bytes'] >= 512 * MIB
