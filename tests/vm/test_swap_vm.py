"""Swapped-out daemon memory is non-pod memory: counted, reported, covered by the recommendation (issue 30, item 1).

On the cgroup v2 facts guest (Debian's kernel, systemd as PID 1), given a swap file for the test's length
(vmnodes.swap_on): a daemon in system.slice holds 192 MiB and sleeps; a Burstable pod in
kubepods.slice/kubepods-burstable.slice, as the kubelet's LimitedSwap leaves one (memory.max set, memory.swap.max
allowing swap), fills memory and keeps touching it, until the kernel has swapped out a good part of the daemon's
cold pages. The pod is then stopped, and the module's own code (_gather.gather) measures the guest. What the test
holds against the module comes from the kernel: the daemon unit's memory.swap.current less its swapcached.
Then the proposed drop-in is written as an operator would, and system.slice's memory.swap.max must read 0.
"""

from __future__ import annotations

import json
import time
import uuid

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _metrics

from nodes import nodeio, vmnodes

MIB = 1024 * 1024
SWAP_MIB = 768
DAEMON_MIB = 192
# The pod is capped below kubepods' limit (about 1010 MiB on this 1280 MiB guest) and fills beyond its cap, so it
# swaps its own pages too (its swap allowance is LimitedSwap-like, not unlimited); what it holds in RAM with the
# daemons leaves the guest short, and global reclaim takes the daemon's cold pages.
POD_MAX_MIB = 880
POD_SWAP_MAX_MIB = 320
POD_FILL_MIB = 1000
# Enough of the daemon in swap that the check is not about noise (a few pages always move).
DAEMON_SWAPPED_MIN = 32 * MIB
DAEMON = 'swap-test-daemon.service'
DAEMON_CODE = ('import time; b = b"\\x01" * (%d << 20); open("/run/swap-daemon-ready", "w").close(); time.sleep(100000)'
               % DAEMON_MIB)
# Touches every page it holds, again and again: its pages stay active, the daemon's age.
POD_CODE = ('import mmap\nblocks = []\nfor i in range(%d // 8):\n    b = mmap.mmap(-1, 8 << 20)\n'
            '    b.write(b"\\x02" * (8 << 20))\n    blocks.append(b)\nwhile True:\n    for b in blocks:\n'
            '        for offset in range(0, 8 << 20, 4096):\n            b[offset] = 3\n' % POD_FILL_MIB)
DAEMON_SWAP = ('d=/sys/fs/cgroup/system.slice/%s; echo $(cat $d/memory.swap.current) '
               '$(awk \'$1 == "swapcached" {print $2}\' $d/memory.stat)' % DAEMON)
PROBE = r'''
import json, subprocess, sys
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
# The module's argument spec as _module_glue builds it, without its Ansible import: the guest has no Ansible.
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import FACTS, argument_spec
NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)

def daemon():
    swap, cached = subprocess.run(["sh", "-c", %r], capture_output=True, text=True, check=True).stdout.split()
    return int(swap) - int(cached)

options = {name: spec.get("default") for name, spec in NODE_RESERVATION_FACTS_OPTIONS.items()}
# The percent rule with its 100-MiB floor: the default jumps rule gives a node with no history a 2-GiB headroom, which
# max_reserved_fraction caps on this small guest, and the covering below is what is under test, not the cap.
options.update(sample_seconds=0.5, history=False, _check_mode=False, memory_headroom_rule='percent',
               memory_headroom_min_bytes=100 * 1024 * 1024)
before = daemon()
facts = _gather.gather(options)
after = daemon()
print(json.dumps({"daemon_swapped_out": [before, after], "facts": facts}, default=str))
''' % DAEMON_SWAP


def measure(node):
    return json.loads(nodeio.ssh(node, "python3 - <<'EOF'\n%s\nEOF" % PROBE).stdout)


def daemon_swapped_out(node):
    """The daemon's bytes in swap, or None while the guest does not answer.

    While the pod fills its memory the guest pages hard, and on a loaded host its sshd then missed the 10-s connect
    timeout once (2026-11-27, make test's six lines): that is no answer yet, not a failure; the caller's deadline
    bounds the wait and its assertion says how far the daemon got."""
    answer = nodeio.ssh(node, DAEMON_SWAP, check=False)
    fields = answer.stdout.split()
    if answer.returncode != 0 or len(fields) != 2:
        return None
    swap, cached = fields
    return int(swap) - int(cached)


def check_counted_and_covered(probe):
    """The daemon's swapped-out memory is in the non-pod figure and the recommendation covers it."""
    memory, accounting = probe['facts']['memory'], probe['facts']['memory']['non_pod_accounting']
    daemon_out = min(probe['daemon_swapped_out'])
    assert daemon_out >= DAEMON_SWAPPED_MIN
    # On top of what is resident (the PoC figure with the page-cache correction): before swap was measured, the
    # non-pod figure was only that.
    resident = (memory['non_pod_poc_bytes'] + accounting['pods_counted_available_bytes']
                - accounting['measurement_tool_bytes'])
    assert memory['non_pod_bytes'] >= resident + daemon_out, (memory['non_pod_bytes'], resident, daemon_out)
    assert memory['non_pod_swap_bytes'] >= daemon_out
    # The recommendation: the resident figure, the swapped-out daemon, and the headroom above both.
    recommendation = probe['facts']['recommendation']
    assert recommendation['reserved_memory_bytes'] >= resident + daemon_out + recommendation['memory_headroom_bytes']


def test_swapped_out_daemon_memory_is_counted_reported_and_covered(vm_guests):
    node = vm_guests['facts-v2']
    state_dir = node['state_dir']
    vmnodes.push_module_utils(node, state_dir)
    uid = str(uuid.uuid4()).replace('-', '_')
    pod_slice = 'kubepods-burstable-pod%s.slice' % uid
    vmnodes.swap_on(node, state_dir, SWAP_MIB)
    try:
        nodeio.ssh(node, "rm -f /run/swap-daemon-ready; systemd-run --quiet --unit=%s -- /usr/bin/python3 -c '%s'; "
                   "for i in $(seq 600); do [ -e /run/swap-daemon-ready ] && exit 0; sleep 0.2; done; exit 1"
                   % (DAEMON, DAEMON_CODE))
        nodeio.write_text(node, '/run/swap-test-pod.py', POD_CODE)
        unit = vmnodes.run_pod(node, state_dir, uid, 'burstable', '/usr/bin/python3 /run/swap-test-pod.py', 999)
        # The pod's limits on its slice, as the kubelet's systemd driver sets them (MemoryMax), with a swap limit as
        # LimitedSwap gives a Burstable pod (in proportion to its request, KEP-2400).
        nodeio.ssh(node, 'systemctl set-property --runtime %s MemoryMax=%dM MemorySwapMax=%dM'
                   % (pod_slice, POD_MAX_MIB, POD_SWAP_MAX_MIB))
        pod_cgroup = '/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/%s' % pod_slice
        assert nodeio.ssh(node, 'cat %s/memory.max %s/memory.swap.max' % (pod_cgroup, pod_cgroup)).stdout.split() == [
            str(POD_MAX_MIB * MIB), str(POD_SWAP_MAX_MIB * MIB)]
        deadline = time.monotonic() + 600  # a budget for a busy machine under emulation, not a timing assertion
        pushed_out = daemon_swapped_out(node)
        while (pushed_out is None or pushed_out < DAEMON_SWAPPED_MIN) and time.monotonic() < deadline:
            time.sleep(3)
            pushed_out = daemon_swapped_out(node)
        assert pushed_out is not None, 'the guest did not answer for the whole budget'
        assert pushed_out >= DAEMON_SWAPPED_MIN, 'the pod pushed only %d MiB of the daemon out' % (pushed_out // MIB)
        # Pressure off: the pod and its own swap go, the sleeping daemon's pages stay where they are.
        nodeio.ssh(node, 'systemctl stop %s' % unit)
        probe = measure(node)
        slice_swap_max = nodeio.ssh(node, 'cat /sys/fs/cgroup/system.slice/memory.swap.max').stdout.strip()
        check_counted_and_covered(probe)

        # The proposed drop-in, written as an operator would: system.slice may swap no more.
        drop_in = probe['facts']['swap_control']['proposed_drop_in']
        nodeio.write_text(node, drop_in['path'], drop_in['content'])
        nodeio.ssh(node, 'systemctl daemon-reload')
        swap_max_with_drop_in = nodeio.ssh(node, 'cat /sys/fs/cgroup/system.slice/memory.swap.max').stdout.strip()
        control_with_drop_in = measure(node)['facts']['swap_control']
    finally:
        nodeio.ssh(node, 'systemctl stop %s pod-%s.service; rm -f /run/swap-test-pod.py /run/swap-daemon-ready '
                   '/etc/systemd/system/system.slice.d/*nodealloc*; systemctl daemon-reload' % (DAEMON, uid), check=False)
        vmnodes.swap_off(node, state_dir)
    # The guest is as it was: no swap, system.slice's swap limit back to the default.
    assert nodeio.ssh(node, 'cat /proc/swaps | wc -l; cat /sys/fs/cgroup/system.slice/memory.swap.max').stdout.split() == [
        '1', 'max']

    facts = probe['facts']
    memory = facts['memory']
    # Whether system.slice may swap, from the kernel's file; with swap on it may, and the drop-in is proposed.
    control = facts['swap_control']
    assert slice_swap_max == 'max' and control['system_slice_swap_max'] == 'max'
    assert control['swap_on'] and control['system_slice_may_swap'] is True
    assert swap_max_with_drop_in == '0', 'the proposed drop-in did not set memory.swap.max: %r' % swap_max_with_drop_in
    assert control_with_drop_in['system_slice_may_swap'] is False and control_with_drop_in['proposed_drop_in'] is None
    # The report says it where a person reads it, and the metrics carry it.
    node_report = _fleet_report.build_report({'facts-v2': facts})['nodes'][0]
    assert node_report['measured']['non_pod_swap_bytes'] == memory['non_pod_swap_bytes']
    text = _fleet_report.render_text(_fleet_report.build_report({'facts-v2': facts}))
    assert 'of which swapped out' in text and 'system.slice may swap' in text and drop_in['path'] in text
    metrics = _metrics.render(facts, time.time())
    assert 'nodealloc_memory_non_pod_swap_bytes %d' % memory['non_pod_swap_bytes'] in metrics
    assert 'nodealloc_swap_system_slice_may_swap 1' in metrics
