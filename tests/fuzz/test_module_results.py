"""What a module returns, of any shape, holding node text of any bytes (issue 44 item 6): after _shown_text.shown_result
(NodeallocModule's exit_json, fail_json, warn) every str in it, dict keys too, encodes as strict UTF-8, as ansible-core
requires of a module's answer; the shape and everything else are kept; a result with nothing to escape is returned
itself; escaping twice changes nothing more."""

from __future__ import annotations

import copy
import json
import math

from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import hostile_text
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _shown_text

# Text as the node readers give it (any bytes, surrogateescape), hostile text, and lone surrogates of any kind.
node_text = st.one_of(
    st.binary(max_size=24).map(lambda raw: raw.decode('utf-8', 'surrogateescape')),
    hostile_text,
    st.lists(st.one_of(st.integers(0xd800, 0xdfff).map(chr), st.text(max_size=3)), max_size=6).map(''.join))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), node_text, st.binary(max_size=8))
results = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.one_of(node_text, st.integers()), inner, max_size=4)), max_leaves=30)


def _strict(value):
    """Every str in ``value`` (keys too) encodes as strict UTF-8; no bytes are left."""
    if isinstance(value, dict):
        for key, item in value.items():
            _strict(key)
            _strict(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strict(item)
    elif isinstance(value, str):
        value.encode('utf-8')
    else:
        assert not isinstance(value, (bytes, bytearray)), value


def _same_shape(before, after):
    """``after`` is ``before`` with its text shown: same containers and lengths, the same figures."""
    if isinstance(before, dict):
        assert isinstance(after, dict)
        assert len(after) <= len(before)  # two keys equal once shown become one (the escape is for showing)
        if len(after) == len(before):
            for (key, item), (shown_key, shown_item) in zip(before.items(), after.items()):
                _same_shape(key, shown_key)
                _same_shape(item, shown_item)
    elif isinstance(before, (list, tuple)):
        assert type(after) is type(before) and len(after) == len(before)
        for item, shown_item in zip(before, after):
            _same_shape(item, shown_item)
    elif isinstance(before, str):
        assert after == _shown_text.shown(before)
    elif isinstance(before, bytes):
        assert after == before.decode('utf-8', 'backslashreplace')
    else:
        assert after is before or (isinstance(before, float) and math.isnan(before))


@given(results)
@cpu_deadline
def test_every_str_of_a_shown_result_is_utf8_and_the_rest_is_kept(result):
    kept = copy.deepcopy(result)
    shown = _shown_text.shown_result({'changed': False, 'msg': 'facts', 'facts': result})
    _strict(shown)
    json.dumps(shown, ensure_ascii=False).encode('utf-8')  # what the controller's strict decoding gets
    _same_shape(result, shown['facts'])
    assert repr(result) == repr(kept)  # the module's own value is not changed
    # Valid UTF-8 throughout: the result itself, not a copy; shown once, showing again changes nothing.
    assert _shown_text.shown_result(shown) is shown
