# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Whether this node is a control-plane node: the kubelet's static pods run the API server or etcd.

The evidence is the kubelet's static pod directory, the one it runs pods from without the API server: its
``--pod-manifest-path`` flag, else its config's ``staticPodPath`` (empty or unset: the kubelet runs no static pod,
KubeletConfiguration's default), else, where no kubelet config was found, kubeadm's ``/etc/kubernetes/manifests``
(cmd/kubeadm/app/constants ``KubernetesDir`` + ``ManifestsSubDirName``). A manifest there that runs
``kube-apiserver`` or ``etcd`` (_static_pod_manifest) makes the node a control-plane node.

Why the manifests and not the Node's ``node-role.kubernetes.io/control-plane`` label: the label says what someone
called the node (kubeadm sets it at init and join; a label left on a node that no longer runs etcd, or missing on a
node some installer set up, says nothing about what runs there), while the manifests are what the kubelet runs
(the static pods the floor protects). They are root's files on the node, read with the same trust as the kubelet
config, and the facts module reads them without the API server (the role reads the Node only after a restart).

The directory is read as the kubelet reads it (pkg/kubelet/config/file.go ``extractFromDir``: every name not starting
with '.', no recursion into directories), with root's rules for a file it trusts (_safe_open): the directory
opened with ``O_DIRECTORY | O_NOFOLLOW`` and root's alone, each file opened in it with ``O_NOFOLLOW`` and checked with
``fstat`` (a regular file, root's, written by nobody else) before a byte is read. A manifest refused or not parsed is
named in ``problems`` and does not count; a node is a control-plane node only on a manifest that was read.
"""

from __future__ import annotations

import os
import stat as stat_module

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process, _static_pod_manifest

KUBEADM_STATIC_POD_PATH = '/etc/kubernetes/manifests'
# A static pod directory holds a handful of manifests (kubeadm: four); more names than this are not all read.
MAX_MANIFESTS = 64


def static_pod_path(kubelet_argv, config):
    """(directory or None, where it came from) for the kubelet's static pods.

    ``config``: the kubelet's effective config (a dict), or None when no config was found. The flag wins over the
    config as in the kubelet; an empty path means the kubelet runs no static pod."""
    flags = _kubelet_process.flag_values(kubelet_argv or [])
    if '--pod-manifest-path' in flags:
        return flags['--pod-manifest-path'] or None, 'the kubelet flag --pod-manifest-path'
    if config is not None:
        path = config.get('staticPodPath')
        return (path if isinstance(path, str) and path else None), "the kubelet config's staticPodPath"
    return KUBEADM_STATIC_POD_PATH, "kubeadm's default (no kubelet config found)"


def _read_manifest(dir_fd, name, path):
    fd = _safe_open.open_in(dir_fd, name, os.O_RDONLY, path=path)
    try:
        data = os.read(fd, _static_pod_manifest.MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _static_pod_manifest.MAX_MANIFEST_BYTES:
        raise NodeallocError('%s: more than %d bytes, not a manifest: not read' % (path, _static_pod_manifest.MAX_MANIFEST_BYTES))
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        raise NodeallocError('%s: not UTF-8 text' % path)
    return _static_pod_manifest.control_plane_components(text, path)


def _manifests(directory, problems):
    """{file name: components} of the manifests in ``directory`` that could be read; problems appended."""
    dir_fd = _safe_open.open_directory(directory)
    try:
        names = sorted(name for name in os.listdir(dir_fd) if not name.startswith('.'))
        if len(names) > MAX_MANIFESTS:
            problems.append('%s: %d names, only the first %d read' % (directory, len(names), MAX_MANIFESTS))
        found = {}
        for name in names[:MAX_MANIFESTS]:
            path = os.path.join(directory, name)
            try:
                if stat_module.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    continue  # the kubelet does not recurse either
                found[name] = _read_manifest(dir_fd, name, path)
            except FileNotFoundError:
                continue  # removed since it was listed
            except (OSError, NodeallocError) as exc:
                problems.append('%s not read: %s' % (path, exc))
        return found
    finally:
        os.close(dir_fd)


def detect(kubelet_argv, config):
    """{'detected': bool, 'why': sentence, 'components': [...], 'static_pod_path', 'path_from', 'manifests':
    {file: [components]}, 'problems': [...]}: whether the node runs the API server or etcd as static pods."""
    directory, path_from = static_pod_path(kubelet_argv, config)
    result = {'detected': False, 'components': [], 'static_pod_path': directory, 'path_from': path_from,
              'manifests': {}, 'problems': []}
    if directory is None:
        result['why'] = 'the kubelet runs no static pods (%s is empty or unset): not a control-plane node' % path_from
        return result
    try:
        result['manifests'] = _manifests(directory, result['problems'])
    except FileNotFoundError:
        result['why'] = 'no static pod directory %s (from %s): not a control-plane node' % (directory, path_from)
        return result
    except (OSError, NodeallocError) as exc:
        result['problems'].append('%s not read: %s' % (directory, exc))
        result['why'] = ('the static pod directory %s (from %s) was not read: not known to be a control-plane node'
                         % (directory, path_from))
        return result
    runs = {component: sorted(name for name, found in result['manifests'].items() if component in found)
            for component in _static_pod_manifest.CONTROL_PLANE_COMPONENTS}
    result['components'] = sorted(component for component, names in runs.items() if names)
    result['detected'] = bool(result['components'])
    if result['detected']:
        result['why'] = 'the static pods in %s (from %s) run %s' % (directory, path_from, ' and '.join(
            '%s (%s)' % (component, ', '.join(runs[component])) for component in result['components']))
    else:
        result['why'] = ('no static pod in %s (from %s) runs %s: not a control-plane node'
                         % (directory, path_from, ' or '.join(_static_pod_manifest.CONTROL_PLANE_COMPONENTS)))
    return result
