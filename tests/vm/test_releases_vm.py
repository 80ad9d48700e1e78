"""The node side on every Debian release the collection claims: the facts test and one rollout on each.

The bookworm guests (Debian 12) run the whole VM suite; one cgroup v2 guest each of Debian 11 (bullseye:
Python 3.9, systemd 247) and Debian 13 (trixie: Python 3.13, systemd 257) boots beside them
(tests/nodes/fleets.py RELEASE_GUESTS, vmnodes.RELEASES), and runs:

* the facts test of tests/vm/test_facts_vm.py, unchanged: the module's measuring code on that release's python3,
  its figures bracketed by the kernel's own reads, the kubelet and runtime in units that release's systemd made;
* the rollout scenario's happy path with the two as its fleet (each node changed once, in order, its kubepods
  limit and Node allocatable following; a second run changes nothing) through the role's modules and the
  sampler on each release's python3 and systemd, and the sampler's run and metrics on each.

The guest is first checked to run what its release ships, so a tree built from the wrong suite cannot pass for it.
"""

from __future__ import annotations

import pytest

from nodes import nodeio, vmnodes
from scenarios import test_rollout
from vm import test_facts_vm

OTHER_RELEASES = sorted((release for release in vmnodes.RELEASES if release != vmnodes.DEFAULT_RELEASE), key=int)


def check_release(node):
    """The guest runs its release's userspace: /etc/debian_version, its python3 and systemd as PID 1."""
    wanted = vmnodes.RELEASES[node['release']]
    shown = nodeio.ssh(node, 'cut -d. -f1 /etc/debian_version; '
                             'python3 -c \'import sys; print("%d.%d" % sys.version_info[:2])\'; '
                             "systemctl --version | awk 'NR == 1 {print $2}'; cat /proc/1/comm").stdout.split()
    assert shown == [node['release'], wanted['python'], wanted['systemd'], 'systemd'], (node['name'], shown)


@pytest.mark.parametrize('release', OTHER_RELEASES)
def test_facts_on_each_debian_release(vm_release_guests, release):
    node = vm_release_guests[release]
    check_release(node)
    test_facts_vm.check_facts(node)


def test_rollout_happy_path_on_one_node_of_each_debian_release(fresh_vm_release_fleet):
    fleet = fresh_vm_release_fleet
    assert [node['release'] for node in fleet['nodes']] == OTHER_RELEASES
    for node in fleet['nodes']:
        check_release(node)
    test_rollout.test_happy_path_changes_every_node_once_in_order_and_a_second_run_changes_nothing(fleet)
    # The scenario checks the sampler on its first node; it runs on each release's python3 and systemd.
    for node in fleet['nodes'][1:]:
        test_rollout.check_the_sampler_runs_and_writes_metrics_promtool_accepts(node)
