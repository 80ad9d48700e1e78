"""Who does the kernel kill when the pods fill a node? One VM guest per reservation policy.

Each guest (tests/nodes/vmnodes.py: Debian's kernel under QEMU, systemd, the stand-in
kubelet as kubelet.service, a runtime stand-in as containerd.service) gets one policy's
kubeReserved/systemReserved written into /var/lib/kubelet/config.yaml and the stand-in
restarted (not the role: see docs/benchmarks.md), so its kubepods.slice memory.max is
capacity - kubeReserved - systemReserved as the kubelet sets it. Policies: ``none`` (kubelet
defaults: nothing reserved), the vendors' formulas from the collection
(plugins/module_utils/_kubelet/_vendor_formulas.py ``all_formulas``, max pods 29 as on an 8 GiB m5.large), and
``measured``: the collection's own recommendation (``_gather.gather``, the facts module's
code, run on the guest while the node-life growth below is at its peak, without pods).

Then a scripted stretch of node life, in fast-forward: the kubelet grows (40 MiB more in
kubelet.service), the runtime grows with the pods (20 MiB + 6 MiB per pod), a journald-like
burst (60 MiB, OOMScoreAdjust -250 as systemd-journald.service has), page cache from an image
pull (200 MiB file), and then Burstable pods (request 128 MiB, limit 512 MiB, the oom_score_adj
pkg/kubelet/qos/policy.go gives that class) each allocating 480 MiB until kubepods is full.
The outcome is read from the guest's kernel: /proc/vmstat oom_kill, kubepods memory.events
oom_kill, and the kernel log's ``oom-kill:constraint=...`` lines (CONSTRAINT_NONE is a
global OOM, CONSTRAINT_MEMCG a memory-cgroup OOM; task_memcg says whether a pod died).

Run as root: ``python benchmarks/oom_outcomes.py --json [--policies none,measured] [--guest-mib 8192]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
sys.path.insert(0, os.path.join(ROOT, '.build'))

from nodes import testnodes, vmnodes  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity, _vendor_formulas  # noqa: E402

MIB = 1024 * 1024
ALL_POLICIES = ('none', 'gke', 'eks', 'aks', 'openshift', 'measured')
# The size of a common general-purpose node: 8 GiB, 2 vCPUs (EKS m5.large, GKE e2-standard-2, AKS
# Standard_D2s_v3). Max pods as EKS gives an m5.large (eni-max-pods.txt: 29; Azure CNI's default is 30):
# the eks and aks formulas scale with it. A smaller guest flatters the vendors' formulas (GKE keeps a
# quarter of the first 4 GiB) and a larger one the collection; see docs/benchmarks.md.
GUEST_MIB = 8192
MAX_PODS = 29
# Burstable pods: limit above request, each allocating almost up to its limit (the seed's cascading-OOM case).
POD_REQUEST_MIB, POD_LIMIT_MIB, POD_ALLOCATES_MIB = 128, 512, 480
# The fast-forward: a reaction time (how often the role runs; 24 h by default) lasts this many seconds,
# and the sampler (every minute on a node) runs every WARMUP_SAMPLE_SECONDS.
REACTION_SECONDS = 45
WARMUP_SAMPLE_SECONDS = 4
HOLD = r'''#!/usr/bin/python3
# hold MIB [STEP_SECONDS [MARKER]]: allocate MIB of anonymous memory in 16 MiB steps, touch it, keep it.
import ctypes, mmap, sys, time
# The interpreter's own pages stay resident: near the edge the kernel otherwise evicts them over and over, the
# holds crawl, and a loaded host's guest spent its whole 900-s command timeout thrashing before the global OOM.
# Locking changes what the kernel may reclaim, not whom its OOM killer picks (oom_badness counts rss alike).
if ctypes.CDLL(None, use_errno=True).mlockall(1) != 0:  # MCL_CURRENT on x86_64 (the guests) and aarch64
    sys.exit("hold: mlockall: errno %d" % ctypes.get_errno())
want, step = int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0
marker = sys.argv[3] if len(sys.argv) > 3 else "hold"
held = []
while len(held) * 16 < want:
    block = mmap.mmap(-1, 16 << 20)
    block.write(b"\x01" * (16 << 20))
    held.append(block)
    time.sleep(step)
open("/run/%s-%d" % (marker, __import__("os").getpid()), "w").close()
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
systemctl stop journald-burst.service 2>/dev/null; systemctl reset-failed journald-burst.service 2>/dev/null
kill $(cat /run/grow.pid) 2>/dev/null; rm -f /run/grow.pid /run/hold-* /run/podheld-* /var/tmp/image-layer
echo 20 > /etc/containerd-standin/resident_mib
sync; echo 1 > /proc/sys/vm/drop_caches; sleep 2
'''
PODS = r'''
for i in $(seq PODS); do
    systemd-run --quiet --unit=pod-$i --slice=kubepods-burstable-pod$i.slice -p OOMScoreAdjust=ADJ \
        -p MemoryMax=LIMITM /usr/local/bin/hold ALLOCATES 0.2 podheld
    sleep 1
done
for i in $(seq 240); do
    active=$(systemctl list-units --no-legend --state=active 'pod-*.service' | wc -l)
    held=$(ls /run/podheld-* 2>/dev/null | wc -l)
    # Every pod either holds its memory or was killed.
    [ $held -ge $active ] && break
    sleep 1
done
sleep 5
'''
# The sampler as the role installs it (roles/reservations/files/nodealloc-sampler.py beside the
# collection's module_utils), run every WARMUP_SAMPLE_SECONDS instead of every minute, while the node's
# life runs through twice: idle for a reaction time, grown to its peak, back, and grown again.
WARMUP = r'''
set -e
mkdir -p /var/lib/nodealloc
rm -f /var/lib/nodealloc/history.jsonl /var/lib/nodealloc/sampler-state.json
( while :; do python3 /opt/nodealloc/nodealloc-sampler.py --history /var/lib/nodealloc/history.jsonl \
      --state /var/lib/nodealloc/sampler-state.json --decision /var/lib/nodealloc/decision.json --textfile '' \
      --window 1h --sample-seconds 1 >/dev/null 2>&1 || true; sleep SAMPLE; done ) </dev/null >/dev/null 2>&1 &
echo $! > /run/sampler.pid
'''
# The recommendation the facts module (policy measured, every default) makes from that history, with the
# time options scaled to the fast-forward: the reaction time (how often the role runs) and the
# stabilization window are REACTION seconds instead of 24 h, the history window 3 x REACTION instead of 3 d
# (the shipped default: three reaction times).
RECOMMEND = r'''
import json, sys
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
# The module's argument spec as _module_glue builds it, without its Ansible import: the guest has no Ansible.
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import FACTS, argument_spec
NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)
options = {name: spec.get("default") for name, spec in NODE_RESERVATION_FACTS_OPTIONS.items()}
options.update(history_path="/var/lib/nodealloc/history.jsonl", history_window="%ds", reaction_time="%ds",
               stabilization_window="%ds", max_pods=%d, sample_seconds=2, _check_mode=False)
facts = _gather.gather(options)
print(json.dumps(facts["recommendation"], default=str))
'''


def sh(node, command, timeout=900):
    # A connection per command: the guest is driven into a global OOM, whose killer may take a shared SSH session
    # (tests/nodes/vmnodes.py's multiplexing) and every command on it.
    return vmnodes.ssh(node, node['state_dir'], command, check=True, timeout=timeout, multiplex=False).stdout


def sh_detached(node, script, name, timeout=900):
    """Run ``script`` on the guest in a transient unit of its own (OOMScoreAdjust -1000), then wait over fresh
    connections for it to end. The pods' global OOM may take whatever SSH session is open on the guest: in ci64 the
    connection running PODS on the ``none`` guest ended mid-command (exit 255), and with it the run. A unit is not
    tied to a session, so the pods run to their end whatever happens to the connections; a poll that is lost or
    times out is made again."""
    marker = '/run/%s.done' % name
    sh(node, "rm -f %s\ncat > /run/%s.sh <<'EOF'\n%s\ntouch %s\nEOF\n"
             "systemd-run --quiet --unit=nodealloc-%s -p OOMScoreAdjust=-1000 /bin/sh /run/%s.sh"
       % (marker, name, script, marker, name, name))
    deadline = time.monotonic() + timeout
    while True:
        try:
            if vmnodes.ssh(node, node['state_dir'], 'test -e %s' % marker, check=False, timeout=120,
                           multiplex=False).returncode == 0:
                return
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError('%s: %s did not end within %d s' % (node['name'], name, timeout))
        time.sleep(3)


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


def pod_count(capacity):
    """Pods that together allocate more than the node's whole memory, so kubepods fills whatever its limit."""
    return capacity // (POD_ALLOCATES_MIB * MIB) + 1


def warm_up(node, pods, reaction_seconds):
    # The sampler records while the node goes through its life twice, each phase about a reaction time long.
    vmnodes.push_module_utils(node, node['state_dir'])
    with open(os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py'), encoding='utf-8') as handle:
        sampler = handle.read()
    sh(node, "cat > /opt/nodealloc/nodealloc-sampler.py <<'EOF'\n%sEOF" % sampler)
    sh(node, WARMUP.replace('SAMPLE', str(WARMUP_SAMPLE_SECONDS)))
    for cycle in range(2):
        time.sleep(reaction_seconds if cycle == 0 else reaction_seconds // 2)
        sh(node, GROWTH.replace('PODS', str(pods)))
        time.sleep(reaction_seconds)
        sh(node, UNGROW)
    time.sleep(reaction_seconds // 2)
    sh(node, 'kill $(cat /run/sampler.pid); rm -f /run/sampler.pid; wc -l < /var/lib/nodealloc/history.jsonl')
    recommendation = json.loads(sh(node, "python3 - <<'EOF'\n%s\nEOF" % (
        RECOMMEND % (3 * reaction_seconds, reaction_seconds, reaction_seconds, MAX_PODS))))
    return recommendation


def run_policy(node, policy, results, reaction_seconds=REACTION_SECONDS):
    started = time.time()
    try:
        sh(node, "cat > /usr/local/bin/hold <<'EOF'\n%sEOF\nchmod 755 /usr/local/bin/hold" % HOLD)
        capacity = int(sh(node, "awk '/^MemTotal:/ {print $2}' /proc/meminfo")) * 1024
        extra = {}
        if policy == 'measured':
            recommendation = warm_up(node, pod_count(capacity), reaction_seconds)
            kube = quantity_bytes(recommendation['kube_reserved']['memory'])
            system = quantity_bytes(recommendation['system_reserved']['memory'])
            extra = {'history_samples': recommendation['basis'].get('samples'),
                     'memory_headroom_bytes': recommendation['memory_headroom_bytes'],
                     'single_reading': recommendation['single_reading'],
                     'explanation': recommendation['explanation']}
        elif policy == 'none':
            kube = system = 0
        else:
            formula = _vendor_formulas.all_formulas(capacity, 1, MAX_PODS)[policy]
            kube, system = formula['kube_reserved_memory_bytes'], formula['system_reserved_memory_bytes']
        apply_reservation(node, kube, system)
        # pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableAbsolute less the hard eviction
        # threshold (kubelet_node_status.go / nodestatus.MachineInfo): what the Node offers pods.
        allocatable = capacity - kube - system - 100 * MIB
        # What the stand-in kubelet set (capacity - kubeReserved - systemReserved), read back as a cross-check.
        limit = sh(node, 'cat /sys/fs/cgroup/kubepods.slice/memory.max 2>/dev/null '
                         '|| cat /sys/fs/cgroup/memory/kubepods.slice/memory.limit_in_bytes').strip()
        pods = pod_count(capacity)
        kubelet_pid = sh(node, 'systemctl show -p MainPID --value kubelet').strip()
        before = int(sh(node, "awk '/^oom_kill / {print $2}' /proc/vmstat"))
        sh(node, 'dmesg -C')
        # pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust, Burstable: 1000 - 1000 * request / capacity in [2, 999].
        adj = min(999, max(2, 1000 - (1000 * POD_REQUEST_MIB * MIB) // capacity))
        sh(node, GROWTH.replace('PODS', str(pods)))
        sh_detached(node, PODS.replace('PODS', str(pods)).replace('ADJ', str(adj)).replace('LIMIT', str(POD_LIMIT_MIB))
                    .replace('ALLOCATES', str(POD_ALLOCATES_MIB)), 'pods')
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
            'capacity_bytes': capacity,
            'kubepods_limit_bytes': int(limit) if limit.isdigit() else limit,
            'pods_started': pods,
            'vmstat_oom_kill': after - before,
            'killed': ['%s %s (%s)' % (k[0].split('_')[1].lower(), k[2], k[1]) for k in kills],
            'seconds': round(time.time() - started, 1),
        }
        results[policy].update(extra)
        print('oom_outcomes: %s done in %.0f s: %s' % (policy, time.time() - started, json.dumps(
            {k: v for k, v in results[policy].items() if k != 'explanation'})), file=sys.stderr, flush=True)
    except Exception as exc:  # noqa: BLE001 - one guest's failure is reported, the others go on
        results[policy] = {'error': str(exc)}
        print('oom_outcomes: %s failed: %s' % (policy, exc), file=sys.stderr, flush=True)


def markdown(result):
    lines = ['Kernel: `%s`' % result['kernel'], '',
             '| policy | reserved | allocatable | global OOM kills | cgroup OOM kills | non-pod killed | kubelet survived '
             '| killed (constraint, task, cgroup) | boot s | run s |',
             '|---|---:|---:|---:|---:|---:|---|---|---:|---:|']
    for name, row in result['policies'].items():
        if 'error' in row:
            lines.append('| %s | error: %s | | | | | | | | |' % (name, row['error']))
            continue
        lines.append('| %s | %d MiB | %d MiB | %d | %d | %d | %s | %s | %s | %s |' % (
            name, row['reserved_bytes'] // MIB, row['allocatable_bytes'] // MIB, row['global_oom_kills'],
            row['cgroup_oom_kills'], row['non_pod_killed'], 'yes' if row['kubelet_survived'] else 'NO',
            '; '.join(row['killed']) or '-', row.get('boot_seconds'), row.get('seconds')))
    return '\n'.join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--policies', default=','.join(ALL_POLICIES))
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--state-dir', default='/tmp/nodealloc-oom-outcomes')
    parser.add_argument('--full', action='store_true', help='print every field, not only the five of the JSON shape')
    parser.add_argument('--parallel', type=int, default=2, help='guests booted at once (each takes up to --guest-mib)')
    parser.add_argument('--guest-mib', type=int, default=GUEST_MIB)
    parser.add_argument('--reaction-seconds', type=int, default=REACTION_SECONDS,
                        help="the fast-forward's reaction time and stabilization window (24 h on a node)")
    args = parser.parse_args(argv)
    reason = vmnodes.missing()
    if reason:
        print('oom_outcomes: skipped: %s' % reason, file=sys.stderr)
        return 0
    policies = args.policies.split(',')
    unknown = sorted(set(policies) - set(ALL_POLICIES))
    if unknown:
        parser.error('unknown policies: %s' % ', '.join(unknown))
    results, boots, kernel = {}, {}, None
    # At most --parallel guests at once: each may fill GUEST_MIB of the host's memory.
    for first in range(0, len(policies), args.parallel):
        batch = policies[first:first + args.parallel]
        try:
            _inventory, nodes = vmnodes.up([{'name': 'oom-' + p, 'memory_mib': args.guest_mib} for p in batch],
                                           args.state_dir)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            results.update({p: {'error': 'guest did not boot: %s' % exc} for p in batch})
            continue
        try:
            threads = []
            for policy, node in zip(batch, nodes):
                node['state_dir'] = args.state_dir
                boots[policy] = node['ready_seconds']
                threads.append(threading.Thread(target=run_policy, args=(node, policy, results, args.reaction_seconds)))
                threads[-1].start()
            for thread in threads:
                thread.join()
            kernel = kernel or vmnodes.ssh(nodes[0], args.state_dir, 'uname -r', check=False, multiplex=False).stdout.strip()
        finally:
            vmnodes.down(args.state_dir)
    for policy in policies:
        results[policy]['boot_seconds'] = boots.get(policy)
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
