"""VM test nodes: QEMU guests booting Debian's own kernel, systemd as PID 1, each with its own memory.

The second backend of tests/nodes (the first, testnodes.py, boots nspawn
containers that share the host's kernel and /proc/meminfo). Each guest:

* runs ``/boot/vmlinuz-<version>`` and its initramfs (Debian's
  ``linux-image-amd64``) under ``qemu-system-x86_64 -accel tcg`` (KVM hung in
  early boot on this kind of machine, see shared/test-nodes.md);
* has its root on a copy-on-write qcow2 overlay of one raw ext4 image, made
  once per ``up`` (per state dir) with ``mkfs.ext4 -d`` from the cached debootstrap tree of
  testnodes.py plus that kernel's /lib/modules, the session's SSH key, the
  stand-in kubelet (kubelet.service) and a stand-in container runtime
  (containerd.service);
* gets its address from QEMU's user network by systemd-networkd DHCP; SSH is
  forwarded from a 127.0.0.1 port only;
* boots with cgroup v2 (the default), or cgroup v1 with
  ``systemd.unified_cgroup_hierarchy=0`` on the kernel command line;
* runs one of the Debian releases in RELEASES (bookworm unless a guest names
  another): that release's tree, so its own python3 runs the modules and its
  own systemd is PID 1, on the host's kernel (one disk per release and state dir).

Pods are real processes the guest's systemd places, as the kubelet's systemd
cgroup driver does (``run_pod``): ``systemd-run --slice=kubepods-<qos>-pod<uid>.slice``,
so the unit lands in ``kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice``.

Usage (as root): ``python3 -m nodes.vmnodes up --nodes 1 --state-dir DIR [--cgroup v1] [--release 13]``
writes DIR/inventory.ini and DIR/state.json; ``down --state-dir DIR`` stops the
guests and removes their disks.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from nodes import testnodes

ROOT = testnodes.ROOT
VM_DIR = '/var/lib/nodealloc-vms'
QEMU = 'qemu-system-x86_64'
# Budget for a busy 2-core machine: software emulation boots in 30-40 s when idle.
BOOT_TIMEOUT = 420
# pkg/kubelet/qos/policy.go: KubeletOOMScoreAdj and KubeProxyOOMScoreAdj are -999; the
# container runtime gets the same from its own unit (containerd.service ships OOMScoreAdjust=-999).
DAEMON_OOM_SCORE_ADJ = -999
KUBELET_UNIT = """[Unit]
Description=kubelet (nodealloc stand-in)
After=network.target containerd.service
# The kubelet's systemd cgroup driver has systemd create kubepods.slice and its QoS slices before
# it sets their limits; started here first, systemd has them realized and leaves the limits alone.
Wants=kubepods.slice kubepods-burstable.slice kubepods-besteffort.slice
After=kubepods.slice kubepods-burstable.slice kubepods-besteffort.slice

[Service]
# The real kubelet sets kubepods' limit through systemd (its systemd cgroup driver), so a later
# daemon-reload keeps it; the stand-in writes the cgroup file, so hand the value it wrote to systemd.
# Setting a CPU weight is also what makes systemd enable the cpu controller down to kubepods on cgroup v2.
ExecStartPre=/bin/systemctl set-property --runtime kubepods.slice MemoryMax=infinity CPUWeight=100
ExecStartPost=/usr/bin/kubepods-limit-to-systemd
ExecStart=/usr/bin/python3 /usr/bin/kubelet --config=/var/lib/kubelet/config.yaml \\
    --config-dir=/etc/kubernetes/kubelet.conf.d --kubeconfig=/etc/kubernetes/kubelet.conf
OOMScoreAdjust=-999
Restart=always
RestartSec=2
TimeoutStopSec=5

[Install]
WantedBy=multi-user.target
"""
CONTAINERD_UNIT = """[Unit]
Description=container runtime (nodealloc stand-in)
After=network.target

[Service]
ExecStart=/usr/bin/python3 /usr/bin/containerd
OOMScoreAdjust=-999
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
"""
# A container runtime stand-in: a long-running process whose resident memory is what
# /etc/containerd-standin/resident_mib says (re-read every half second), as a runtime's
# memory grows with the pods and images it manages.
CONTAINERD_STANDIN = '''#!/usr/bin/python3
import mmap, os, time
PATH = "/etc/containerd-standin/resident_mib"
held = []
while True:
    try:
        with open(PATH) as handle:
            want = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        want = 0
    while len(held) < want:
        block = mmap.mmap(-1, 1 << 20)
        block.write(b"\\x01" * (1 << 20))
        held.append(block)
    while len(held) > want:
        held.pop().close()
    time.sleep(0.5)
'''
KUBEPODS_LIMIT_TO_SYSTEMD = """#!/bin/sh
for file in /sys/fs/cgroup/kubepods.slice/memory.max /sys/fs/cgroup/memory/kubepods.slice/memory.limit_in_bytes; do
    [ -e "$file" ] || continue
    for attempt in $(seq 200); do
        value=$(cat "$file")
        case "$value" in
            max|9223372036854771712) sleep 0.3 ;;
            *) weight=$(cat /sys/fs/cgroup/kubepods.slice/cpu.weight 2>/dev/null || echo 100)
               exec systemctl set-property --runtime kubepods.slice MemoryMax="$value" CPUWeight="$weight" ;;
        esac
    done
done
exit 0
"""
# The guest reaches the host's loopback at this address (QEMU user networking); the stand-in API server of
# a test listens there on a port the test picked.
HOST_FROM_GUEST = '10.0.2.2'
# The Debian releases a guest can run, by version: the one list the fixtures (tests/nodes/fleets.py), the tests on
# them and the documented support matrix (README, roles/reservations/meta/main.yml) follow. Each entry: the
# suite debootstrap builds, and what Debian ships there (python3 runs the modules, systemd is PID 1), which the
# tests check the guest really runs. All boot the host's kernel (bookworm's 6.1): the kernel is not what differs
# between nodes the collection manages, their userspace is.
RELEASES = {
    '11': {'suite': 'bullseye', 'python': '3.9', 'systemd': '247'},
    '12': {'suite': 'bookworm', 'python': '3.11', 'systemd': '252'},
    '13': {'suite': 'trixie', 'python': '3.13', 'systemd': '257'},
}
DEFAULT_RELEASE = '12'
# QEMU processes this process started and has not stopped, and the state dirs of its ups: cleanup_stale()
# leaves them and their disks alone, so a benchmark run in a test can boot guests beside the session's.
_LIVE_PIDS = set()
_LIVE_DIRS = set()
# Every process that boots guests holds this file locked, shared, from its first up until it exits (the kernel
# drops the lock of a killed one): only a process that can lock it exclusively is alone, and only then is what lies
# under VM_DIR and is not its own a leftover. make test runs two pytest processes on guests at once
# (hack/run-tests.sh); neither may stop the other's guests or delete their disks.
IN_USE_LOCK = os.path.join(VM_DIR, '.in-use.lock')
_in_use = []
# Held while an up cleans, makes its disk and starts its guests (not while they boot): ups in two threads.
_UP_LOCK = threading.Lock()
NETWORK = """[Match]
Name=en* eth*

[Network]
DHCP=yes
"""


def kernel_version():
    """The newest Debian kernel under /boot that has its initramfs and modules."""
    versions = []
    for path in glob.glob('/boot/vmlinuz-*'):
        version = path[len('/boot/vmlinuz-'):]
        if os.path.exists('/boot/initrd.img-' + version) and os.path.isdir('/lib/modules/' + version):
            versions.append(version)
    return sorted(versions)[-1] if versions else None


def missing():
    """Why VM nodes cannot run here, or None."""
    if os.geteuid() != 0:
        return 'VM nodes need root (mkfs, qemu disks under %s)' % VM_DIR
    for tool in (QEMU, 'qemu-img', 'mkfs.ext4'):
        if shutil.which(tool) is None:
            return '%s is not installed (Debian packages qemu-system-x86, qemu-utils, e2fsprogs)' % tool
    if kernel_version() is None:
        return 'no /boot/vmlinuz-* with its initrd.img and /lib/modules (Debian package linux-image-amd64)'
    return None


def _tree_extras(extras, public_key, api_port):
    write = testnodes.write
    write(os.path.join(extras, 'root/.ssh/authorized_keys'), public_key, 0o600)
    os.chmod(os.path.join(extras, 'root/.ssh'), 0o700)
    write(os.path.join(extras, 'etc/fstab'), '/dev/vda / ext4 rw,relatime 0 1\n')
    write(os.path.join(extras, 'etc/systemd/network/20-dhcp.network'), NETWORK)
    write(os.path.join(extras, 'etc/systemd/system/kubelet.service'), KUBELET_UNIT)
    write(os.path.join(extras, 'etc/systemd/system/containerd.service'), CONTAINERD_UNIT)
    # Named as the real runtime's binary, so the facts module finds it by its program name.
    write(os.path.join(extras, 'usr/bin/containerd'), CONTAINERD_STANDIN, 0o755)
    write(os.path.join(extras, 'etc/containerd-standin/resident_mib'), '20\n')
    write(os.path.join(extras, 'usr/bin/kubepods-limit-to-systemd'), KUBEPODS_LIMIT_TO_SYSTEMD, 0o755)
    # As on a kubelet node: CPU accounting on, so kubepods has the cpu controller the kubelet writes.
    write(os.path.join(extras, 'etc/systemd/system.conf.d/accounting.conf'),
          '[Manager]\nDefaultCPUAccounting=yes\nDefaultMemoryAccounting=yes\n')
    wants = os.path.join(extras, 'etc/systemd/system/multi-user.target.wants')
    os.makedirs(wants, exist_ok=True)
    for unit in ('/etc/systemd/system/kubelet.service', '/etc/systemd/system/containerd.service',
                 '/lib/systemd/system/systemd-networkd.service'):
        os.symlink(unit, os.path.join(wants, os.path.basename(unit)))
    sockets = os.path.join(extras, 'etc/systemd/system/sockets.target.wants')
    os.makedirs(sockets, exist_ok=True)
    os.symlink('/lib/systemd/system/systemd-networkd.socket', os.path.join(sockets, 'systemd-networkd.socket'))
    # No login prompt on the serial console nobody reads; nothing a guest without binfmt or static nodes needs.
    for unit in ('kmod-static-nodes.service', 'systemd-binfmt.service', 'proc-sys-fs-binfmt_misc.automount',
                 'proc-sys-fs-binfmt_misc.mount'):
        os.symlink('/dev/null', os.path.join(extras, 'etc/systemd/system', unit))
    os.symlink('/dev/null', os.path.join(extras, 'etc/systemd/system/serial-getty@.service'))
    write(os.path.join(extras, 'var/lib/kubelet/config.yaml'), testnodes.KUBELET_CONFIG)
    os.makedirs(os.path.join(extras, 'etc/kubernetes/kubelet.conf.d'), exist_ok=True)
    # Without an API server of the test's own, the kubeconfig names a port nothing listens on in the guest
    # (the host's loopback may carry another run's stand-in API server).
    server = (HOST_FROM_GUEST, api_port) if api_port else ('127.0.0.1', 9)
    write(os.path.join(extras, 'etc/kubernetes/kubelet.conf'), testnodes.KUBECONFIG % server)
    testnodes.install_kubelet_standin(extras)
    os.chmod(os.path.join(extras, 'usr/bin/kubelet'), 0o755)


def disk_path(state_dir, release=DEFAULT_RELEASE):
    """One raw root image per state dir and release: guests of another fixture keep theirs as their backing file."""
    digest = hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:12]
    # The default release's name is the one earlier runs used, so their leftovers are still recognised as such.
    return os.path.join(VM_DIR, 'root-%s.img' % digest if release == DEFAULT_RELEASE
                        else 'root-%s-debian%s.img' % (digest, release))


def make_disk(state_dir, public_key, size='3G', api_port=None, release=DEFAULT_RELEASE):
    """The raw root image of a state dir's guests of one release: its cached tree, the kernel's modules and the
    test node's files."""
    version = kernel_version()
    image = testnodes.ensure_image(RELEASES[release]['suite'])
    base = disk_path(state_dir, release) + '.build'
    shutil.rmtree(base, ignore_errors=True)
    extras, work, merged = (os.path.join(base, d) for d in ('extras', 'work', 'merged'))
    for directory in (extras, work, merged):
        os.makedirs(directory)
    _tree_extras(extras, public_key, api_port)
    shutil.copytree('/lib/modules/' + version, os.path.join(extras, 'usr/lib/modules', version), symlinks=True)
    disk = disk_path(state_dir, release)
    testnodes.run('mount', '-t', 'overlay', 'overlay', '-o',
                  'lowerdir=%s,upperdir=%s,workdir=%s' % (image, extras, work), merged)
    try:
        if os.path.exists(disk):
            os.unlink(disk)
        testnodes.run('mkfs.ext4', '-q', '-F', '-L', 'root', '-d', merged, disk, size)
    finally:
        testnodes.run('umount', merged, check=False)
        shutil.rmtree(base, ignore_errors=True)
    return disk


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def start_guest(name, disk, state_dir, memory_mib=1280, cgroup='v2', cpus=1, release=DEFAULT_RELEASE, forwards=()):
    """Boot one guest. ``forwards``: guest TCP ports also reached from a free port of the host's 127.0.0.1 (as SSH is);
    the guest's record maps each (as a string, JSON's keys) to its host port under ``forwards``."""
    overlay = os.path.join(VM_DIR, name + '.qcow2')
    if os.path.exists(overlay):
        os.unlink(overlay)
    testnodes.run('qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', disk, overlay)
    version = kernel_version()
    port = free_port()
    host_ports = {str(guest_port): free_port() for guest_port in forwards}
    netdev = 'user,id=n0,hostfwd=tcp:127.0.0.1:%d-:22' % port + ''.join(
        ',hostfwd=tcp:127.0.0.1:%d-:%s' % (host_port, guest_port) for guest_port, host_port in host_ports.items())
    # no_timer_check: the kernel's early check that the timer interrupt arrives gives up when the emulated CPU is
    # starved, and panics ("IO-APIC + timer doesn't work!"): a guest of ci8 (2026-11-27) died so at boot while five
    # guests booted beside two pytest runs. The check is for broken hardware timers; QEMU's are not.
    append = ['root=/dev/vda', 'rw', 'console=ttyS0', 'quiet', 'systemd.hostname=' + name,
              'systemd.show_status=0', 'panic=1', 'no_timer_check']
    if cgroup == 'v1':
        append.append('systemd.unified_cgroup_hierarchy=0')
    console = os.path.join(state_dir, name + '.console.log')
    process = subprocess.Popen(
        [QEMU, '-accel', 'tcg', '-m', str(memory_mib), '-smp', str(cpus), '-nographic', '-nodefaults', '-no-reboot',
         '-kernel', '/boot/vmlinuz-' + version, '-initrd', '/boot/initrd.img-' + version,
         '-append', ' '.join(append), '-drive', 'file=%s,if=virtio,format=qcow2' % overlay,
         '-netdev', netdev, '-device', 'virtio-net-pci,netdev=n0',
         '-serial', 'file:' + console],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    _LIVE_PIDS.add(process.pid)
    return {'name': name, 'state_dir': state_dir, 'address': '127.0.0.1', 'port': port, 'qemu_pid': process.pid, 'overlay': overlay,
            'memory_mib': memory_mib, 'cgroup': cgroup, 'release': release, 'started': time.time(), 'console': console,
            'forwards': host_ports}


# A unix socket's path has room for about 104 bytes: the master's socket is the state directory's only while it fits.
_CONTROL_PATH_MAX = 100


def _multiplexing(state_dir):
    """ssh options that reuse one connection per guest (OpenSSH's ControlMaster, as Ansible's own ssh does): a new
    connection to a guest under software emulation costs about 1.5 CPU seconds of key exchange (10 fresh ``ssh``
    runs of ``cat /proc/loadavg``: 15.0 CPU s and 15.2 s; over one master: 2.0 CPU s and 1.9 s), and the tests read
    the guests' files and logs over hundreds of them. The socket is in the guests' own state directory, which only
    root can write; the master exits 30 s after its last use, or when its guest goes away (QEMU's forwarded port
    closes). No keep-alive: a guest busy for minutes (a page-cache thrash before a global OOM) must not have its
    master give up on it, as a plain connection would not."""
    control_path = os.path.join(state_dir, 'cm-%C')
    if len(control_path) - len('%C') + 40 > _CONTROL_PATH_MAX:
        return []
    return ['-o', 'ControlMaster=auto', '-o', 'ControlPath=' + control_path, '-o', 'ControlPersist=30']


# A new connection's key exchange costs a TCG guest about 1.5 CPU seconds idle and several times that on a loaded
# machine; ssh's ConnectTimeout covers it. At 10 s one connection to a guest was never made (ci53, docs/testing.md);
# a guest that is really gone is known by other means (its QEMU process, the tests' own deadlines).
CONNECT_TIMEOUT_SECONDS = 30


def ssh_command(node, state_dir, multiplex=True):
    """The ssh argv (before the remote command) that reaches a guest over its forwarded loopback port; ``multiplex``
    False makes a connection of its own (a guest driven into a global OOM, whose killer may take the shared session
    and every command on it: benchmarks/oom_outcomes.py)."""
    return ['ssh', '-i', os.path.join(state_dir, 'id_ed25519'), '-p', str(node['port']), '-o', 'StrictHostKeyChecking=no',
            '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=%d' % CONNECT_TIMEOUT_SECONDS,
            '-o', 'BatchMode=yes',
            *(_multiplexing(state_dir) if multiplex else []), 'root@127.0.0.1']


# What ssh says when it never reached the guest's shell: the command did not start, so running it again is safe.
_NOT_CONNECTED = ('Connection timed out', 'banner exchange', 'Connection refused', 'Connection reset',
                  'Connection closed by', 'kex_exchange_identification')


def ssh(node, state_dir, command, check=True, timeout=120, multiplex=True):
    """Run a shell command on a guest over its forwarded loopback port. A connection that was never made (exit 255
    with one of ssh's connection messages) is tried again, twice: under software emulation on two busy CPUs a guest's
    sshd once missed the 10-s connect timeout mid-run (ci53, test_facts_on_guest[facts-v1]) and answered again at
    once."""
    for attempt in range(3):
        result = subprocess.run(ssh_command(node, state_dir, multiplex) + [command], check=False, capture_output=True,
                                text=True, timeout=timeout)
        if result.returncode != 255 or not any(text in result.stderr for text in _NOT_CONNECTED) or attempt == 2:
            break
        time.sleep(2)
    if check:
        result.check_returncode()
    return result


def wait_ready(node, state_dir, timeout=BOOT_TIMEOUT):
    """Wait until SSH answers and the stand-in kubelet says healthy; records the boot time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists('/proc/%d' % node['qemu_pid']):
            raise RuntimeError('qemu for %s exited; see %s' % (node['name'], node['console']))
        try:
            result = ssh(node, state_dir, 'python3 -c "import urllib.request as u; '
                         'print(u.urlopen(\'http://127.0.0.1:10248/healthz\', timeout=5).read().decode())"',
                         check=False, timeout=60)
            if result.stdout.strip() == 'ok':
                node['ready_seconds'] = round(time.time() - node['started'], 1)
                set_clock(node, state_dir)
                return node
        except subprocess.TimeoutExpired:
            pass
        time.sleep(2)
    raise RuntimeError('%s was not ready within %d s; see %s' % (node['name'], timeout, node['console']))


def set_clock(node, state_dir):
    """Set the guest's clock from the host's, so times in a guest's logs compare with the host's and other guests'.

    The guest's clock starts from QEMU's emulated RTC (whole seconds) and has no time sync; the SSH round trip
    (a few ms) is the error left.
    """
    ssh(node, state_dir, 'date -s @%.3f >/dev/null' % time.time())


def write_inventory(state_dir, nodes, key, name='inventory.ini'):
    lines = ['[nodes]']
    for node in nodes:
        lines.append('%s ansible_host=127.0.0.1 ansible_port=%d' % (node['name'], node['port']))
    lines += ['', '[nodes:vars]', 'ansible_user=root', 'ansible_ssh_private_key_file=%s' % key,
              "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
              "-o ConnectTimeout=%d -o ServerAliveInterval=5 -o ServerAliveCountMax=6'" % CONNECT_TIMEOUT_SECONDS,
              'ansible_python_interpreter=/usr/bin/python3', '']
    path = os.path.join(state_dir, name)
    testnodes.write(path, '\n'.join(lines))
    return path


def _claim_vm_dir():
    """Hold IN_USE_LOCK shared from now on; True if no other live process held it (so leftovers may be removed)."""
    if _in_use:
        return False
    handle = open(IN_USE_LOCK, 'a', encoding='utf-8')  # pylint: disable=consider-using-with  # held until exit
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        alone = True
    except BlockingIOError:
        alone = False
    if alone:
        cleanup_stale()
    fcntl.flock(handle, fcntl.LOCK_SH)  # from exclusive: another process's first up may now share it
    _in_use.append(handle)
    return alone


def cleanup_stale():
    """Stop guests a killed earlier run left (their disks are under VM_DIR). Only called while no other live
    process uses VM_DIR (_claim_vm_dir)."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')
        except OSError:
            continue
        if (argv and argv[0].endswith(QEMU.encode()) and any(VM_DIR.encode() in a for a in argv)
                and int(pid) not in _LIVE_PIDS):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    if not os.path.isdir(VM_DIR):
        return
    ours = {os.path.basename(disk_path(d, release)) for d in _LIVE_DIRS for release in RELEASES} | {
        os.path.basename(n['overlay']) for n in _live_nodes()}
    for name in os.listdir(VM_DIR):  # what no up of this process uses is a leftover
        if name.endswith(('.img', '.qcow2')) and name not in ours:
            os.unlink(os.path.join(VM_DIR, name))
        elif name.endswith('.img.build') and name[:-len('.build')] not in ours:
            shutil.rmtree(os.path.join(VM_DIR, name), ignore_errors=True)


def _live_nodes():
    nodes = []
    for state_dir in _LIVE_DIRS:
        try:
            with open(os.path.join(state_dir, 'state.json'), encoding='utf-8') as handle:
                nodes += json.load(handle)
        except (OSError, ValueError):
            pass
    return nodes


def up(guests, state_dir, api_port=None):
    """Boot guests in parallel. ``guests`` is a list of dicts: name, and optionally memory_mib, cgroup, release
    (a key of RELEASES; DEFAULT_RELEASE when absent), forwards (guest ports reached from the host, start_guest).

    ``api_port``: the guests' kubelets report their Node status to a stand-in API server on this port of the
    host's loopback (the test starts it: testnodes.start_apiserver).
    """
    os.makedirs(state_dir, exist_ok=True)
    os.makedirs(VM_DIR, exist_ok=True)
    key, public_key = testnodes.ensure_ssh_key(state_dir)
    state_path = os.path.join(state_dir, 'state.json')
    nodes = []
    try:
        with _UP_LOCK:
            _claim_vm_dir()
            _LIVE_DIRS.add(state_dir)
            disks, image_seconds = {}, {}
            for guest in guests:
                release = guest.get('release', DEFAULT_RELEASE)
                if release not in disks:
                    started = time.time()
                    disks[release] = make_disk(state_dir, public_key, api_port=api_port, release=release)
                    image_seconds[release] = round(time.time() - started, 1)
                nodes.append(start_guest(guest['name'], disks[release], state_dir, guest.get('memory_mib', 1280),
                                         guest.get('cgroup', 'v2'), release=release,
                                         forwards=guest.get('forwards', ())))
                testnodes.write(state_path, json.dumps(nodes, indent=2))
        for node in nodes:
            wait_ready(node, state_dir)
            node['image_seconds'] = image_seconds[node['release']]
        testnodes.write(state_path, json.dumps(nodes, indent=2))
    except Exception:
        down(state_dir)
        raise
    return write_inventory(state_dir, nodes, key), nodes


def stop(node):
    """Power a guest off (its QEMU killed and reaped) and remove its overlay; a guest already off is left as it is."""
    try:
        os.killpg(node['qemu_pid'], signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 15
    while os.path.exists('/proc/%d' % node['qemu_pid']) and time.monotonic() < deadline:
        # A killed QEMU started by this process stays a zombie (its /proc entry too) until reaped.
        try:
            os.waitpid(node['qemu_pid'], os.WNOHANG)
        except ChildProcessError:
            pass  # not our child: its own parent reaps it
        time.sleep(0.1)
    _LIVE_PIDS.discard(node['qemu_pid'])
    if os.path.exists(node['overlay']):
        os.unlink(node['overlay'])


def down(state_dir):
    state_path = os.path.join(state_dir, 'state.json')
    _LIVE_DIRS.discard(state_dir)
    if not os.path.exists(state_path):
        return
    with open(state_path, encoding='utf-8') as handle:
        nodes = json.load(handle)
    for node in nodes:
        try:
            os.killpg(node['qemu_pid'], signal.SIGKILL)
        except ProcessLookupError:
            pass
    for node in nodes:
        stop(node)
    for release in RELEASES:
        if os.path.exists(disk_path(state_dir, release)):
            os.unlink(disk_path(state_dir, release))
    os.unlink(state_path)


def run_pod(node, state_dir, uid, qos, command, oom_score_adj, memory_limit=None):
    """Start a pod's container as the kubelet's systemd driver places it; returns the unit name."""
    unit = 'pod-%s.service' % uid
    slice_name = 'kubepods-%s-pod%s.slice' % (qos, uid) if qos != 'guaranteed' else 'kubepods-pod%s.slice' % uid
    properties = ['-p', 'OOMScoreAdjust=%d' % oom_score_adj]
    if memory_limit:
        properties += ['-p', 'MemoryMax=%d' % memory_limit]
    ssh(node, state_dir, 'systemd-run --quiet --unit=%s --slice=%s %s -- %s'
        % (unit, slice_name, ' '.join(properties), command))
    return unit


SWAP_FILE = '/var/swapfile'


def swap_on(node, state_dir, size_mib, path=SWAP_FILE):
    """Give a running guest a swap file (ext4 root: fallocate'd files are valid swap), no reboot: a swap device
    as a node would have one. ``swap_off`` takes it away again; tests that use it leave the guest as they found it."""
    ssh(node, state_dir, 'set -e; fallocate -l %dM %s; chmod 600 %s; mkswap -q %s; swapon %s'
        % (size_mib, path, path, path, path))


def swap_off(node, state_dir, path=SWAP_FILE):
    """Take the swap file away (pages still in it come back into RAM first) and remove it."""
    ssh(node, state_dir, 'swapoff %s 2>/dev/null; rm -f %s' % (path, path), check=False, timeout=600)


def push_module_utils(node, state_dir, remote='/opt/nodealloc'):
    """Copy the staged collection's module_utils (pure Python, no Ansible imports) to ``remote`` on a guest.

    For tests and benchmarks that run the facts module's own code (``_gather.gather``) on the guest
    between their own reads; ``make test`` stages the collection under .build first.
    """
    build = os.path.join(ROOT, '.build')
    relative = 'ansible_collections/nodealloc/kubelet/plugins/module_utils'
    if not os.path.isdir(os.path.join(build, relative)):
        raise RuntimeError('%s is missing: run hack/stage-collection.sh first' % os.path.join(build, relative))
    archive = subprocess.run(['tar', '-C', build, '--exclude=__pycache__', '-cf', '-', relative],
                             check=True, capture_output=True).stdout
    subprocess.run(ssh_command(node, state_dir) + ['rm -rf %s && mkdir -p %s && tar -C %s -xf -' % (remote, remote, remote)],
                   input=archive, check=True, capture_output=True, timeout=120)
    return remote


def run_driver(node, script, timeout=900):
    """Run ``script`` (Python) with the guest's python3 after pushing the module_utils (push_module_utils), and return
    the JSON its last line of output holds; a driver that failed, or one whose ``error`` is set, fails the caller."""
    state_dir = node['state_dir']
    push_module_utils(node, state_dir)
    done = ssh(node, state_dir, "python3 - <<'EOF'\n%s\nEOF" % script, check=False, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError('the driver failed on the guest:\n%s\n%s' % (done.stdout[-4000:], done.stderr[-4000:]))
    run = json.loads(done.stdout.strip().splitlines()[-1])
    if run.get('error') is not None:
        raise AssertionError(run['error'])
    return run


def within_two_percent(measured, made):
    """What issue 47 asks of a measurement against what a test made on a guest."""
    return abs(measured - made) <= 0.02 * made


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('action', choices=['up', 'down'])
    parser.add_argument('--nodes', type=int, default=1)
    parser.add_argument('--cgroup', choices=['v1', 'v2'], default='v2')
    parser.add_argument('--memory-mib', type=int, default=1280)
    parser.add_argument('--release', choices=sorted(RELEASES), default=DEFAULT_RELEASE, help='Debian version')
    parser.add_argument('--state-dir', default='/tmp/nodealloc-vms')
    args = parser.parse_args(argv)
    if args.action == 'up':
        reason = missing()
        if reason:
            print(reason, file=sys.stderr)
            return 1
        guests = [{'name': 'vm%d' % i, 'memory_mib': args.memory_mib, 'cgroup': args.cgroup, 'release': args.release}
                  for i in range(1, args.nodes + 1)]
        inventory, nodes = up(guests, args.state_dir)
        print(inventory)
        print(json.dumps([{k: n[k] for k in ('name', 'port', 'ready_seconds')} for n in nodes]))
    else:
        down(args.state_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
