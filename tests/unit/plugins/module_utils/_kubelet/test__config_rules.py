"""The validation rules, with the kubelet's own error cases.

enforceNodeAllocatable cases follow pkg/kubelet/apis/config/validation/validation_test.go;
reservation cases cmd/kubelet/app/server.go parseResourceList; eviction cases
pkg/kubelet/eviction/helpers_test.go.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._config_rules import (
    ValidationError, reserved_cgroup_path, validate)

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
    assert rules == ['reserved-resources', 'eviction-thresholds', 'enforce-node-allocatable', 'reserved-cgroups',
                     'enforce-reserved-cgroup', 'memory-manager-reserved-memory', 'cpu-manager-reserved',
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


# Rows of pkg/kubelet/apis/config/validation/validation_test.go TestValidateKubeletConfiguration
# ("specify ReservedSystemCPUs with SystemReservedCgroup", "... with KubeReservedCgroup",
# "specify SystemCgroups without CgroupRoot") and validation.go's uniqueEnforcements check,
# each applied to that test's successConfig (pods, system-reserved, kube-reserved enforced on
# /system.slice and /kubelet.service).
SUCCESS_CONFIG = {'cgroupsPerQOS': True, 'enforceNodeAllocatable': ['pods', 'system-reserved', 'kube-reserved'],
                  'systemReservedCgroup': '/system.slice', 'kubeReservedCgroup': '/kubelet.service',
                  'systemReserved': {'memory': '1Gi'}, 'kubeReserved': {'memory': '1Gi'}}


def test_the_upstream_success_config_passes():
    assert 'enforce-reserved-cgroup' in check(SUCCESS_CONFIG)


@pytest.mark.parametrize('change,rule,field,message', [
    ({'enforceNodeAllocatable': ['pods', 'system-reserved', 'pods']}, 'enforce-node-allocatable',
     'enforceNodeAllocatable', "duplicated enforcements 'pods'"),
    ({'enforceNodeAllocatable': ['pods', 'kube-reserved', 'kube-reserved']}, 'enforce-node-allocatable',
     'enforceNodeAllocatable', "duplicated enforcements 'kube-reserved'"),
    ({'reservedSystemCPUs': '0-3', 'kubeReservedCgroup': '', 'enforceNodeAllocatable': ['pods', 'system-reserved']},
     'reserved-cgroups', 'reservedSystemCPUs', "can't use reservedSystemCPUs"),
    ({'reservedSystemCPUs': '0-3', 'systemReservedCgroup': '', 'enforceNodeAllocatable': ['pods', 'kube-reserved']},
     'reserved-cgroups', 'reservedSystemCPUs', "can't use reservedSystemCPUs"),
    ({'systemCgroups': '/', 'cgroupRoot': ''}, 'reserved-cgroups', 'systemCgroups',
     'cgroupRoot (--cgroup-root) was not specified'),
    # cmd/kubelet/app/server.go parseResourceList gives nil for an empty map; node_container_manager_linux.go
    # enforceExistingCgroup then fails on getCgroupConfig(nil): the container manager does not start.
    ({'systemReserved': {}}, 'enforce-reserved-cgroup', 'systemReserved', 'is not config properly'),
    ({'kubeReserved': None}, 'enforce-reserved-cgroup', 'kubeReserved', 'is not config properly'),
    ({'enforceNodeAllocatable': ['pods', 'kube-reserved-compressible'], 'kubeReserved': {}},
     'enforce-reserved-cgroup', 'kubeReserved', 'is not config properly'),
])
def test_upstream_rows_are_refused(change, rule, field, message):
    with pytest.raises(ValidationError) as error:
        check(dict(SUCCESS_CONFIG, **change))
    assert (error.value.rule, error.value.field) == (rule, field)
    assert message in str(error.value)


def test_reserved_cpus_and_system_cgroups_with_root_pass():
    check({'reservedSystemCPUs': '0-1', 'enforceNodeAllocatable': ['pods']})
    check({'systemCgroups': '/system.slice', 'cgroupRoot': '/'})


def test_an_empty_reservation_not_enforced_passes():
    check({'enforceNodeAllocatable': ['pods'], 'kubeReserved': {}, 'systemReserved': {}})


@pytest.mark.parametrize('name,driver,path', [
    # cgroup_manager_linux.go: cgroupfs names are paths; systemd names go through
    # ParseSystemdToCgroupName then ToSystemd (ExpandSlice), as in cgroup_manager_linux_test.go
    # TestCgroupNameToSystemd ({"system", "Burstable"} -> "/system.slice/system-Burstable.slice").
    ('/system.slice', 'cgroupfs', 'system.slice'),
    ('/kube.slice/kubelet.service', 'cgroupfs', 'kube.slice/kubelet.service'),
    ('/system.slice', 'systemd', 'system.slice'),
    ('/system-Burstable.slice', 'systemd', 'system.slice/system-Burstable.slice'),
    ('/kubelet.service', 'systemd', 'kubelet.service.slice'),
    ('/runtime.slice/containerd.service', 'systemd', 'containerd.service.slice'),
])
def test_reserved_cgroup_path_follows_the_driver(name, driver, path):
    assert reserved_cgroup_path(name, driver) == path


def test_an_enforced_cgroup_missing_on_the_node_is_refused(tmp_path):
    (tmp_path / 'system.slice').mkdir()

    def exists(relative):
        return (tmp_path / relative).is_dir()
    with pytest.raises(ValidationError) as error:
        check(SUCCESS_CONFIG, cgroup_exists=exists)
    assert (error.value.rule, error.value.field) == ('enforce-reserved-cgroup', 'kubeReservedCgroup')
    assert 'does not exist' in str(error.value)
    (tmp_path / 'kubelet.service').mkdir()
    check(SUCCESS_CONFIG, cgroup_exists=exists)
    # The same names under the systemd driver: /kubelet.service is looked up as kubelet.service.slice.
    with pytest.raises(ValidationError, match="'/kubelet.service.slice' does not exist"):
        check(dict(SUCCESS_CONFIG, cgroupDriver='systemd'), cgroup_exists=exists)


@pytest.mark.parametrize('value', ['0%', '100%'])
def test_a_disabled_soft_threshold_needs_no_grace_period(value):
    # pkg/kubelet/eviction/helpers_test.go TestParseThresholdConfig rows "disable via 0%" and
    # "disable via 100%": evictionSoft memory.available 0% / 100%, no grace period, expectErr false.
    check({'evictionHard': {'memory.available': value}, 'evictionSoft': {'memory.available': value}})
