"""One lock for changing the host's real cgroup tree and for measuring the host while it changes.

The real-cgroup tests (tests/helpers/cgroups_v1.py) make and remove kubepods.slice and friends on this machine, one
controller at a time, while the controller-matrix lanes (noxfile.py) run recommend/apply --check on localhost beside
the main line. A lane that measured between the memory group's removal and the cpuacct group's saw half a kubepods
(full run of 2026-11-26: "cpuacct.usage: expected a readable file"). Under /var/cache/nodealloc, which the Debian 13
chroot of the newer lanes (hack/matrix-chroot.sh) shares with the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

PATH = '/var/cache/nodealloc/host-cgroups.lock'


@contextlib.contextmanager
def held():
    os.makedirs(os.path.dirname(PATH), exist_ok=True)
    with open(PATH, 'a', encoding='utf-8') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
