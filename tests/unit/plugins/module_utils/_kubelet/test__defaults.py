"""_defaults.effective_eviction_hard: the hard thresholds a kubelet runs with, as cmd/kubelet/app/server.go
loadConfigFile decides them (the default only for a config without evictionHard; mergeDefaultEvictionSettings from
1.33), and DefaultEvictionHard per version (pkg/kubelet/eviction/defaults_linux.go; imagefs.inodesFree from 1.30)."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults

FOUR = {'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%'}
FIVE = dict(FOUR, **{'imagefs.inodesFree': '5%'})


@pytest.mark.parametrize('version,expected', [
    ({'version': '1.29.9'}, FOUR), ({'version': '1.30.0'}, FIVE), ({'version': '1.35.2'}, FIVE),
    (None, FIVE), ({'version': None}, FIVE),  # unknown: taken as a current kubelet
])
def test_no_evictionHard_is_the_default_of_the_version(version, expected):
    assert _defaults.effective_eviction_hard({}, version) == expected


def test_a_set_map_replaces_the_default_whole():
    config = {'evictionHard': {'memory.available': '500Mi'}}
    assert _defaults.effective_eviction_hard(config, {'version': '1.35.0'}) == {'memory.available': '500Mi'}
    assert _defaults.effective_eviction_hard({'evictionHard': {}}, None) == {}


@pytest.mark.parametrize('version,expected', [
    ({'version': '1.33.0'}, dict(FIVE, **{'memory.available': '500Mi'})),
    (None, dict(FIVE, **{'memory.available': '500Mi'})),
    # An older kubelet does not know the field and ignores it.
    ({'version': '1.32.4'}, {'memory.available': '500Mi'}),
])
def test_merge_default_eviction_settings_fills_in_the_other_signals_from_1_33(version, expected):
    config = {'evictionHard': {'memory.available': '500Mi'}, 'mergeDefaultEvictionSettings': True}
    assert _defaults.effective_eviction_hard(config, version) == expected


def test_the_result_is_a_copy():
    _defaults.effective_eviction_hard({}, None)['memory.available'] = '1Gi'
    assert _defaults.EVICTION_HARD['memory.available'] == '100Mi'
