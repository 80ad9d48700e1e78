# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Which control-plane components one static pod manifest runs: ``kube-apiserver`` and ``etcd``.

A file in the kubelet's static pod directory is a Pod or a PodList, YAML or JSON (pkg/kubelet/config/common.go
``tryDecodeSinglePod``, then ``tryDecodePodList``: sigs.k8s.io/yaml, then the v1 decoder, which refuses an object
without ``kind``). It is decoded as the kubelet config is (_kubelet/_config_file.parse_document: JSON with the
standard library, YAML with PyYAML, nesting and size bounded before anything walks it), then each container of
``spec.containers`` is looked at:

* its ``command``'s first word, the program it runs (``kube-apiserver`` in kubeadm's manifests, ``etcd`` in kubeadm's
  and RKE2's; a path such as ``/usr/local/bin/etcd`` counts by its last part);
* without a command, its image's repository name, the last path part before the tag or digest
  (``registry.k8s.io/kube-apiserver:v1.31.0``, ``registry.k8s.io/etcd:3.5.15-0``): the image's own entrypoint runs.

Labels (kubeadm's ``component: kube-apiserver``, ``tier: control-plane``) are not read: they name a pod, they do
not run anything. Init containers finish before the pod runs and are not looked at. A command that wraps the
program (``sh -c "exec etcd ..."``) is not recognised: the component is then not found, said nowhere but here.

Anything that is not such a document fails fast with ``ParseError`` naming the file (the kubelet skips such a file
and logs it; the caller says it was not read).
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError, ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_file

# The components whose static pods make a node a control-plane node (docs/arithmetic.md "Control-plane nodes"):
# the API server and etcd. The controller manager and the scheduler run beside them but are not looked for alone:
# a node running only those is unusual and holds no data the floor protects.
CONTROL_PLANE_COMPONENTS = ('etcd', 'kube-apiserver')
# A kubeadm manifest is 3-5 KiB; a file past this is not a manifest a node runs, and is not parsed.
MAX_MANIFEST_BYTES = 1 << 20
POD_KINDS = ('Pod', 'PodList')


def _program(container, where):
    """The container's program: its command's first word's last path part, else its image's repository name."""
    command = container.get('command')
    if command is not None:
        if not isinstance(command, list) or not all(isinstance(word, str) for word in command):
            raise ParseError('%s: command is not a list of strings' % where)
        if command:
            return command[0].rstrip('/').rsplit('/', 1)[-1]
    image = container.get('image')
    if image is None:
        return None
    if not isinstance(image, str):
        raise ParseError('%s: image is not a string' % where)
    name = image.split('@', 1)[0]
    last = name.rsplit('/', 1)[-1]
    # A tag follows the last ':' of the last path part (a ':' before a '/' is a registry's port).
    return last.split(':', 1)[0]


def _pods(document, path):
    kind = document.get('kind')
    if kind not in POD_KINDS:
        raise ParseError('%s: kind is %r, not a static pod (Pod or PodList)' % (path, kind))
    if kind == 'Pod':
        return [document]
    items = document.get('items')
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ParseError('%s: items is not a list of pods' % path)
    return items


def _containers(pod, where):
    spec = pod.get('spec')
    if spec is None:
        return []
    if not isinstance(spec, dict):
        raise ParseError('%s: spec is not a mapping' % where)
    containers = spec.get('containers')
    if containers is None:
        return []
    if not isinstance(containers, list) or not all(isinstance(item, dict) for item in containers):
        raise ParseError('%s: spec.containers is not a list of containers' % where)
    return containers


def control_plane_components(text, path):
    """The CONTROL_PLANE_COMPONENTS (sorted, each once) the manifest ``text`` (str) at ``path`` runs; [] when none.

    Raises ``ParseError`` when the text is not a Pod or PodList in YAML or JSON, and ``MissingLibraryError`` for a
    YAML manifest on a node without PyYAML."""
    if len(text) > MAX_MANIFEST_BYTES:
        raise ParseError('%s: %d characters, more than a manifest holds (%d): not read'
                         % (path, len(text), MAX_MANIFEST_BYTES))
    try:
        document = _config_file.parse_document(text, path)[0]
    except ConfigError as exc:
        raise ParseError(str(exc))
    found = set()
    for index, pod in enumerate(_pods(document, path)):
        where = path if document.get('kind') == 'Pod' else '%s items[%d]' % (path, index)
        for number, container in enumerate(_containers(pod, where)):
            program = _program(container, '%s spec.containers[%d]' % (where, number))
            if program in CONTROL_PLANE_COMPONENTS:
                found.add(program)
    return sorted(found)
