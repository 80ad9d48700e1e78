"""A pod keeping a large file hot in page cache must not lower the non-pod memory figure (issue 12).

On a cgroup v2 and a cgroup v1 guest (their own kernel and /proc/meminfo, so nothing else on the
machine moves the figures). The PoC's figure, MemTotal - MemAvailable - working_set(kubepods), falls by
about the pod's active page cache: MemAvailable counts that cache as available and the working set
counts it as used. The collection's figure (_memory_accounting) must not. The file is on the guest's
disk (/var/tmp, ext4), not tmpfs, whose pages would be shmem and never count as available. The pod is
tests/helpers/workload.py reading the file three times (the second read moves its pages to the active
list, charged to the pod's cgroup) and every 2 s after that.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from nodes import nodeio, vmnodes

MIB = 1024 * 1024
FILE_MIB = 320
WORKLOAD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'helpers', 'workload.py')
MEASURE = r'''
import json, sys
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
facts = _gather.gather({"sample_seconds": 0.2, "history": False, "kubelet_config_path": "/nonexistent.yaml"})
print(json.dumps(facts["memory"]))
'''


def measure(node):
    return json.loads(nodeio.ssh(node, "python3 - <<'EOF'\n%s\nEOF" % MEASURE).stdout)


@pytest.mark.parametrize('guest', ['facts-v2', 'facts-v1'])
def test_hot_pod_page_cache_does_not_lower_non_pod_memory(vm_guests, guest):
    node = vm_guests[guest]
    vmnodes.push_module_utils(node, node['state_dir'])
    with open(WORKLOAD, encoding='utf-8') as handle:
        nodeio.write_text(node, '/usr/local/bin/workload.py', handle.read())
    # A cold file: written, synced, then every clean page cache on the guest dropped.
    nodeio.ssh(node, 'dd if=/dev/zero of=/var/tmp/hot-file bs=1M count=%d conv=fsync status=none '
               '&& echo 1 > /proc/sys/vm/drop_caches' % FILE_MIB)
    uid = str(uuid.uuid4()).replace('-', '_')
    try:
        before = measure(node)
        unit = vmnodes.run_pod(node, node['state_dir'], uid, 'burstable',
                               '/usr/bin/python3 /usr/local/bin/workload.py --read-file /var/tmp/hot-file', 999)
        nodeio.ssh(node, 'for i in $(seq 900); do journalctl -q -u %s -o cat | grep -q ^ready && exit 0; sleep 0.2; done; '
                   'exit 1' % unit)
        after = measure(node)
    finally:
        nodeio.ssh(node, 'systemctl stop pod-%s.service; rm -f /var/tmp/hot-file' % uid, check=False)

    cache = after['kubepods']['active_file_bytes'] - before['kubepods']['active_file_bytes']
    assert cache >= FILE_MIB * MIB * 3 // 4, 'the pod holds only %d MiB of active page cache' % (cache // MIB)
    poc_drop = before['non_pod_poc_bytes'] - after['non_pod_poc_bytes']
    drop = before['non_pod_bytes'] - after['non_pod_bytes']
    assert poc_drop > cache // 2, 'the PoC figure fell by %d MiB only; the test proves nothing' % (poc_drop // MIB)
    assert drop < cache // 4, ('non-pod memory fell by %d MiB while the pod held %d MiB of hot cache'
                               % (drop // MIB, cache // MIB))
