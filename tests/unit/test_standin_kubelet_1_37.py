"""The stand-in kubelet at 1.36 and 1.37, through its whole start-up (tests/standin/kubelet.py ``start_up``) and its
decoder: what a 1.37 kubelet refuses (an out-of-range memoryThrottlingFactor, the unreleased NodeSystemPartition
gate), what it starts with (MemoryQoS on by default and no factor: kubernetes/kubernetes#140007), and a
systemPartition dropped as an unknown field (KEP-5894 is in no release up to 1.37). The collection's verdict on the
same config is asked beside each (_version_rules.check): a disagreement is a bug in one of them."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'standin'))
import kubelet as standin  # noqa: E402
from kubelet_logic import config as standin_config  # noqa: E402
from kubelet_logic import version as standin_version  # noqa: E402

BASE = {'kubeReserved': {'memory': '1Gi', 'cpu': '100m'}, 'systemReserved': {'memory': '512Mi', 'cpu': '100m'},
        'evictionHard': {'memory.available': '100Mi'}, 'failCgroupV1': False}
PARTITION = {'memoryLimit': '4Gi', 'cpuset': '0-3', 'namespaces': ['kube-system']}
ROWS = [
    ('v1.37.0', {}, None),
    ('v1.37.0', {'featureGates': {'MemoryQoS': True}}, None),
    ('v1.36.0', {'featureGates': {'MemoryQoS': True}}, None),
    ('v1.37.0', {'memoryThrottlingFactor': 0.9, 'memoryReservationPolicy': 'TieredReservation'}, None),
    ('v1.37.0', {'memoryThrottlingFactor': 1.5}, 'memoryThrottlingFactor 1.5 must be greater than 0'),
    ('v1.36.0', {'memoryReservationPolicy': 'TieredReservation'}, 'requires MemoryQoS feature gate'),
    ('v1.37.0', {'featureGates': {'NodeSystemPartition': True}}, 'unrecognized feature gate: NodeSystemPartition'),
    ('v1.37.0', {'systemPartition': PARTITION}, None),
]


@pytest.mark.parametrize('git_version,change,message', ROWS)
def test_the_standin_starts_or_refuses_as_the_collection_says(git_version, change, message):
    try:
        standin.start_up(dict(BASE, **change), standin_version.parse(git_version), False, {0}, [0, 1])
        error = None
    except standin.StartupError as exc:
        error = str(exc)
    assert (error is None) == (message is None), error
    if message:
        assert message in error
    verdict = _version_rules.check(_version_rules.parse('Kubernetes ' + git_version), 'v2', dict(BASE, **change))
    assert bool(verdict['refusals']) == (message is not None), verdict


def test_a_1_37_standin_drops_system_partition_as_an_unknown_field(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(json.dumps(dict(BASE, apiVersion='kubelet.config.k8s.io/v1beta1', kind='KubeletConfiguration',
                                    systemPartition=PARTITION)))
    events = []
    config, _sources = standin_config.load(str(path), None, standin.known_fields(),
                                           lambda event, **fields: events.append((event, fields)))
    assert [event for event, _fields in events] == ['lenient-decoding']
    assert '"systemPartition"' in events[0][1]['message']
    standin.start_up(config, standin_version.parse('v1.37.0'), False, {0}, [0, 1])  # starts
    warnings = _version_rules.check(_version_rules.parse('Kubernetes v1.37.0'), 'v2', config)['warnings']
    assert any('drops it' in w and 'memoryLimit 4Gi' in w for w in warnings)


def test_a_string_factor_stops_the_standin_decoder(tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(json.dumps(dict(BASE, apiVersion='kubelet.config.k8s.io/v1beta1', kind='KubeletConfiguration',
                                    memoryThrottlingFactor='0.9')))
    with pytest.raises(standin_config.ConfigError, match='memoryThrottlingFactor of type float64'):
        standin_config.load(str(path), None, standin.known_fields(), lambda event, **fields: None)
    assert _version_rules.check(_version_rules.parse('Kubernetes v1.37.0'), 'v2',
                                {'memoryThrottlingFactor': '0.9'})['refusals']
