# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What the node spends of the kubelet's filesystem outside its pods, and the image filesystem when it is separate.

The kubelet's ephemeral-storage is the filesystem holding its root dir (``--root-dir``, /var/lib/kubelet by default:
cmd/kubelet/app/options/options.go ``defaultRootDir``); capacity and available as statfs gives them
(_disk_walk.filesystem, what cAdvisor reports). On it, outside the pods:

* the kubelet's root dir less ``pods/`` (``pods/<uid>``: each pod's volumes and its emptyDirs, the pods' own use):
  the kubelet's checkpoints, plugins, device plugins, certificates;
* the log dir (/var/log) less ``pods/`` (``/var/log/pods``: the containers' logs, counted against their pods by the
  kubelet), when it is on the same filesystem: journald's files (``journal/``, also given apart), syslog, the
  runtime's and the kubelet's own logs. On another filesystem it takes nothing from the kubelet's and is not counted.

The image filesystem is containerd's root (/var/lib/containerd, or the ``root`` its config names,
_containerd_config): when it is a filesystem of its own (another ``st_dev``), the kubelet calls it imagefs and its
``imagefs.available`` threshold applies to it; it is measured with statfs. When it shares the kubelet's filesystem its
use is part of that filesystem's ``used_bytes`` and is not counted as non-pod use: image layers are the kubelet's
image garbage collector's to keep in bounds (imageGCHighThresholdPercent), and the containers' writable layers are
their pods'.

Directory use is counted in blocks, as du and cAdvisor's GetDirUsage do (_disk_walk.usage: hard links once, no link
followed, no mount crossed, bounded). Pure: every path is a parameter, so a test measures a tree of its own.
"""

from __future__ import annotations

import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _disk_walk

DEFAULT_KUBELET_ROOT_DIR = '/var/lib/kubelet'
DEFAULT_LOG_DIR = '/var/log'
# /var/lib/kubelet/pods/<uid> and /var/log/pods/<namespace>_<name>_<uid>: the pods' own (kubelet_pods.go
# getPodDir, pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory).
POD_DIR = 'pods'
JOURNAL_DIR = 'journal'
_WALK_FIELDS = ('entries', 'mounts_not_entered', 'vanished', 'complete', 'stopped')


def _opened(path, what, problems):
    try:
        return _disk_walk.open_path(path)
    except FileNotFoundError:
        # The common case on a machine without a kubelet or runtime: said plainly, not as an errno.
        problems.append('%s %s does not exist' % (what, path))
        return None
    except (OSError, _disk_walk.UnsafeDirectoryError) as exc:
        problems.append('%s %s not measured: %s' % (what, path, exc))
        return None


def _walked(walk, path, non_pod_bytes):
    out = {'path': path, 'non_pod_bytes': non_pod_bytes}
    out.update((key, walk[key]) for key in _WALK_FIELDS)
    return out


def _logs(log_dir, device, limits, clock, problems):
    fd = _opened(log_dir, 'the log dir', problems)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_dev != device:
            return {'path': log_dir, 'same_filesystem': False, 'non_pod_bytes': 0, 'journal_bytes': None,
                    'complete': True, 'stopped': None}
        walk = _disk_walk.usage(fd, skip=(POD_DIR,), parts=(JOURNAL_DIR,), limits=limits, clock=clock)
    finally:
        os.close(fd)
    out = _walked(walk, log_dir, walk['bytes'])
    out.update(same_filesystem=True, journal_bytes=walk['parts_bytes'].get(JOURNAL_DIR, 0))
    return out


def _image_filesystem(runtime_root, device, problems):
    if runtime_root is None:
        return None
    fd = _opened(runtime_root, "the container runtime's root", problems)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_dev == device:
            return {'path': runtime_root, 'separate': False}
        found = _disk_walk.filesystem(fd)
    finally:
        os.close(fd)
    found.pop('device')
    return dict(found, path=runtime_root, separate=True)


def measure(kubelet_root_dir=DEFAULT_KUBELET_ROOT_DIR, log_dir=DEFAULT_LOG_DIR, runtime_root=None,
            limits=_disk_walk.DEFAULT_LIMITS, clock=time.monotonic):
    """The kubelet's filesystem, its non-pod use and the image filesystem (``runtime_root``: containerd's root; None:
    not measured).

    Returns {filesystem: {path, capacity_bytes, available_bytes, free_bytes, used_bytes} or None, kubelet_root_dir:
    {path, non_pod_bytes, entries, complete, stopped, ...} or None, logs: {..., same_filesystem, journal_bytes} or
    None, image_filesystem: {path, separate, and when separate its statfs figures} or None, non_pod_bytes (the sum on
    the kubelet's filesystem; None when its root dir could not be measured), complete (no walk stopped at a limit:
    otherwise non_pod_bytes is a lower bound), problems}.
    """
    problems = []
    result = {'filesystem': None, 'kubelet_root_dir': None, 'logs': None, 'image_filesystem': None,
              'non_pod_bytes': None, 'complete': False, 'problems': problems}
    fd = _opened(kubelet_root_dir, "the kubelet's root dir", problems)
    if fd is None:
        return result
    try:
        found = _disk_walk.filesystem(fd)
        walk = _disk_walk.usage(fd, skip=(POD_DIR,), limits=limits, clock=clock)
    finally:
        os.close(fd)
    device = found.pop('device')
    result['filesystem'] = dict(found, path=kubelet_root_dir)
    result['kubelet_root_dir'] = _walked(walk, kubelet_root_dir, walk['bytes'])
    result['logs'] = _logs(log_dir, device, limits, clock, problems)
    result['image_filesystem'] = _image_filesystem(runtime_root, device, problems)
    logs_bytes = result['logs']['non_pod_bytes'] if result['logs'] else 0
    result['non_pod_bytes'] = walk['bytes'] + logs_bytes
    result['complete'] = walk['complete'] and (result['logs'] or {}).get('complete', True)
    for part in (result['kubelet_root_dir'], result['logs']):
        if part and not part['complete']:
            problems.append('%s: the walk stopped at a limit (%s): its non-pod use is a lower bound'
                            % (part['path'], part['stopped']))
    return result
