"""The node side on every Debian release the collection claims (tests/nodes/vmnodes.py RELEASES).

The rollout guests are one cgroup v2 guest each of Debian 11 (bullseye: Python 3.9, systemd 247), 12 (bookworm:
3.11, 252) and 13 (trixie: 3.13, 257), oldest first (tests/nodes/fleets.py ROLLOUT_GUESTS). So the rollout on
guests (tests/scenarios/test_rollout_onnode.py: Debian 11 the good canary, Debian 12 the refused config, Debian 13
the dying kubelet; each rollout scenario of test_rollout.py on its own with NODEALLOC_VM_ROLLOUT=1) runs the role's
modules with each release's python3 under each release's systemd. Here, before it:

* each guest is checked to run what its release ships, so a tree built from the wrong suite cannot pass for it;
* the facts test of tests/vm/test_facts_vm.py, unchanged, runs on the Debian 11 and 13 guests (the facts guests
  run bookworm): the module's measuring code on that release's python3, its figures bracketed by the kernel's
  own reads, the kubelet and runtime in units that release's systemd made.
"""

from __future__ import annotations

import pytest

from nodes import nodeio, vmnodes
from vm import test_facts_vm

RELEASES = sorted(vmnodes.RELEASES, key=int)


@pytest.mark.parametrize('release', RELEASES)
def test_guest_runs_its_debian_releases_python_and_systemd(vm_release_guests, release):
    node = vm_release_guests[release]
    wanted = vmnodes.RELEASES[release]
    shown = nodeio.ssh(node, 'cut -d. -f1 /etc/debian_version; '
                             'python3 -c \'import sys; print("%d.%d" % sys.version_info[:2])\'; '
                             "systemctl --version | awk 'NR == 1 {print $2}'; cat /proc/1/comm").stdout.split()
    assert shown == [release, wanted['python'], wanted['systemd'], 'systemd'], (node['name'], shown)


@pytest.mark.parametrize('release', [release for release in RELEASES if release != vmnodes.DEFAULT_RELEASE])
def test_facts_on_each_debian_release(vm_release_guests, release):
    test_facts_vm.check_facts(vm_release_guests[release])
