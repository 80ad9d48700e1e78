# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Text read from a node's bytes as a result or a message shows it: valid UTF-8, each byte that is not UTF-8 ``\\xNN``.

The node readers keep every byte (``bytes.decode('utf-8', 'surrogateescape')``, _node/_procfs.decode): a cgroup, a
command line, a process name, a unit or a file name need not be UTF-8 (on cgroup v2 a user's delegated subtree is
theirs to name), and a path must stay exact where it is used. Such a str holds lone surrogates (U+DC80..U+DCFF, one a
byte), which no strict UTF-8 encoder takes: ansible-core refuses a module result holding one ("Refusing to
deserialize an invalid UTF8 string value ... surrogates not allowed", ``MODULE_STRICT_UTF8_RESPONSE``) and the task
fails, though the node was read well. So whatever leaves a module goes through ``shown_result``
(_module_glue.NodeallocModule: exit_json, fail_json, warn), and messages built from node text use ``shown``.

The one form (docs/security.md): each byte that is not UTF-8 becomes the four characters ``\\xNN`` (lower-case hex),
exactly what ``bytes.decode('utf-8', 'backslashreplace')`` makes of the bytes read; valid text is left as it is. The
escape adds only printable ASCII, so it adds no line break or control character either. It is for showing: not
reversible (a name that holds the characters ``\\xf8`` shows as one holding the byte 0xf8 does). A lone surrogate no
decoding of bytes makes (outside U+DC80..U+DCFF) is shown by its code point, ``\\udNNN``.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile('[\ud800-\udfff]')


def _escaped(match):
    code = ord(match.group())
    if 0xdc80 <= code <= 0xdcff:  # the byte surrogateescape kept: the byte
        return '\\x%02x' % (code - 0xdc00)
    return '\\u%04x' % code


def _valid(text):
    if text.isascii():  # a flag CPython keeps on each str: the common case costs no scan
        return True
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return True


def shown(text):
    """``text`` (a str, possibly decoded with ``surrogateescape``) as valid UTF-8: each kept byte as ``\\xNN``."""
    return text if _valid(text) else _SURROGATE.sub(_escaped, text)


def _all_valid(value):
    """Whether ``shown_result`` would return ``value`` itself: no str in it to escape, no bytes to decode.

    Each item's exact type is looked at in the loop, without a call for a figure or a str: a facts result of 1,577
    values takes about 0.12 ms here, half what ``json.dumps`` of it takes (a call per item doubled it).
    """
    kind = type(value)
    if kind is dict:
        items = value.values()
        for key in value:
            if type(key) is not str or not (key.isascii() or _valid(key)):  # pylint: disable=unidiomatic-typecheck
                if not _all_valid(key):
                    return False
    elif kind is list:
        items = value
    elif isinstance(value, str):
        return _valid(value)
    elif isinstance(value, dict):
        return _all_valid(list(value)) and _all_valid(list(value.values()))
    elif isinstance(value, (list, tuple)):
        return _all_valid(list(value))
    else:
        return not isinstance(value, (bytes, bytearray))
    for item in items:
        kind = type(item)
        if kind is int or kind is float or kind is bool or item is None:
            continue
        if kind is str:
            if not (item.isascii() or _valid(item)):
                return False
        elif not _all_valid(item):
            return False
    return True


def _rebuilt(value):
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode('utf-8', 'backslashreplace')
    if isinstance(value, dict):
        # Two keys that differ only in what is escaped would become one; each such name is the kubelet's or a
        # runtime's group, which only root names.
        return dict((_rebuilt(key), _rebuilt(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_rebuilt(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_rebuilt(item) for item in value)
    return value


def shown_result(value):
    """``value`` with every str in it, dict keys too, through dicts, lists and tuples, as ``shown`` makes it (and bytes
    decoded the same way); ``value`` itself, untouched and not copied, when there is nothing to escape, the common case:
    one walk that allocates nothing."""
    return value if _all_valid(value) else _rebuilt(value)
