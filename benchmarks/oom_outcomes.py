"""Who does the kernel kill when the pods fill a node? One VM guest per reservation policy.

Each guest (tests/nodes/vmnodes.py: Debian's kernel under QEMU, systemd, the stand-in
kubelet as kubelet.service, a runtime stand-in as containerd.service) gets one policy's
kubeReserved/systemReserved written into /var/lib/kubelet/config.yaml and the stand-in
restarted (not the role: see docs/benchmarks.md), so its kubepods.slice memory.max is
capacity - kubeReserved - systemReserved as the kubelet sets it. Policies: ``none`` (kubelet
defaults: nothing reserved), the vendors' formulas from the collection
(plugins/module_utils/_formulas.py ``all_formulas``, max_pods 8 as on a small node), and
``measured``: the collection's own recommendation (``_facts.gather``, the facts module's
code, run on the guest while the node-life growth below is at its peak, without pods).

Then a scripted stretch of node life, in fast-forward: the kubelet grows (40 MiB more in
kubelet.service), the runtime grows with the pods (20 MiB + 6 MiB per pod), a journald-like
burst (60 MiB, OOMScoreAdjust -250 as systemd-journald.service has), page cache from an image
pull (200 MiB file), and then Burstable pods (request 64 MiB, limit 256 MiB, the oom_score_adj
pkg/kubelet/qos/policy.go gives that class) each allocating 240 MiB until kubepods is full.
The outcome is read from the guest's kernel: /proc/vmstat oom_kill, kubepods memory.events
oom_kill, and the kernel log's ``oom-kill:constraint=...`` lines (CONSTRAINT_NONE is a
global OOM, CONSTRAINT_MEMCG a memory-cgroup OOM; task_memcg says whether a pod died).

Run as root: ``python benchmarks/oom_outcomes.py --json [--policies none,measured]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
sys.path.insert(0, os.path.join(ROOT, '.build'))

from nodes import testnodes, vmnodes  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _formulas, _quantity  # noqa: E402

MIB = 1024 * 1024
ALL_POLICIES = ('none', 'gke', 'eks', 'aks', 'openshift', 'measured')
MAX_PODS = 8
GUEST_MIB = 1280
POD_REQUEST_MIB, POD_LIMIT_MIB, POD_ALLOCATES_MIB = 64, 256, 240
HOLD = r'''#!/usr/bin/python3
# hold MIB [STEP_SECONDS]: allocate MIB of anonymous memory in 16 MiB steps, touch it, keep it.
import mmap, sys, time
want, step = int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0
held = []
while len(held) * 16 < want:
    block = mmap.mmap(-1, 16 << 20)
    block.write(b"\x01" * (16 << 20))
    held.append(block)
    time.sleep(step)
open("/run/hold-%d" % __import__("os").getpid(), "w").close()
time.sleep(100000)
'''
# The growth every policy's node goes through; `measured` is measured with it at its peak.
GROWTH = r'''
set -e
kubelet_cgroup=$(awk -F: '$1 == "0" || $2 ~ /memory/ {print $3}' /proc/$(systemctl show -p MainPID --value kubelet)/cgroup | tail -1)
/usr/local/bin/hold 40 </dev/null >/dev/null 2>&1 & grow=$!
echo $grow > /run/grow.pid
echo -999 > /proc/$grow/oom_score_adj
for root in /sys/fs/cgroup /sys/fs/cgroup/memory; do
    if [ -e $root$kubelet_cgroup/cgroup.procs ]; then echo $grow > $root$kubelet_cgroup/cgroup.procs; fi
done
echo $((20 + 6 * PODS)) > /etc/containerd-standin/resident_mib
systemd-run --quiet --unit=journald-burst -p OOMScoreAdjust=-250 /usr/local/bin/hold 60
dd if=/dev/urandom of=/var/tmp/image-layer bs=1M count=200 status=none
sync
for i in $(seq 100); do [ $(ls /run/hold-* 2>/dev/null | wc -l) -ge 2 ] && break; sleep 0.5; done
sleep 3
'''
UNGROW = r'''
systemctl stop journald-burst.service 2>/dev/null
kill $(cat /run/grow.pid) 2>/dev/null; rm -f /run/grow.pid /run/hold-* /var/tmp/image-layer
echo 20 > /etc/containerd-standin/resident_mib
sync; echo 1 > /proc/sys/vm/drop_caches; sleep 2
'''
PODS = r'''
for i in $(seq PODS); do
    systemd-run --quiet --unit=pod-$i --slice=kubepods-burstable-pod$i.slice -p OOMScoreAdjust=ADJ \
        -p MemoryMax=LIMITM /usr/local/bin/hold ALLOCATES 0.2
    sleep 1
done
for i in $(seq 240); do
    active=$(systemctl list-units --no-legend --state=active 'pod-*.service' | wc -l)
    done_=$(ls /run/hold-* 2>/dev/null | wc -l)
    # Every pod either holds its memory or was killed, and the growth processes are settled.
    [ $((done_ - 2)) -ge $active ] && break
    sleep 1
done
sleep 5
'''
FACTS = r'''
import json, sys
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts
facts = _facts.gather({"sample_seconds": 2, "history_path": "/run/nodealloc-history.jsonl", "max_pods": %d})
print(json.dumps(facts["recommendation"], default=str))
'''


def sh(node, command, timeout=900):
    return vmnodes.ssh(node, node['state_dir'], command, check=True, timeout=timeout).stdout


def quantity_bytes(text):
    return _quantity.quantity_value(_quantity.parse_quantity(str(text)))


def apply_reservation(node, kube_memory, system_memory):
    config = testnodes.KUBELET_CONFIG.split('kubeReserved:', maxsplit=1)[0]
    config += 'kubeReserved:\n  cpu: 100m\n  memory: "%d"\nsystemReserved:\n  memory: "%d"\nrotateCertificates: true\n' % (
        kube_memory, system_memory)
    sh(node, "cat > /var/lib/kubelet/config.yaml <<'EOF'\n%sEOF\n: > /var/log/kubelet-standin.log; "
             "systemctl restart kubelet.service" % config)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        events = [json.loads(line) for line in sh(node, 'cat /var/log/kubelet-standin.log').splitlines() if line.strip()]
        if any(e.get('event') == 'cgroup' for e in events):
            return
        if any(e.get('event') == 'refused' for e in events):
            raise RuntimeError('%s: the kubelet refused the config: %s' % (node['name'], events))
        time.sleep(2)
    raise RuntimeError('%s: the kubelet did not set the kubepods limit' % node['name'])


def pods_for(node, capacity):
    limit = int(sh(node, 'cat /sys/fs/cgroup/kubepods.slice/memory.max 2>/dev/null '
                         '|| cat /sys/fs/cgroup/memory/kubepods.slice/memory.limit_in_bytes').strip())
    limit = min(limit, capacity)
    return limit // (POD_ALLOCATES_MIB * MIB) + 2


def run_policy(node, policy, results):
    try:
        sh(node, "cat > /usr/local/bin/hold <<'EOF'\n%sEOF\nchmod 755 /usr/local/bin/hold" % HOLD)
        capacity = int(sh(node, "awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo"))
        if policy == 'measured':
            sh(node, GROWTH.replace('PODS', '6'))
            recommendation = json.loads(sh(node, "python3 - <<'EOF'\n%s\nEOF" % (FACTS % MAX_PODS)))
            sh(node, UNGROW)
            kube = quantity_bytes(recommendation['kube_reserved'].get('memory', 0))
            system = quantity_bytes(recommendation['system_reserved'].get('memory', 0))
        elif policy == 'none':
            kube = system = 0
        else:
            formula = _formulas.all_formulas(capacity, 1, MAX_PODS)[policy]
            kube, system = formula['kube_reserved_memory_bytes'], formula['system_reserved_memory_bytes']
        apply_reservation(node, kube, system)
        # pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableAbsolute less the hard eviction
        # threshold (kubelet_node_status.go / nodestatus.MachineInfo): what the Node offers pods.
        allocatable = capacity - kube - system - 100 * MIB
        pods = pods_for(node, capacity)
        kubelet_pid = sh(node, 'systemctl show -p MainPID --value kubelet').strip()
        before = int(sh(node, "awk '/^oom_kill / {print $2}' /proc/vmstat"))
        sh(node, 'dmesg -C')
        # pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust, Burstable: 1000 - 1000 * request / capacity in [2, 999].
        adj = min(999, max(2, 1000 - (1000 * POD_REQUEST_MIB * MIB) // capacity))
        sh(node, GROWTH.replace('PODS', str(pods)))
        sh(node, PODS.replace('PODS', str(pods)).replace('ADJ', str(adj)).replace('LIMIT', str(POD_LIMIT_MIB))
           .replace('ALLOCATES', str(POD_ALLOCATES_MIB)))
        after = int(sh(node, "awk '/^oom_kill / {print $2}' /proc/vmstat"))
        events = sh(node, 'cat /sys/fs/cgroup/kubepods.slice/memory.events 2>/dev/null || true')
        cgroup_kills = int(dict(line.split() for line in events.splitlines()).get('oom_kill', 0)) if events else None
        log = sh(node, 'dmesg')
        kills = re.findall(r'oom-kill:constraint=(\w+),.*?task_memcg=([^,]*),task=([^,]*),pid=(\d+)', log)
        global_kills = [k for k in kills if k[0] == 'CONSTRAINT_NONE']
        memcg_kills = [k for k in kills if k[0] == 'CONSTRAINT_MEMCG']
        non_pod = [k for k in kills if not k[1].startswith('/kubepods')]
        alive = sh(node, 'systemctl is-active kubelet; systemctl show -p MainPID --value kubelet').split()
        results[policy] = {
            'global_oom_kills': len(global_kills),
            'non_pod_killed': len(non_pod),
            'kubelet_survived': alive == ['active', kubelet_pid],
            'allocatable_bytes': allocatable,
            # Kills by a memory-cgroup OOM (kubepods or a pod full). kubepods' memory.events oom_kill counts
            # every kill of a process under it, global ones too (cgroup-v2.rst), so it is kept as a cross-check.
            'cgroup_oom_kills': len(memcg_kills),
            'kubepods_events_oom_kill': cgroup_kills,
            'reserved_bytes': kube + system,
            'pods_started': pods,
            'vmstat_oom_kill': after - before,
            'killed': ['%s %s (%s)' % (k[0].split('_')[1].lower(), k[2], k[1]) for k in kills],
        }
    except Exception as exc:  # noqa: BLE001 - one guest's failure is reported, the others go on
        results[policy] = {'error': str(exc)}


def markdown(result):
    lines = ['Kernel: `%s`' % result['kernel'], '',
             '| policy | reserved | allocatable | global OOM kills | cgroup OOM kills | non-pod killed | kubelet survived |',
             '|---|---:|---:|---:|---:|---:|---|']
    for name, row in result['policies'].items():
        if 'error' in row:
            lines.append('| %s | error: %s | | | | | |' % (name, row['error']))
            continue
        lines.append('| %s | %d MiB | %d MiB | %d | %d | %d | %s |' % (
            name, row['reserved_bytes'] // MIB, row['allocatable_bytes'] // MIB, row['global_oom_kills'],
            row['cgroup_oom_kills'], row['non_pod_killed'], 'yes' if row['kubelet_survived'] else 'NO'))
    return '\n'.join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--policies', default=','.join(ALL_POLICIES))
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--state-dir', default='/tmp/nodealloc-oom-outcomes')
    parser.add_argument('--full', action='store_true', help='print every field, not only the five of the JSON shape')
    args = parser.parse_args(argv)
    reason = vmnodes.missing()
    if reason:
        print('oom_outcomes: skipped: %s' % reason, file=sys.stderr)
        return 0
    policies = args.policies.split(',')
    _inventory, nodes = vmnodes.up([{'name': 'oom-' + p, 'memory_mib': GUEST_MIB} for p in policies], args.state_dir)
    try:
        results, threads = {}, []
        for policy, node in zip(policies, nodes):
            node['state_dir'] = args.state_dir
            threads.append(threading.Thread(target=run_policy, args=(node, policy, results)))
            threads[-1].start()
        for thread in threads:
            thread.join()
        kernel = sh(nodes[0], 'uname -r').strip()
    finally:
        vmnodes.down(args.state_dir)
    keys = ('global_oom_kills', 'non_pod_killed', 'kubelet_survived', 'allocatable_bytes', 'cgroup_oom_kills')
    result = {'kernel': kernel, 'policies': {
        p: (results[p] if args.full or 'error' in results[p] else {k: results[p][k] for k in keys}) for p in policies}}
    if args.markdown:
        print(markdown({'kernel': kernel, 'policies': {p: results[p] for p in policies}}))
    if args.json or not args.markdown:
        print(json.dumps(result))
    return 1 if any('error' in r for r in results.values()) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
