"""No plugin, option or return value claims to be added in a version after the collection's own (galaxy.yml)."""

from __future__ import annotations

import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(ROOT, 'plugins')
# DOCUMENTATION, RETURN and EXAMPLES are raw string literals at the top of every plugin file.
_BLOCK = re.compile(r"^(DOCUMENTATION|RETURN) = r'''\n(.*?)^'''", re.M | re.S)


def _version(text):
    return tuple(int(part) for part in str(text).split('.'))


def _claims(node, where):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'version_added':
                yield where, value
            else:
                yield from _claims(value, '%s.%s' % (where, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _claims(value, '%s[%d]' % (where, index))


def version_claims():
    for directory, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path) as stream:
                text = stream.read()
            for block, body in _BLOCK.findall(text):
                yield from _claims(yaml.safe_load(body), '%s:%s' % (os.path.relpath(path, ROOT), block))


def test_no_version_added_after_the_collections_version():
    with open(os.path.join(ROOT, 'galaxy.yml')) as stream:
        collection = _version(yaml.safe_load(stream)['version'])
    claims = list(version_claims())
    assert claims  # the walk found the docs, or this test proves nothing
    assert [(where, added) for where, added in claims if _version(added) > collection] == []
