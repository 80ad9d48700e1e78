"""ansible-test sanity's compile and import checks of the node-side code, with every node Python claimed.

The modules and their module_utils run on the node's own python3: Debian 11's 3.9, 12's 3.11, 13's 3.13
(tests/nodes/vmnodes.py RELEASES). ``ansible-test sanity --test compile|import --python X.Y`` needs X.Y on the
controller (``--local``) or a container/VM image it can start (``--docker``, ``--remote``); this machine has
only 3.11, no container runtime and no access to ansible-test's remote instances. So the same two checks run
here with each release's own python3, inside its cached debootstrap tree (chroot, in a mount namespace of the
test's own, so nothing stays mounted): every file of plugins/modules and plugins/module_utils compiled with
warnings as errors, then imported with only ``ansible.module_utils`` beside the collection, as on a node
(tests/helpers/node_python_check.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import ansible

from nodes import testnodes, vmnodes

ROOT = testnodes.ROOT
COLLECTION = os.path.join(ROOT, '.build', 'ansible_collections', 'nodealloc', 'kubelet')
CHECK = os.path.join(ROOT, 'tests', 'helpers', 'node_python_check.py')
NODE_SIDE = ('plugins/module_utils', 'plugins/modules')


def _node_side_files():
    """Every node-side file below the two directories, the domain packages' files included (``_node/_procfs.py``)."""
    files = []
    for kind in NODE_SIDE:
        top = os.path.join(COLLECTION, kind)
        for directory, _subdirectories, names in os.walk(top):
            below = os.path.relpath(directory, top)
            files.extend('%s/%s' % (kind, name if below == '.' else '%s/%s' % (below, name))
                         for name in names if name.endswith('.py') and name != '__init__.py')
    return sorted(files)


def _stage(target):
    """The collection's node-side code and Ansible's module_utils, as a node gets them, under ``target``."""
    for kind in NODE_SIDE:
        shutil.copytree(os.path.join(COLLECTION, kind), os.path.join(target, 'ansible_collections/nodealloc/kubelet', kind),
                        ignore=shutil.ignore_patterns('__pycache__'))
    # Only module_utils of ansible: the rest (and its __init__) is controller code a node never sees.
    shutil.copytree(os.path.join(os.path.dirname(ansible.__file__), 'module_utils'),
                    os.path.join(target, 'ansible', 'module_utils'), ignore=shutil.ignore_patterns('__pycache__'))
    with open(os.path.join(target, 'ansible', '__init__.py'), 'w', encoding='utf-8'):
        pass
    shutil.copy(CHECK, os.path.join(target, 'node_python_check.py'))


@pytest.mark.parametrize('release', sorted(vmnodes.RELEASES, key=int))
def test_node_side_code_compiles_and_imports_with_the_releases_python3(release, tmp_path):
    if os.geteuid() != 0 or not all(shutil.which(tool) for tool in ('debootstrap', 'unshare', 'chroot')):
        pytest.skip('needs root, debootstrap, unshare and chroot (make test installs them)')
    if not os.path.isdir(COLLECTION):
        pytest.skip('the collection is not staged: run hack/stage-collection.sh (make test does)')
    tree = testnodes.ensure_image(vmnodes.RELEASES[release]['suite'])
    staged = tmp_path / 'staged'
    _stage(str(staged))
    # Bound over the tree's empty /mnt in a private mount namespace: the shared cached tree is never written, and
    # the mount goes with the namespace.
    script = 'mount --bind "$1" "$2/mnt" && exec chroot "$2" /usr/bin/python3 -I /mnt/node_python_check.py /mnt'
    result = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', str(staged), tree],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report['python'] == vmnodes.RELEASES[release]['python']
    assert report['errors'] == {}, '\n'.join('%s: %s' % item for item in sorted(report['errors'].items()))
    files = _node_side_files()
    assert sorted(report['compiled']) == files and sorted(report['imported']) == files
