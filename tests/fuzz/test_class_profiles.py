"""A peer's pods profile (issue 45) reaches a node through the controller: any JSON value is a profile the model can
fit, or the collection's own error, fast; and the model over any valid profiles stays finite."""

from __future__ import annotations

import math

from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import json_values
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _class_model

numbers = st.one_of(st.integers(-5, 1 << 52), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    st.none(), st.text(max_size=3))
buckets = st.lists(st.lists(numbers, min_size=7, max_size=9), max_size=18)
profiles = st.one_of(json_values, st.fixed_dictionaries(
    {'buckets': buckets, 'first': numbers, 'last': numbers, 'readings': numbers, 'pods_now': numbers,
     'pods_most': numbers}, optional={'pods_climb': numbers}))


@given(profiles)
@cpu_deadline
def test_a_peers_profile_is_checked_or_refused_with_our_error(value):
    try:
        checked = _class_model.checked(value)
    except NodeallocError:
        return
    if checked is None:
        assert value is None
        return
    model = _class_model.fit([checked], 110)
    for resource in ('memory', 'cpu'):
        assert math.isfinite(model[resource]['slope']) and model[resource]['envelope'] >= 0


samples = st.lists(st.fixed_dictionaries({'t': st.integers(0, 10 ** 7), 'non_pod_bytes': st.integers(0, 1 << 45),
                                          'non_pod_millicores': st.integers(0, 10 ** 6),
                                          'pods': st.integers(0, 1000)}), min_size=1, max_size=60)


@given(samples, st.integers(1, 1000))
@cpu_deadline
def test_any_window_profiles_checks_and_fits_with_every_reading_under_the_envelope(window, max_pods):
    window.sort(key=lambda s: s['t'])
    own = _class_model.checked(_class_model.profile(window))
    model = _class_model.fit([own], max_pods)
    memory = model['memory']
    assert all(s['non_pod_bytes'] <= memory['envelope'] + memory['slope'] * s['pods'] + 1 for s in window)
    assert 0 <= own['pods_climb'] <= 1000
