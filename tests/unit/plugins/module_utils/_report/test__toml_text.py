"""_toml_text: every table written is read back by Python's own TOML reader (tomllib, 3.11+) as exactly the tables
given, whatever text the keys and values hold; what TOML cannot hold is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _toml_text

tomllib = pytest.importorskip('tomllib')

# Text TOML can hold: any Unicode scalar value (no surrogates).
SCALAR_TEXT = st.text(st.characters(blacklist_categories=('Cs',)), max_size=40)


def nested(tables):
    """What tomllib gives for ``tables``: each table path as nested dicts."""
    out = {}
    for path, values in tables:
        if not values:
            continue
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node.update(values)
    return out


@pytest.mark.parametrize('value', [
    '80m', '', 'a"b', 'back\\slash', 'line\nnext', '"\n[settings.kubernetes.authentication]\nevil = "1',
    'cr\r\nlf', 'tab\there', 'nul\x00', 'del\x7f', 'esc\x1b[31m', 'nel\x85', 'ls\u2028', 'bom\ufeff', 'astral\U0001F600',
    'é', '\\u0041', "'single'", '#not a comment', ']', 'x = "y"',
])
def test_a_value_reads_back_as_written_and_adds_no_key(value):
    tables = [(('settings', 'kubernetes', 'kube-reserved'), {'memory': value, 'cpu': '80m'})]
    text = _toml_text.toml_text(tables)
    assert tomllib.loads(text) == nested(tables)
    assert all(ord(char) < 0x80 for char in text)  # every character outside printable ASCII escaped
    assert len(text.splitlines()) == 3


@pytest.mark.parametrize('key', ['memory.available', 'a b', 'a"b', 'k\n[evil]', '', 'é', '=', '#'])
def test_a_key_that_is_not_bare_is_quoted_and_stays_one_key(key):
    if not key:
        with pytest.raises(ValueError):
            _toml_text.toml_text([(('t',), {key: 'v'})])
        return
    text = _toml_text.toml_text([(('settings', 'kubernetes', 'eviction-hard'), {key: '5%'})])
    assert tomllib.loads(text) == {'settings': {'kubernetes': {'eviction-hard': {key: '5%'}}}}


@given(st.lists(st.tuples(SCALAR_TEXT.filter(bool), SCALAR_TEXT), max_size=6), SCALAR_TEXT.filter(bool))
def test_any_scalar_text_round_trips(pairs, table):
    tables = [(('settings', table), dict(pairs))]
    assert tomllib.loads(_toml_text.toml_text(tables)) == nested(tables)


def test_what_toml_cannot_hold_is_refused_not_guessed():
    with pytest.raises(ValueError, match='surrogate'):
        _toml_text.basic_string('bad\udcff')  # an undecodable byte kept by surrogateescape
    for item in (True, 1.5, None, ['a']):  # a boolean is a Python int: refused all the same
        with pytest.raises(TypeError):
            _toml_text.toml_text([(('t',), {'n': item})])
    with pytest.raises(ValueError):
        _toml_text.toml_text([(('t',), {'a': '1'}), (('t',), {'b': '2'})])  # one table twice: TOML refuses
    with pytest.raises(ValueError):
        _toml_text.toml_text([('settings.kubernetes', {'a': '1'})])  # a dotted string is not a path


def test_a_whole_number_is_a_toml_integer():
    # Bottlerocket's settings.kubernetes.max-pods is an integer, not a string (issue 45: templates write maxPods).
    text = _toml_text.toml_text([(('settings', 'kubernetes'), {'max-pods': 58}),
                                 (('settings', 'kubernetes', 'kube-reserved'), {'memory': '1Gi'})])
    assert text.startswith('[settings.kubernetes]\nmax-pods = 58\n')
    assert tomllib.loads(text) == {'settings': {'kubernetes': {'max-pods': 58, 'kube-reserved': {'memory': '1Gi'}}}}
    assert tomllib.loads(_toml_text.toml_text([(('t',), {'n': -3})])) == {'t': {'n': -3}}


def test_an_empty_table_is_left_out():
    text = _toml_text.toml_text([(('a',), {}), (('b',), {'k': 'v'})])
    assert text == '[b]\nk = "v"\n' and tomllib.loads(text) == {'b': {'k': 'v'}}
