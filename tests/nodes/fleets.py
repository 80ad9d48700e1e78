"""The test nodes the multi-node tests share, as pytest fixtures (imported by tests/conftest.py).

* ``fleet`` / ``fresh_fleet``: three nspawn nodes (testnodes.py) and the stand-in API server on the
  links; fast, but every node reads the host's /proc/meminfo and /proc/stat.
* ``vm_guests``: a cgroup v2 and a cgroup v1 QEMU guest (vmnodes.py) with their own kernel.
* ``vm_fleet`` / ``fresh_vm_fleet``: three cgroup v2 guests, one of each Debian release (vmnodes.RELEASES: 11, 12,
  13, each with its own python3 and systemd), reporting to a stand-in API server on a loopback port of ours.
* ``vm_release_guests``: those guests by release, for the facts test on the releases the facts guests do not run.
* ``rollout_fleet``: the rollout scenarios run on the nspawn fleet, and on the VM fleet with
  ``NODEALLOC_VM_ROLLOUT=1`` (docs/testing.md, "How long it takes"). Every run rolls out over the VM fleet once, on
  ``fresh_vm_fleet``: a good canary (with a second run at the shipped memory thresholds), then the refused config and
  the dying kubelet as one batch of two (test_rollout_onnode.py).

The session's guests boot by group when the first test that needs the group starts: the facts guests, then (once
they are powered off, tests/conftest.py) the rollout guests. ``make test`` runs the tests on guests in pytest runs of their own beside the nspawn tests
(``--nodes-lane vm-session`` and ``vm-own``, hack/run-tests.sh): the guests' memory (QEMU's, on the host) then moves the host's
/proc/meminfo under the nspawn nodes, which is why their thresholds are NOISE_TOLERANT (booting guests
beside them once made a second run at tighter thresholds see +3 GiB and change).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from nodes import nodeio, testnodes, vmnodes

# Three: a node changed, the node a fault hits, and one after it that must stay untouched (each more node
# costs every scenario a rollout step).
FLEET_SIZE = int(os.environ.get('NODEALLOC_FLEET_SIZE', '3'))
# Every nspawn node reads the host's /proc/meminfo and /proc/stat, which also count the Ansible controller
# running the test (tens of MiB per fork, a CPU burst as each play starts) and whatever else runs on the
# machine: thresholds of 256Mi and 1500m keep that noise from looking like a change. The first run's changes
# are far larger. A 3-s soak keeps these scenarios short.
NOISE_TOLERANT = {'reservations_sample_seconds': 1, 'reservations_health_poll_seconds': 1,
                  'reservations_health_soak_seconds': 3,
                  'reservations_change_threshold_min_bytes': 268435456,
                  # Memory likewise: a least headroom of 1 TiB takes the reservation to the max_reserved_fraction
                  # cap (half the host's MemTotal) on every run, whatever else the machine allocates (another
                  # process allocating and freeing 2 GiB moved a second rollout's figure by +337 MB, past any
                  # threshold these nodes could use). Second-run numbers at the shipped thresholds are asserted on
                  # VM guests, which have their own /proc/meminfo.
                  'reservations_memory_headroom_min_bytes': 1 << 40,
                  # CPU likewise, from the host's /proc/stat: a 1000m least headroom reaches the 50 % cap on these
                  # 2-CPU nodes, so the reserved CPU is the cap after the first run whatever the host is doing.
                  'reservations_cpu_headroom_min_millicores': 1000,
                  'reservations_change_threshold_min_millicores': 1500}
VM_ROLLOUT = os.environ.get('NODEALLOC_VM_ROLLOUT') == '1'
# The rollout scenarios on the VM guests, each a rollout of its own over them, run only with NODEALLOC_VM_ROLLOUT=1.
# Every run has one rollout there, a good canary and then a failing batch (test_rollout_onnode.py), where it had
# three (the happy path, the refused config, the dying kubelet), each some 300-450 CPU seconds under the suite's load.
# One cgroup v2 guest (the default of every current distribution) and one cgroup v1 guest.
GUESTS = [{'name': 'facts-v2', 'cgroup': 'v2', 'memory_mib': 1280},
          {'name': 'facts-v1', 'cgroup': 'v1', 'memory_mib': 1280}]
# The rollout fleet is one guest of each Debian release, oldest first: every rollout scenario on guests then runs
# each release's python3 and systemd, and the facts test runs on the two that are not bookworm
# (tests/vm/test_releases_vm.py), with no guest more to boot. Three releases, three nodes (FLEET_SIZE's reasons).
ROLLOUT_GUESTS = [{'name': 'roll-%d' % index, 'release': release, 'cgroup': 'v2', 'memory_mib': 1024}
                  for index, release in enumerate(sorted(vmnodes.RELEASES, key=int), start=1)]
# Memory at the shipped thresholds, headroom, sample time and polling: these guests have their own kernel and
# /proc/meminfo, so nothing else on the machine moves their memory. Not their CPU: under software emulation a
# guest's /proc/stat has no steal time, and a task running when the host deschedules the guest is charged the
# wait, so the other guests' rollouts and the controller show up as busy time in an idle guest (a second run
# on three guests saw up to 94m of "non-pod" CPU where one guest alone measured 10-47m). Their CPU goes to the
# 50 % cap on every run, as on the nspawn nodes (NOISE_TOLERANT). Only the soak is shortened (the soak
# scenario sets the shipped 30 s itself).
SHORT_WAITS = {'reservations_health_soak_seconds': 3,
               'reservations_cpu_headroom_min_millicores': NOISE_TOLERANT['reservations_cpu_headroom_min_millicores'],
               'reservations_change_threshold_min_millicores':
                   NOISE_TOLERANT['reservations_change_threshold_min_millicores']}


def _can_boot_nodes():
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ('systemd-nspawn', 'debootstrap', 'ssh', 'ip'))


@pytest.fixture(scope='session')
def fleet(tmp_path_factory):
    if not _can_boot_nodes():
        pytest.skip('needs root, systemd-nspawn, debootstrap, ssh and ip (make test installs them)')
    state_dir = str(tmp_path_factory.mktemp('fleet'))
    inventory, nodes = testnodes.up(FLEET_SIZE, state_dir)
    apiserver = None
    try:
        apiserver, kubeconfig = testnodes.start_apiserver(nodes, state_dir)
        yield {'inventory': inventory, 'nodes': nodes, 'state_dir': state_dir, 'kubeconfig': kubeconfig,
               'api_url': 'http://127.0.0.1:%d' % testnodes.API_PORT, 'extra_vars': NOISE_TOLERANT}
    finally:
        if apiserver is not None:
            apiserver.terminate()
            apiserver.wait(timeout=10)
        testnodes.down(state_dir)


@pytest.fixture
def fresh_fleet(fleet):
    nodeio.reset(fleet['nodes'])
    return fleet


class _Boot:
    """The stand-in API server the rollout guests report to, and the session's guests, each group booted when a test
    first needs it: the facts guests (GUESTS) for the facts tests, the rollout guests (ROLLOUT_GUESTS) for the tests
    on each Debian release and the rollout scenarios' VM variants, which run after them (tests/conftest.py). An idle
    guest under software emulation still costs the host about a sixth of a core (its timers, systemd, the stand-in
    kubelet's status updates): booted together, the three rollout guests idled through every facts test."""

    def __init__(self):
        self.state_dir = tempfile.mkdtemp(prefix='nodealloc-vms-')
        self.off = set()
        self.groups = {}  # group name -> its state directory
        self.nodes = []
        self.port = vmnodes.free_port()
        self.apiserver, self.kubeconfig = testnodes.start_apiserver([], self.state_dir, port=self.port,
                                                                    addresses=['127.0.0.1'])
        self.api_url = 'http://127.0.0.1:%d' % self.port

    def boot(self, group, guests):
        """Boot these guests (once per group), each group in a state directory (and SSH key) of its own."""
        if group not in self.groups:
            state_dir = os.path.join(self.state_dir, group)
            self.nodes += vmnodes.up(guests, state_dir, api_port=self.port)[1]
            self.groups[group] = state_dir
        state_dir = self.groups[group]
        names = {guest['name'] for guest in guests}
        return state_dir, [node for node in self.nodes if node['name'] in names]

    def power_off(self, names):
        """Power off the session's guests of these names (vmnodes.stop)."""
        for node in self.nodes:
            if node['name'] in names and node['name'] not in self.off:
                vmnodes.stop(node)
                self.off.add(node['name'])

    def stop(self):
        for state_dir in self.groups.values():
            vmnodes.down(state_dir)
        self.apiserver.terminate()
        self.apiserver.wait(timeout=10)
        shutil.rmtree(self.state_dir, ignore_errors=True)


_BOOT = []


def runs_on_rollout_guests(fleet_param):
    """Whether a test with this rollout_fleet parameter runs on the rollout guests."""
    return fleet_param == 'vm' and VM_ROLLOUT


def start_boot():
    """The session's API server (once); the guests boot by group (_Boot.boot)."""
    if not _BOOT:
        _BOOT.append(_Boot())
    return _BOOT[0]


def stop_boot():
    if _BOOT:
        _BOOT.pop().stop()


def power_off_facts_guests():
    """Before the rollout guests boot (tests/conftest.py, once no test left needs the facts guests): the rollout
    guests then have the host's CPU to themselves."""
    if _BOOT:
        _BOOT[0].power_off({guest['name'] for guest in GUESTS})


@pytest.fixture(scope='session')
def vm_boot():
    reason = vmnodes.missing()
    if reason:
        pytest.skip(reason)
    return start_boot()


@pytest.fixture(scope='session')
def vm_guests(vm_boot):
    names = {guest['name'] for guest in GUESTS}
    assert not names & vm_boot.off, 'the facts guests were powered off before a test needing them (tests/conftest.py)'
    return {node['name']: node for node in vm_boot.boot('facts', GUESTS)[1]}


@pytest.fixture(scope='session')
def vm_fleet(vm_boot):
    """Three v2 guests, one per Debian release, whose stand-in kubelets report to a stand-in API server on a loopback
    port of ours."""
    state_dir, nodes = vm_boot.boot('rollout', ROLLOUT_GUESTS)
    inventory = vmnodes.write_inventory(state_dir, nodes, state_dir + '/id_ed25519', name='rollout-inventory.ini')
    return {'inventory': inventory, 'nodes': nodes, 'state_dir': state_dir, 'kubeconfig': vm_boot.kubeconfig,
            'api_url': vm_boot.api_url, 'extra_vars': SHORT_WAITS}


@pytest.fixture(scope='session')
def vm_release_guests(vm_boot):
    """The rollout guests by Debian release ('11', '12', '13')."""
    return {node['release']: node for node in vm_boot.boot('rollout', ROLLOUT_GUESTS)[1]}


@pytest.fixture
def fresh_vm_fleet(vm_fleet):
    nodeio.reset(vm_fleet['nodes'])
    return vm_fleet


@pytest.fixture(params=['nspawn', 'vm'])
def rollout_fleet(request):
    """A fresh fleet for a rollout scenario: the nspawn nodes, or the cgroup v2 guests (see VM_ROLLOUT)."""
    if request.param == 'vm':
        if not runs_on_rollout_guests('vm'):
            pytest.skip('the rollout scenarios on VM guests run with NODEALLOC_VM_ROLLOUT=1 (docs/testing.md)')
        return request.getfixturevalue('fresh_vm_fleet')
    return request.getfixturevalue('fresh_fleet')
