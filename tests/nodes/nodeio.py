"""Read and change a test node the same way whichever backend booted it.

nspawn nodes (testnodes.py) are read through their overlay mount on the host; VM guests
(vmnodes.py) over SSH on their forwarded loopback port. Scenarios written against these
functions run on either, so the ones that assert node-wide numbers run on VM guests (their own
kernel and /proc/meminfo) and the rest on the faster nspawn nodes.
"""

from __future__ import annotations

import json
import subprocess
import time

from nodes import testnodes, vmnodes

STANDIN_LOG = '/var/log/kubelet-standin.log'
STANDIN_FAULTS = '/etc/kubelet-standin/faults.json'
STANDIN_VERSION = '/etc/kubelet-standin/version'  # the stand-in's "installed" kubelet version
HEALTHZ = ('python3 -c "import urllib.request as u; '
           'print(u.urlopen(\'http://127.0.0.1:10248/healthz\', timeout=5).read().decode())"')
# What reset() puts back: the first config and nothing the role or a scenario left (backups, drop-ins, faults,
# the sampler with its history and state, the on-node step's journal, the stand-in's log).
RESET_SCRIPT = """set -e
cat > /var/lib/kubelet/config.yaml
rm -f /var/lib/kubelet/*.nodealloc.bak /etc/kubernetes/kubelet.conf.d/*.conf {faults} {version}
systemctl disable --now nodealloc-sampler.timer >/dev/null 2>&1 || true
# A run the timer started may still be sampling: it would write history and state after the rm below. Let it
# finish (one CPU sample, 10 s at most) before stopping it: after a run was killed mid-way by this reset, the next
# start on an nspawn node failed with 219/CGROUP ("Failed to kill control group ...: Input/output error").
for _ in $(seq 40); do systemctl is-active --quiet nodealloc-sampler.service || break; sleep 0.5; done
systemctl stop nodealloc-sampler.service >/dev/null 2>&1 || true
systemctl reset-failed nodealloc-sampler.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/nodealloc-sampler.service /etc/systemd/system/nodealloc-sampler.timer
systemctl daemon-reload
rm -rf /var/lib/nodealloc /usr/local/lib/nodealloc /var/cache/nodealloc-sampler /var/lib/node_exporter
# A step's async job file a killed controller left (a finished rollout leaves none: test_rollout.assert_rolled).
rm -rf /root/.ansible_async
: > {log}
systemctl restart kubelet.service
""".format(faults=STANDIN_FAULTS, log=STANDIN_LOG, version=STANDIN_VERSION)


def is_vm(node):
    return 'qemu_pid' in node


def _ssh_argv(node):
    return (vmnodes if is_vm(node) else testnodes).ssh_command(node, node['state_dir'])


def ssh(node, command, check=True, stdin=None):
    """Run a shell command on the node as Ansible reaches it; text in and out."""
    return subprocess.run(_ssh_argv(node) + [command], input=stdin, check=check, capture_output=True, text=True, timeout=300)


def read_bytes(node, path):
    """A file's bytes on the node, or None when it does not exist.

    An nspawn node's files are read through its overlay mount, but not /proc and /sys: the node sees the kernel's
    (its cgroup subtree bound over /sys/fs/cgroup), which only a process in it can read.
    """
    if not is_vm(node) and not path.startswith(('/proc/', '/sys/')):
        try:
            with open(testnodes.node_path(node, path), 'rb') as handle:
                return handle.read()
        except FileNotFoundError:
            return None
    result = subprocess.run(_ssh_argv(node) + ['cat %s 2>/dev/null || echo -n MISSING >&2' % path],
                            capture_output=True, check=False, timeout=120)
    if result.stderr.endswith(b'MISSING'):
        return None
    if result.returncode != 0:
        raise RuntimeError('could not read %s on %s: %s' % (path, node['name'], result.stderr.decode(errors='replace')))
    return result.stdout


def listdir(node, path):
    """Names in a directory on the node ([] when it does not exist)."""
    return [name for name in ssh(node, 'ls -A %s 2>/dev/null || true' % path).stdout.split('\n') if name]


def write_text(node, path, text):
    ssh(node, 'mkdir -p "$(dirname %s)" && cat > %s' % (path, path), stdin=text)


def events(node):
    """The stand-in kubelet's log on the node, as a list of dicts (times from the node's clock)."""
    text = read_bytes(node, STANDIN_LOG)
    return [json.loads(line) for line in (text or b'').decode().splitlines() if line.strip()]


def set_faults(node, faults):
    """Fault switches the stand-in reads when it next starts (tests/standin/kubelet.py)."""
    write_text(node, STANDIN_FAULTS, json.dumps(faults))


def wait_healthy(node, seconds=60):
    deadline = time.monotonic() + seconds
    while ssh(node, HEALTHZ, check=False).stdout.strip() != 'ok':
        if time.monotonic() > deadline:
            raise RuntimeError('%s did not become healthy within %d s' % (node['name'], seconds))
        time.sleep(0.3)


def reset(nodes):
    """Put every node back to its first state (RESET_SCRIPT) and wait until its kubelet is healthy again."""
    for node in nodes:
        ssh(node, RESET_SCRIPT, stdin=testnodes.KUBELET_CONFIG)
    for node in nodes:
        wait_healthy(node)
