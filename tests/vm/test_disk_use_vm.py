"""What the node spends of its disks outside the pods, measured on the cgroup v2 guest against what the test made
(issue 47: "megabytes of logs and images ... match what the test made within 2 %").

One script on the guest (DRIVER) runs the facts module's own code (``_gather.gather``, as tests/vm/test_facts_vm.py
does) before and after it writes, with random bytes flushed to the disk (so every block is allocated):

* outside the pods, on the kubelet's filesystem (the guest's ext4 root): 40 MiB under the kubelet's root dir (a
  plugin's or checkpoint's files) and 24 MiB of a log under /var/log;
* the pods' own, which must not count: 32 MiB in a pod's emptyDir (/var/lib/kubelet/pods/<uid>/volumes) and 16 MiB
  of a container's log (/var/log/pods/...);
* 48 MiB of image layers on a separate image filesystem: a tmpfs mounted at containerd's default root
  (/var/lib/containerd) for the run, which the kubelet would call imagefs.

journald writes beside the test (its files grow in 8 MiB steps, more than 2 % of what is made): the measurement gives
the journal apart (``logs.journal_bytes``), and the comparison leaves its growth out. Everything made is removed
and the tmpfs unmounted afterwards.
"""

from __future__ import annotations

import json

import pytest

from nodes import vmnodes

MIB = 1024 * 1024
MADE = {'kubelet_root_dir': 40 * MIB, 'log': 24 * MIB, 'pod_volume': 32 * MIB, 'pod_log': 16 * MIB,
        'image_layers': 48 * MIB}
PATHS = {'kubelet_root_dir': '/var/lib/kubelet/plugins/nodealloc-test/state.bin',
         'log': '/var/log/nodealloc-test.log',
         'pod_volume': '/var/lib/kubelet/pods/0a1b2c3d-nodealloc-test/volumes/kubernetes.io~empty-dir/cache/data.bin',
         'pod_log': '/var/log/pods/default_nodealloc-test_0a1b2c3d/app/0.log',
         'image_layers': '/var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/nodealloc-test'}
IMAGE_ROOT = '/var/lib/containerd'

DRIVER = r'''
import json, os, subprocess, sys, traceback
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_specs

MADE = MADE_JSON
PATHS = PATHS_JSON
IMAGE_ROOT = "IMAGE_ROOT_TEXT"
CHUNK = 1 << 20


def measured():
    options = {name: spec.get("default") for name, spec in _option_specs.argument_spec(_option_specs.FACTS).items()}
    options.update(sample_seconds=0, history=False, _check_mode=True)
    result = _gather.gather(options)
    disk = result["ephemeral_storage"]
    logs = disk.get("logs") or {}
    image = disk.get("image_filesystem") or {}
    return {"non_pod_bytes": disk["non_pod_bytes"], "journal_bytes": logs.get("journal_bytes") or 0,
            "complete": disk["complete"], "problems": disk["problems"],
            "image_separate": image.get("separate"), "image_used_bytes": image.get("used_bytes")}


def write(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        for _ in range(size // CHUNK):
            handle.write(os.urandom(CHUNK))
        handle.flush()
        os.fsync(handle.fileno())


out = {"error": None}
mounted = False
try:
    os.makedirs(IMAGE_ROOT, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", IMAGE_ROOT], check=True)
    mounted = True
    out["before"] = measured()
    for name, size in MADE.items():
        write(PATHS[name], size)
    subprocess.run(["sync"], check=True)
    out["after"] = measured()
except Exception:
    out["error"] = traceback.format_exc()
finally:
    for path in PATHS.values():
        if os.path.exists(path) and not path.startswith(IMAGE_ROOT + "/"):
            os.unlink(path)
    for top in ("/var/lib/kubelet/plugins/nodealloc-test", "/var/lib/kubelet/pods/0a1b2c3d-nodealloc-test",
                "/var/log/pods/default_nodealloc-test_0a1b2c3d"):
        subprocess.run(["rm", "-rf", "--one-file-system", top], check=False)
    if mounted:
        subprocess.run(["umount", IMAGE_ROOT], check=True)
print(json.dumps(out))
'''


def _script():
    return (DRIVER.replace('MADE_JSON', json.dumps(MADE)).replace('PATHS_JSON', json.dumps(PATHS))
            .replace('IMAGE_ROOT_TEXT', IMAGE_ROOT))


@pytest.fixture(scope='module')
def disk_run(vm_guests):
    """The driver's answer on the cgroup v2 facts guest."""
    return vmnodes.run_driver(vm_guests['facts-v2'], _script())


def test_non_pod_use_of_the_kubelets_filesystem_grows_by_what_was_made_outside_the_pods(disk_run):
    before, after = disk_run['before'], disk_run['after']
    assert before['complete'] and after['complete'], (before['problems'], after['problems'])
    journal_growth = after['journal_bytes'] - before['journal_bytes']
    grown = after['non_pod_bytes'] - before['non_pod_bytes'] - journal_growth
    made = MADE['kubelet_root_dir'] + MADE['log']
    # The pods' 48 MiB would take it to 112 MiB: far outside 2 %.
    assert vmnodes.within_two_percent(grown, made), (grown / MIB, made / MIB, journal_growth / MIB)


def test_image_layers_on_a_separate_image_filesystem_are_measured_there(disk_run):
    before, after = disk_run['before'], disk_run['after']
    assert before['image_separate'] is True and after['image_separate'] is True
    grown = after['image_used_bytes'] - before['image_used_bytes']
    assert vmnodes.within_two_percent(grown, MADE['image_layers']), (grown / MIB, MADE['image_layers'] / MIB)
