"""The validation rules, with the kubelet's own error cases.

enforceNodeAllocatable cases follow pkg/kubelet/apis/config/validation/validation_test.go;
reservation cases cmd/kubelet/app/server.go parseResourceList; eviction cases
pkg/kubelet/eviction/helpers_test.go.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet_config_rules import (
    ValidationError, validate)

GI, MI = 1 << 30, 1 << 20


def check(config, **node):
    return validate(dict(config), **node)


def test_a_sensible_config_passes_every_rule():
    rules = check({'kubeReserved': {'cpu': '100m', 'memory': '1Gi', 'pid': '1000', 'ephemeral-storage': '1Gi'},
                   'systemReserved': {'memory': '500Mi'}, 'evictionHard': {'memory.available': '100Mi'},
                   'evictionSoft': {'memory.available': '300Mi'},
                   'evictionSoftGracePeriod': {'memory.available': '1m30s'},
                   'evictionMinimumReclaim': {'memory.available': '0Mi', 'nodefs.available': '500Mi'},
                   'enforceNodeAllocatable': ['pods', 'kube-reserved'], 'kubeReservedCgroup': '/kube.slice'},
                  capacity_memory_bytes=8 * GI, capacity_millicores=2000,
                  kubepods_working_set_bytes=GI, kubepods_margin_bytes=256 * MI)
    assert rules == ['reserved-resources', 'eviction-thresholds', 'enforce-node-allocatable',
                     'reservation-within-capacity', 'kubepods-limit-above-usage']


@pytest.mark.parametrize('config,rule,field,message', [
    ({'kubeReserved': {'gpu': '1'}}, 'reserved-resources', 'kubeReserved.gpu', 'cannot reserve'),
    ({'kubeReserved': {'memory': '-1Gi'}}, 'reserved-resources', 'kubeReserved.memory', 'cannot be negative'),
    ({'systemReserved': {'cpu': 'lots'}}, 'reserved-resources', 'systemReserved.cpu', 'failed to parse quantity'),
    ({'systemReserved': ['cpu']}, 'reserved-resources', 'systemReserved', 'mapping'),
    ({'evictionHard': {'memory.free': '1Gi'}}, 'eviction-thresholds', 'evictionHard.memory.free', 'unsupported'),
    ({'evictionHard': {'memory.available': '150%'}}, 'eviction-thresholds', 'evictionHard.memory.available',
     '<= 100%'),
    ({'evictionHard': {'memory.available': '-1%'}}, 'eviction-thresholds', 'evictionHard.memory.available', '>= 0%'),
    ({'evictionHard': {'memory.available': '0'}}, 'eviction-thresholds', 'evictionHard.memory.available',
     'must be positive'),
    ({'evictionSoft': {'memory.available': '1Gi'}}, 'eviction-thresholds',
     'evictionSoftGracePeriod.memory.available', 'grace period must be specified'),
    ({'evictionSoft': {'memory.available': '1Gi'}, 'evictionSoftGracePeriod': {'memory.available': '-1s'}},
     'eviction-thresholds', 'evictionSoftGracePeriod.memory.available', 'must be a positive value'),
    ({'evictionSoftGracePeriod': {'memory.available': '90'}}, 'eviction-thresholds',
     'evictionSoftGracePeriod.memory.available', 'invalid duration'),
    ({'evictionMinimumReclaim': {'memory.available': '-1Mi'}}, 'eviction-thresholds',
     'evictionMinimumReclaim.memory.available', 'negative'),
    ({'evictionPressureTransitionPeriod': '5 minutes'}, 'eviction-thresholds', 'evictionPressureTransitionPeriod',
     'invalid duration'),
    ({'enforceNodeAllocatable': ['system-reserved']}, 'enforce-node-allocatable', 'systemReservedCgroup',
     "must be specified when 'system-reserved'"),
    ({'enforceNodeAllocatable': ['kube-reserved']}, 'enforce-node-allocatable', 'kubeReservedCgroup',
     "must be specified when 'kube-reserved'"),
    ({'enforceNodeAllocatable': ['kube-reserved-compressible']}, 'enforce-node-allocatable', 'kubeReservedCgroup',
     'must be specified'),
    ({'enforceNodeAllocatable': ['none', 'pods']}, 'enforce-node-allocatable', 'enforceNodeAllocatable',
     'may not contain additional enforcements'),
    ({'enforceNodeAllocatable': ['invalid-enforce-node-allocatable']}, 'enforce-node-allocatable',
     'enforceNodeAllocatable', 'Valid options are'),
    ({'enforceNodeAllocatable': ['pods'], 'cgroupsPerQOS': False}, 'enforce-node-allocatable',
     'enforceNodeAllocatable', 'cgroupsPerQOS'),
])
def test_rules_refuse_what_the_kubelet_refuses(config, rule, field, message):
    with pytest.raises(ValidationError) as error:
        check(config)
    assert (error.value.rule, error.value.field) == (rule, field)
    assert message in str(error.value)


def test_zero_and_hundred_percent_thresholds_are_accepted_as_disabled():
    assert check({'evictionHard': {'memory.available': '0%', 'nodefs.available': '100%'}})


def test_reservations_above_capacity_are_refused():
    with pytest.raises(ValidationError) as error:
        check({'kubeReserved': {'memory': '7Gi'}, 'systemReserved': {'memory': '1Gi'},
               'evictionHard': {'memory.available': '1Mi'}}, capacity_memory_bytes=8 * GI, capacity_millicores=2000)
    assert error.value.rule == 'reservation-within-capacity'
    with pytest.raises(ValidationError, match='CPU capacity'):
        check({'kubeReserved': {'cpu': '1500m'}, 'systemReserved': {'cpu': '600m'}},
              capacity_memory_bytes=8 * GI, capacity_millicores=2000)


def test_default_eviction_counts_when_the_config_sets_none():
    # 8Gi - 100Mi default eviction leaves exactly this much to reserve.
    check({'kubeReserved': {'memory': '%dMi' % (8 * 1024 - 100)}}, capacity_memory_bytes=8 * GI,
          capacity_millicores=1000)
    with pytest.raises(ValidationError):
        check({'kubeReserved': {'memory': '%dMi' % (8 * 1024 - 99)}}, capacity_memory_bytes=8 * GI,
              capacity_millicores=1000)


def test_a_limit_below_what_pods_use_now_is_refused_unless_pods_are_not_enforced():
    config = {'kubeReserved': {'memory': '6Gi'}}
    with pytest.raises(ValidationError) as error:
        check(config, capacity_memory_bytes=8 * GI, capacity_millicores=2000,
              kubepods_working_set_bytes=int(1.9 * GI), kubepods_margin_bytes=256 * MI)
    assert error.value.rule == 'kubepods-limit-above-usage'
    assert 'OOM-kill' in str(error.value)
    config['enforceNodeAllocatable'] = ['none']
    check(config, capacity_memory_bytes=8 * GI, capacity_millicores=2000,
          kubepods_working_set_bytes=int(1.9 * GI), kubepods_margin_bytes=256 * MI)
