"""A pod keeping a large file hot in page cache must not lower the non-pod memory figure (real kernel, cgroup v1).

The PoC's figure, MemTotal - MemAvailable - working_set(kubepods), falls by about the
pod's active page cache, because MemAvailable counts that cache as available and the
working set counts it as used. The collection's figure (_memory_accounting) must not.
The file lives on a disk-backed path (/var/tmp), not tmpfs, whose pages would be shmem
and never count as available. Other work on a busy machine moves both figures by
tens of MiB between readings, so the comparison is against the amount of cache the
pod holds (at least 400 MiB of a 512 MiB file): the PoC's figure must fall by more
than half of it, the collection's by less than a quarter.
"""

from __future__ import annotations

import os
import uuid

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts

MIB = 1024 * 1024
FILE_MIB = 512


def _cold_file(directory):
    """A 512 MiB file on disk whose pages are not in the cache (so the pod's reads charge them to the pod)."""
    path = os.path.join(directory, 'nodealloc-hot-file-%d' % os.getpid())
    chunk = os.urandom(MIB)
    with open(path, 'wb') as handle:
        for _index in range(FILE_MIB):
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return path


def _measure(tmp_path):
    facts = _facts.gather({'sample_seconds': 0.2, 'history': False,
                           'kubelet_config_path': str(tmp_path / 'none.yaml')})
    return facts['memory']


def test_hot_pod_page_cache_does_not_lower_non_pod_memory(cgroup_tree, tmp_path):
    uid = str(uuid.uuid4()).replace('-', '_')
    pod = 'kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice' % uid
    cgroup_tree.make(pod)
    path = _cold_file('/var/tmp')
    try:
        before = _measure(tmp_path)
        cgroup_tree.spawn(pod, alloc_mib=0, extra_args=['--read-file', path])
        after = _measure(tmp_path)
    finally:
        os.unlink(path)

    cache = after['kubepods']['active_file_bytes'] - before['kubepods']['active_file_bytes']
    assert cache >= 400 * MIB, 'the pod holds only %d MiB of active page cache' % (cache // MIB)
    poc_drop = before['non_pod_poc_bytes'] - after['non_pod_poc_bytes']
    drop = before['non_pod_bytes'] - after['non_pod_bytes']
    assert poc_drop > cache // 2, 'the PoC figure fell by %d MiB only; the test proves nothing' % (poc_drop // MIB)
    assert drop < cache // 4, ('non-pod memory fell by %d MiB while the pod held %d MiB of hot cache'
                               % (drop // MIB, cache // MIB))
