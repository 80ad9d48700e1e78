"""Hostile text: what a node's user or a result file can put where the collection reads or shows it."""

from __future__ import annotations

from hypothesis import strategies as st

# Markup and syntax of every place a value lands: HTML, Markdown, tables, terminals, unit files, YAML, JSON.
HOSTILE_PIECES = [
    '<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '"', "'", '"><b>', "' onmouseover='x", '&amp;', '&',
    '|', '\n', '\r\n', '\n# heading\n', '\n- item', '\n> quote', '\n```\n', '```', '`', '~~~', '[x](javascript:alert(1))',
    '<!--', '-->', ']]>', '\x1b[31m', '\x00', '\u2028', '\t', '    ', '1. ', '***', '---', '\\', '%n', '$HOME', '${X}',
    'ExecStartPre=/bin/sh', '{{ x }}', '{% x %}', '\ufeff', '\u202e', '<style>', '</td></tr>', '</table>', '<tr class="',
]
hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=8)), max_size=6).map(''.join)

# JSON-like values of any shape, some nested deep.
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
                         st.floats(allow_nan=True, allow_infinity=True), hostile_text, st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=20)


def deep(opening, closing, depth):
    return opening * depth + closing * depth


# Quantities: the grammar's pieces in any order, with exponents and digit runs far past what anything holds.
digits = st.one_of(st.text('0123456789', max_size=30), st.integers(0, 5000).map(lambda n: '9' * n),
                   st.integers(0, 5000).map(lambda n: '0' * n + '1'))
quantity_text = st.one_of(
    st.text(max_size=30),
    st.tuples(st.sampled_from(['', '+', '-']), digits, st.sampled_from(['', '.']), digits,
              st.one_of(st.sampled_from(['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P',
                                         'E', 'e', 'E+', 'e-', 'KiB', 'i', 'ee']),
                        st.tuples(st.sampled_from(['e', 'E', 'e+', 'e-']),
                                  st.one_of(st.integers(0, 1 << 70).map(str), digits)).map(''.join))).map(''.join))
