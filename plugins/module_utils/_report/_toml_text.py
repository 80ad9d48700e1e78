# Private to nodealloc.kubelet: not a public API, may change without notice.
"""TOML text for the one shape the node templates need: tables of string and integer values (Bottlerocket's user data).

No TOML writer is among the collection's dependencies (PyYAML only; Python's tomllib reads and only from 3.11), and
a template must not be built by pasting text: every key and value here goes through ``key`` and ``value``,
which quote and escape as TOML 1.0 requires (toml.io/en/v1.0.0, "Keys", "String" and "Integer"), so no text a node
or an inventory gives can end a string, start a table or add a key. Anything else (a float, a boolean, a nested
table, a key path given as one dotted string) is refused, not guessed at.
"""

from __future__ import annotations

import re

# TOML 1.0 bare keys: ASCII letters, digits, '_' and '-'; anything else is written quoted.
_BARE_KEY = re.compile(r'[A-Za-z0-9_-]+\Z')
# The short escapes TOML defines; every other control character is written as \uXXXX.
_SHORT_ESCAPES = {'\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '"': '\\"', '\\': '\\\\'}


def basic_string(text):
    """``text`` as a TOML basic string: ``"``, ``\\``, every control character (U+0000-U+001F, U+007F) and every
    character outside printable ASCII escaped, so the line holds ASCII only. A lone surrogate (which Python strings
    may carry, from undecodable bytes) is no Unicode scalar value and cannot be written in TOML: ValueError."""
    if not isinstance(text, str):
        raise TypeError('a TOML string value must be text, not %s' % type(text).__name__)
    out = []
    for char in text:
        code = ord(char)
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif 0x20 <= code < 0x7f:
            out.append(char)
        elif 0xd800 <= code <= 0xdfff:
            raise ValueError('U+%04X is a surrogate, not a character TOML can hold' % code)
        elif code <= 0xffff:
            out.append('\\u%04X' % code)
        else:
            out.append('\\U%08X' % code)
    return '"%s"' % ''.join(out)


def key(text):
    """One key (one part of a dotted key or a table name): bare where TOML allows it, else a quoted basic string.
    ``memory.available`` is quoted, so its dot stays in the key instead of making a sub-table."""
    if not isinstance(text, str) or not text:
        raise ValueError('a TOML key must be non-empty text, got %r' % (text,))
    return text if _BARE_KEY.match(text) else basic_string(text)


def value(item):
    """A TOML value: a basic string for text, a decimal integer for a whole number (Bottlerocket's max-pods); a
    boolean (a subclass of int in Python) or anything else is refused."""
    if isinstance(item, int) and not isinstance(item, bool):
        return '%d' % item
    return basic_string(item)


def toml_text(tables):
    """``tables``: [(table path as a tuple of key parts, {key: text or whole number})], in order; a table with no
    values is left out. Returns the TOML text, one ``[a.b.c]`` header per table and one ``key = value`` line per value."""
    blocks = []
    seen = set()
    for path, values in tables:
        if not isinstance(path, tuple) or not path:
            raise ValueError('a TOML table path is a non-empty tuple of keys, got %r' % (path,))
        if path in seen:
            raise ValueError('TOML table %s given twice' % '.'.join(key(part) for part in path))
        seen.add(path)
        if not values:
            continue
        lines = ['[%s]' % '.'.join(key(part) for part in path)]
        lines += ['%s = %s' % (key(name), value(item)) for name, item in values.items()]
        blocks.append('\n'.join(lines) + '\n')
    return '\n'.join(blocks)
