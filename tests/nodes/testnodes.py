"""Real test nodes: Debian trees booted with systemd-nspawn, each in its own network namespace.

Each node is a Debian bookworm tree (debootstrap, cached once in
/var/cache/nodealloc) seen through an overlay mount of its own, booted with
``systemd-nspawn --boot --register=no --keep-unit`` so that systemd is PID 1,
running ``sshd`` and a ``kubelet.service`` whose process is the stand-in
kubelet (tests/standin/kubelet.py). Each node lives in a network namespace
``nodealloc-<name>`` joined to the host by a veth pair with link-local
addresses (169.254.231.0/24) that exist only on those links. Each node gets
its own subtree of the host's memory, cpu and cpuacct hierarchies
(/sys/fs/cgroup/<controller>/nodealloc/<name>), bound over its
/sys/fs/cgroup/<controller> after boot (the controllers are read-only inside
at boot; see shared/test-nodes.md), so the stand-in and the facts module find
kubepods there as they would on a real node.

Usage (as root): ``python3 -m nodes.testnodes up --nodes 3 --state-dir DIR``
writes DIR/inventory.ini and DIR/state.json; ``down --state-dir DIR`` removes
everything it made.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = '/var/cache/nodealloc'
PACKAGES = ('systemd', 'systemd-sysv', 'dbus', 'python3', 'python3-yaml', 'openssh-server', 'iproute2',
            'procps')
# The nspawn nodes' tree (their userspace is bookworm's); VM guests may boot another release's (vmnodes.RELEASES).
SUITE = 'bookworm'


def image_path(suite=SUITE):
    """Where a Debian suite's cached tree lives; the package list is in the name, so a changed list builds anew."""
    return os.path.join(CACHE, suite + '-' + hashlib.sha256(' '.join(PACKAGES).encode()).hexdigest()[:12])


IMAGE = image_path()
NODES_DIR = '/var/lib/nodealloc-nodes'
CONTROLLERS = ('memory', 'cpu', 'cpuacct')
NET_PREFIX = '169.254.231.'
# Two fleets can be up at once, each in a slot of its own (NODEALLOC_NSPAWN_SLOT, 0 by default): make test runs the
# matrix lanes' rollouts on slot 1 beside the scenarios on slot 0 (hack/run-tests.sh). A slot has its own node names,
# link indexes (so addresses and host interfaces) and stand-in API server port, and cleans up only what is its own.
SLOT = int(os.environ.get('NODEALLOC_NSPAWN_SLOT', '0'))
SLOT_PREFIX = 'node' if SLOT == 0 else 's%dnode' % SLOT
# Link indexes 16 * SLOT + 1 .. 16 * SLOT + 15: addresses 4 * index + 1 and + 2 stay under .255 for slots 0-2.
SLOT_INDEXES = range(16 * SLOT + 1, 16 * SLOT + 16)
KUBELET_UNIT = """[Unit]
Description=kubelet (nodealloc stand-in)
After=network.target

[Service]
# The host binds this node's cgroup subtree over /sys/fs/cgroup/<controller> after boot, then marks it.
ExecStartPre=/bin/sh -c 'until [ -e /run/nodealloc-cgroups-ready ]; do sleep 0.2; done'
ExecStart=/usr/bin/python3 /usr/bin/kubelet --config=/var/lib/kubelet/config.yaml \\
    --config-dir=/etc/kubernetes/kubelet.conf.d --kubeconfig=/etc/kubernetes/kubelet.conf
Restart=always
RestartSec=2
TimeoutStopSec=5

[Install]
WantedBy=multi-user.target
"""
API_PORT = 6443 + SLOT
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: nodealloc-test
  cluster:
    server: http://%s:%d
contexts:
- name: nodealloc-test
  context:
    cluster: nodealloc-test
    user: nodealloc-test
current-context: nodealloc-test
users:
- name: nodealloc-test
  user: {}
"""
KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# As kubeadm writes it, shortened.
authentication:
  anonymous:
    enabled: false
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
healthzBindAddress: 127.0.0.1
healthzPort: 10248
kubeReserved:
  cpu: 100m
  memory: 100Mi
systemReserved:
  memory: 100Mi
rotateCertificates: true
"""


def run(*command, check=True, **kwargs):
    return subprocess.run(command, check=check, capture_output=True, text=True, **kwargs)


def ensure_image(suite=SUITE):
    """Build a suite's cached Debian tree once (1-3 minutes); later calls reuse it."""
    image = image_path(suite)
    if os.path.exists(os.path.join(image, '.complete')):
        return image
    os.makedirs(CACHE, exist_ok=True)
    # hack/run-tests.sh runs the VM tests beside the nspawn tests: on a fresh machine both want the tree at once.
    with open(os.path.join(CACHE, '.build.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(image, '.complete')):
            _build_image(suite, image)
    return image


def _build_image(suite, image):
    partial = image + '.partial'
    shutil.rmtree(partial, ignore_errors=True)
    run('debootstrap', '--variant=minbase', '--include=' + ','.join(PACKAGES), suite, partial,
        'http://deb.debian.org/debian')
    # No getty on a console nobody reads; nothing else to change in the shared lower layer.
    for unit in ('getty.target', 'console-getty.service'):
        link = os.path.join(partial, 'etc/systemd/system', unit)
        if not os.path.exists(link):
            os.symlink('/dev/null', link)
    open(os.path.join(partial, '.complete'), 'w').close()
    os.rename(partial, image)


def ensure_ssh_key(state_dir):
    key = os.path.join(state_dir, 'id_ed25519')
    if not os.path.exists(key):
        run('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'nodealloc-tests', '-f', key)
    with open(key + '.pub', encoding='utf-8') as handle:
        return key, handle.read()


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.chmod(path, mode)


def prepare_upper(upper, name, public_key, host_ip):
    """Files that differ from the shared image: written into the node's own overlay layer."""
    write(os.path.join(upper, 'etc/hostname'), name + '\n')
    write(os.path.join(upper, 'root/.ssh/authorized_keys'), public_key, 0o600)
    os.chmod(os.path.join(upper, 'root/.ssh'), 0o700)
    write(os.path.join(upper, 'etc/systemd/system/kubelet.service'), KUBELET_UNIT)
    wants = os.path.join(upper, 'etc/systemd/system/multi-user.target.wants')
    os.makedirs(wants, exist_ok=True)
    os.symlink('/etc/systemd/system/kubelet.service', os.path.join(wants, 'kubelet.service'))
    write(os.path.join(upper, 'var/lib/kubelet/config.yaml'), KUBELET_CONFIG)
    os.makedirs(os.path.join(upper, 'etc/kubernetes/kubelet.conf.d'), exist_ok=True)
    # The stand-in API server (tests/standin/apiserver.py) listens on the host end of this node's link.
    write(os.path.join(upper, 'etc/kubernetes/kubelet.conf'), KUBECONFIG % (host_ip, API_PORT))
    install_kubelet_standin(upper)


def install_kubelet_standin(root):
    """The stand-in kubelet as /usr/bin/kubelet under ``root``, with its field list and its own kubelet logic
    beside it (/usr/bin/kubelet_logic/). Nothing of the collection is installed: the stand-in shares no code."""
    standin = os.path.join(ROOT, 'tests', 'standin')
    shutil.copy(os.path.join(standin, 'kubelet.py'), _mkparent(root, 'usr/bin/kubelet'))
    shutil.copy(os.path.join(standin, 'kubelet_config_v1beta1_fields.txt'),
                _mkparent(root, 'usr/bin/kubelet_config_v1beta1_fields.txt'))
    shutil.copytree(os.path.join(standin, 'kubelet_logic'), _mkparent(root, 'usr/bin/kubelet_logic'),
                    ignore=shutil.ignore_patterns('__pycache__'))


def _mkparent(upper, relative):
    path = os.path.join(upper, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def node_addresses(index):
    return NET_PREFIX + str(4 * index + 1), NET_PREFIX + str(4 * index + 2)


def setup_network(name, index):
    netns = 'nodealloc-' + name
    host_if, node_if = 'nah%d' % index, 'nan%d' % index
    host_ip, node_ip = node_addresses(index)
    run('ip', 'netns', 'add', netns)
    run('ip', 'link', 'add', host_if, 'type', 'veth', 'peer', 'name', node_if)
    run('ip', 'link', 'set', node_if, 'netns', netns)
    run('ip', 'addr', 'add', host_ip + '/30', 'dev', host_if)
    run('ip', 'link', 'set', host_if, 'up')
    run('ip', 'netns', 'exec', netns, 'ip', 'addr', 'add', node_ip + '/30', 'dev', node_if)
    run('ip', 'netns', 'exec', netns, 'ip', 'link', 'set', node_if, 'up')
    run('ip', 'netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up')
    return netns, host_if, node_ip


def cgroup_subtree(name, controller):
    return os.path.join('/sys/fs/cgroup', controller, 'nodealloc', name)


def _children(pid):
    found = []
    try:
        for task in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, task), encoding='utf-8') as handle:
                found.extend(int(child) for child in handle.read().split())
    except OSError:
        pass  # gone meanwhile
    return found


def _is_namespace_init(pid):
    """PID 1 of its own PID namespace (the last NSpid field), so the container's systemd, not a helper."""
    try:
        with open('/proc/%d/status' % pid, encoding='utf-8') as handle:
            for line in handle:
                if line.startswith('NSpid:'):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == '1'
    except OSError:
        pass
    return False


def container_init_pid(nspawn_pid, timeout=30):
    # systemd-nspawn forks an intermediate child that forks the container's init and exits: taking the
    # first child seen raced with that exit (nsenter then found no /proc/<pid>/ns/mnt).
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = _children(nspawn_pid)
        while pending:
            pid = pending.pop()
            if _is_namespace_init(pid):
                return pid
            pending.extend(_children(pid))
        time.sleep(0.1)
    raise RuntimeError('systemd-nspawn %d started no container' % nspawn_pid)


def wait_for_port(address, port, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError('%s:%d did not answer within %d s' % (address, port, timeout))


def start_node(name, index, public_key, state_dir):
    image = ensure_image()
    base = os.path.join(NODES_DIR, name)
    shutil.rmtree(base, ignore_errors=True)
    upper, work, merged = (os.path.join(base, d) for d in ('upper', 'work', 'merged'))
    for directory in (upper, work, merged):
        os.makedirs(directory)
    prepare_upper(upper, name, public_key, node_addresses(index)[0])
    run('mount', '-t', 'overlay', 'overlay', '-o',
        'lowerdir=%s,upperdir=%s,workdir=%s' % (image, upper, work), merged)
    shutil.rmtree('/run/systemd/nspawn/propagate/' + name, ignore_errors=True)
    for controller in CONTROLLERS:
        os.makedirs(cgroup_subtree(name, controller), exist_ok=True)
    netns, host_if, node_ip = setup_network(name, index)
    binds = ['--bind=%s:/mnt/cg/%s' % (cgroup_subtree(name, c), c) for c in CONTROLLERS]
    log = open(os.path.join(state_dir, name + '.console.log'), 'w', encoding='utf-8')
    nspawn = subprocess.Popen(
        ['systemd-nspawn', '-D', merged, '--boot', '--register=no', '--keep-unit', '--machine=' + name,
         '--network-namespace-path=/run/netns/' + netns, '--console=passive'] + binds,
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    init_pid = container_init_pid(nspawn.pid)
    for controller in CONTROLLERS:
        target = '/sys/fs/cgroup/' + controller
        deadline = time.monotonic() + 30
        while True:
            result = run('nsenter', '-t', str(init_pid), '-m', '-r', 'mount', '--bind', '/mnt/cg/' + controller,
                         target, check=False)
            if result.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError('could not bind %s in %s: %s' % (controller, name, result.stderr))
            time.sleep(0.2)
    run('nsenter', '-t', str(init_pid), '-m', '-r', 'touch', '/run/nodealloc-cgroups-ready')
    return {'name': name, 'index': index, 'address': node_ip, 'nspawn_pid': nspawn.pid, 'init_pid': init_pid,
            'netns': netns, 'host_if': host_if, 'merged': merged, 'base': base, 'state_dir': state_dir}


def write_inventory(state_dir, nodes, key):
    lines = ['[nodes]']
    for node in nodes:
        lines.append('%s ansible_host=%s' % (node['name'], node['address']))
    lines += ['', '[nodes:vars]', 'ansible_user=root', 'ansible_ssh_private_key_file=%s' % key,
              "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
              "-o ConnectTimeout=5 -o ServerAliveInterval=3 -o ServerAliveCountMax=3'", 'ansible_python_interpreter=/usr/bin/python3', '']
    path = os.path.join(state_dir, 'inventory.ini')
    write(path, '\n'.join(lines))
    return path


def _own_name(name):
    """Whether a node name is this slot's (SLOT_PREFIX and a number)."""
    return name.startswith(SLOT_PREFIX) and name[len(SLOT_PREFIX):].isdigit()


def _orphaned_inits():
    """The pids of this slot's container inits whose systemd-nspawn is gone (their parent is pid 1): found by the
    overlay mounted as their root, whose upper directory is a node's under NODES_DIR."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid, 'rb') as handle:
                if handle.read().rsplit(b')', 1)[1].split()[1] != b'1':
                    continue
            with open('/proc/%s/mountinfo' % pid, 'rb') as handle:
                mounts = handle.read().decode('utf-8', 'replace').splitlines()
        except (OSError, IndexError):
            continue
        for line in mounts:
            fields = line.split()
            if len(fields) > 4 and fields[4] == '/':
                upper = re.search(r'upperdir=%s/([^/,]+)/upper' % re.escape(NODES_DIR), line)
                if upper and _own_name(upper.group(1)):
                    found.append(int(pid))
                break
    return found


def cleanup_stale():
    """Remove what a killed earlier run of this slot left: containers, overlays, network namespaces, cgroup
    subtrees. Another slot's fleet, up at the same time, is left alone."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')
        except OSError:
            continue
        merged = [a.decode('utf-8', 'replace') for a in argv if a.startswith(NODES_DIR.encode() + b'/')]
        if (argv and argv[0].endswith(b'systemd-nspawn') and merged
                and _own_name(os.path.relpath(merged[0], NODES_DIR).split('/')[0])):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while os.path.exists('/proc/' + pid) and time.monotonic() < deadline:
                time.sleep(0.1)
    # A container's init outlives a systemd-nspawn killed with SIGKILL (it is in its own session and PID namespace),
    # and each such orphan keeps its systemd's inotify instances: a dozen left by a killed run made the next boot of
    # twelve nodes fail ("Failed to create control group inotify object: Too many open files", the 128 a user may
    # have). Killing the init ends its PID namespace.
    for pid in _orphaned_inits():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if os.path.isdir(NODES_DIR):
        for name in [n for n in os.listdir(NODES_DIR) if _own_name(n)]:
            run('umount', '-l', os.path.join(NODES_DIR, name, 'merged'), check=False)
            _remove_cgroups(name)
            shutil.rmtree('/run/systemd/nspawn/propagate/' + name, ignore_errors=True)
            shutil.rmtree(os.path.join(NODES_DIR, name), ignore_errors=True)
    for line in run('ip', 'netns', 'list', check=False).stdout.splitlines():
        namespace = line.split()[0] if line.split() else ''
        if namespace.startswith('nodealloc-') and _own_name(namespace[len('nodealloc-'):]):
            run('ip', 'netns', 'del', namespace, check=False)
    for line in run('ip', '-br', 'link', check=False).stdout.splitlines():
        interface = line.split('@')[0].split()[0] if line.split() else ''
        if interface.startswith('nah') and interface[3:].isdigit() and int(interface[3:]) in SLOT_INDEXES:
            run('ip', 'link', 'del', interface, check=False)


def up(count, state_dir):
    """Boot ``count`` nodes of this slot (SLOT): named SLOT_PREFIX1, SLOT_PREFIX2, ..."""
    if count > len(SLOT_INDEXES):
        raise ValueError('at most %d nodes in a slot' % len(SLOT_INDEXES))
    cleanup_stale()
    os.makedirs(state_dir, exist_ok=True)
    key, public_key = ensure_ssh_key(state_dir)
    nodes = []
    state_path = os.path.join(state_dir, 'state.json')
    try:
        for number, index in zip(range(1, count + 1), SLOT_INDEXES):
            nodes.append(start_node('%s%d' % (SLOT_PREFIX, number), index, public_key, state_dir))
            write(state_path, json.dumps(nodes, indent=2))
        for node in nodes:
            wait_for_port(node['address'], 22, 90)
    except Exception:
        down(state_dir)
        raise
    return write_inventory(state_dir, nodes, key), nodes


def _kill_tree(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _remove_cgroups(name):
    for controller in CONTROLLERS:
        top = cgroup_subtree(name, controller)
        if not os.path.isdir(top):
            continue
        for directory, _subdirs, _files in sorted(os.walk(top), key=lambda w: w[0].count('/'), reverse=True):
            for _attempt in range(50):
                try:
                    with open(os.path.join(directory, 'cgroup.procs'), encoding='utf-8') as handle:
                        for pid in handle.read().split():
                            try:
                                os.kill(int(pid), signal.SIGKILL)
                            except ProcessLookupError:
                                pass
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def down(state_dir):
    state_path = os.path.join(state_dir, 'state.json')
    if not os.path.exists(state_path):
        return
    with open(state_path, encoding='utf-8') as handle:
        nodes = json.load(handle)
    for node in nodes:
        _kill_tree(node['nspawn_pid'], signal.SIGTERM)
    deadline = time.monotonic() + 15
    for node in nodes:
        while time.monotonic() < deadline and os.path.exists('/proc/%d' % node['nspawn_pid']):
            time.sleep(0.2)
        _kill_tree(node['nspawn_pid'], signal.SIGKILL)
    for node in nodes:
        run('umount', '-l', node['merged'], check=False)
        _remove_cgroups(node['name'])
        run('ip', 'link', 'del', node['host_if'], check=False)
        run('ip', 'netns', 'del', node['netns'], check=False)
        shutil.rmtree('/run/systemd/nspawn/propagate/' + node['name'], ignore_errors=True)
        shutil.rmtree(node['base'], ignore_errors=True)
    for controller in CONTROLLERS:
        try:
            os.rmdir(os.path.join('/sys/fs/cgroup', controller, 'nodealloc'))
        except OSError:
            pass
    os.unlink(state_path)


def start_apiserver(nodes, state_dir, port=API_PORT, addresses=None):
    """The stand-in API server on loopback and the host end of every node's link; returns (process, kubeconfig).

    ``addresses`` replaces the links' (VM guests reach the host's loopback through QEMU's user network).
    """
    if addresses is None:
        addresses = ['127.0.0.1'] + [node_addresses(node['index'])[0] for node in nodes]
    log = open(os.path.join(state_dir, 'apiserver.log'), 'w', encoding='utf-8')
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, 'tests', 'standin', 'apiserver.py'),
                                str(port)] + addresses, stdout=log, stderr=subprocess.STDOUT)
    wait_for_port('127.0.0.1', port, 15)
    kubeconfig = os.path.join(state_dir, 'kubeconfig')
    write(kubeconfig, KUBECONFIG % ('127.0.0.1', port), 0o600)
    return process, kubeconfig


def ssh_command(node, state_dir):
    """The ssh argv (before the remote command) that reaches a node over its veth link, as Ansible does."""
    return ['ssh', '-i', os.path.join(state_dir, 'id_ed25519'), '-o', 'StrictHostKeyChecking=no',
            '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=5',
            'root@' + node['address']]


def ssh(node, state_dir, command, check=True):
    """Run a shell command on a node over its veth link, as Ansible reaches it."""
    return run(*ssh_command(node, state_dir), command, check=check)


def node_path(node, relative):
    """A path inside a running node, seen from the host through its overlay mount."""
    return os.path.join(node['merged'], relative.lstrip('/'))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('action', choices=['up', 'down', 'image'])
    parser.add_argument('--nodes', type=int, default=3)
    parser.add_argument('--state-dir', default='/tmp/nodealloc-nodes')
    parser.add_argument('--suite', default=SUITE, help='the Debian suite of the tree `image` builds')
    args = parser.parse_args(argv)
    if args.action == 'image':
        print(ensure_image(args.suite))
    elif args.action == 'up':
        inventory, _nodes = up(args.nodes, args.state_dir)
        print(inventory)
    else:
        down(args.state_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
