# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Where containerd keeps its images and containers: the top-level ``root`` of its config file.

containerd's config (``/etc/containerd/config.toml``, TOML; containerd cmd/containerd/server/config ``Config.Root``,
default ``/var/lib/containerd`` from defaults.DefaultRootDir on Linux) names its root as a top-level key, before any
table. Only that key is read: the lines before the first table header, comments and blank lines skipped. The value
must be a TOML basic string without escapes (``"..."``) or a literal string (``'...'``) holding an absolute path; any
other form of ``root`` (an escape, a number, a multi-line string, a second ``root``) fails fast with ``ParseError``
rather than guess a directory to measure.
"""

from __future__ import annotations

import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ParseError

DEFAULT_ROOT = '/var/lib/containerd'
CONFIG_PATH = '/etc/containerd/config.toml'
# A config file is a few KiB; a larger one is not read (one bound for a file from the node).
MAX_CONFIG_BYTES = 1 << 20

_ROOT_KEY = re.compile(r'^[ \t]*(?:root|"root"|\'root\')[ \t]*=')
_ROOT_VALUE = re.compile(r'^[ \t]*(?:root|"root"|\'root\')[ \t]*=[ \t]*(?:"([^"\\\x00-\x1f\x7f]*)"|\'([^\'\x00-\x1f\x7f]*)\')'
                         r'[ \t]*(?:#.*)?$')
_TABLE = re.compile(r'^[ \t]*\[')


def root(text):
    """containerd's root from the config's ``text`` (str): the top-level ``root``, else ``DEFAULT_ROOT``."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ParseError('containerd config: %d characters, more than a config holds (%d): not read'
                         % (len(text), MAX_CONFIG_BYTES))
    found = None
    # TOML's newline is LF or CRLF only: a character str.splitlines also breaks on stays inside its line.
    for number, line in enumerate(text.split('\n'), 1):
        line = line[:-1] if line.endswith('\r') else line
        if _TABLE.match(line):
            break
        if not _ROOT_KEY.match(line):
            continue
        match = _ROOT_VALUE.match(line)
        if not match:
            raise ParseError('containerd config line %d: root is not a plain quoted path' % number)
        if found is not None:
            raise ParseError('containerd config line %d: root set twice (TOML refuses a key defined twice)' % number)
        found = match.group(1) if match.group(1) is not None else match.group(2)
        if not found.startswith('/'):
            raise ParseError('containerd config line %d: root %r is not an absolute path' % (number, found))
    return DEFAULT_ROOT if found is None else found
