"""_containerd_config.root: containerd's top-level root, from config files as containerd's own docs write them."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _containerd_config

# The head of `containerd config default` (containerd 1.7, version 2 config), root moved to a data disk.
V2 = '''version = 2
root = "/data/containerd"
state = "/run/containerd"
temp = ""

[grpc]
  address = "/run/containerd/containerd.sock"
'''


@pytest.mark.parametrize('text,expected', [
    (V2, '/data/containerd'),
    ('version = 3\nroot = \'/mnt/ctr\'  # data disk\n', '/mnt/ctr'),
    ('version = 2\n# root = "/commented"\n', '/var/lib/containerd'),
    ('', '/var/lib/containerd'),
    # A root inside a table is another setting (a plugin's), not containerd's.
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  root = "/elsewhere"\n', '/var/lib/containerd'),
    ('rootless = true\n', '/var/lib/containerd'),
])
def test_root(text, expected):
    assert _containerd_config.root(text) == expected


@pytest.mark.parametrize('text', [
    'root = /var/lib/containerd\n', 'root = "relative/dir"\n', 'root = "/a\\u0062"\n', 'root = 1\n',
    'root = """/multi"""\n', 'root = "/a"\nroot = "/b"\n', 'root = "/a" trailing\n',
])
def test_a_root_not_in_the_plain_form_fails_fast(text):
    with pytest.raises(ParseError):
        _containerd_config.root(text)


def test_a_huge_config_is_not_read():
    with pytest.raises(ParseError, match='more than a config holds'):
        _containerd_config.root('#' * (_containerd_config.MAX_CONFIG_BYTES + 1))
