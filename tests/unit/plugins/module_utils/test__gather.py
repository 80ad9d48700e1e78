"""gather() on a cgroup v2 node, reproduced as a file tree (see tests/unit/fixtures/cgroup_v2.py)."""

from __future__ import annotations

import collections
import json
import os
import sys
import time

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _kubelet_process, _kubelet_version, _measure, _procfs)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024
GIB = 1024 * MIB

# gather() and measure() look for the kubelet and the container runtime in this machine's /proc, the one proc root
# that also holds its /proc/meminfo and /proc/stat. A process found there becomes the node's kubelet: its --config wins
# over kubelet_config_path, its binary is asked its version. Such processes run on this host beside these tests (make
# test runs ansible-test units while test_facts_real_cgroups_v1.py runs a `kubelet --config=...` in system.slice): with
# a `python3 .../kubelet --config=...` and a `containerd` started by hand, ten of these tests failed. Pinned to names no
# process can have (a program name is a file's base name, which never holds a '/'), they find none, whatever runs.
NO_HOST_PROCESSES = {'kubelet_process_names': ['no/kubelet'], 'runtime_process_names': ['no/runtime']}


@pytest.fixture(autouse=True)
def measurement_left_as_measured(monkeypatch):
    """gather's basis holds the measurement itself, not a copy (_gather.gather): nothing after measure() may change
    it. Every measurement a test here makes is compared, after the test, with what measure() returned."""
    measured = []
    measure = _gather.measure

    def recording(*args, **kwargs):
        measurement = measure(*args, **kwargs)
        measured.append((measurement, json.dumps(measurement, sort_keys=True)))
        return measurement

    monkeypatch.setattr(_gather, 'measure', recording)
    yield
    for measurement, as_returned in measured:
        assert json.dumps(measurement, sort_keys=True) == as_returned


@pytest.fixture
def v2_node(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=600 * MIB, active_file_bytes=50 * MIB,
                         inactive_file_bytes=300 * MIB)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice', 600 * MIB, 50 * MIB, 300 * MIB)
    cgroup_v2.make_group(root, 'system.slice', anon_bytes=200 * MIB, active_file_bytes=10 * MIB,
                         inactive_file_bytes=90 * MIB)
    return root


class AdvancingClock:
    """The clock the CPU sample reads, and a sleep that moves it while the kubepods group accrues CPU time at a
    given rate, as a busy pod would. Not wall time: on a busy machine the reads around a real sleep take long
    enough to move a rate measured over 0.3 s by more than any tolerance (CI saw 710 m for 750 m)."""

    def __init__(self, root, usage_per_second_usec):
        self.root, self.rate, self.now, self.usage_usec = root, usage_per_second_usec, 1000.0, 0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.usage_usec += int(seconds * self.rate)
        cgroup_v2.set_cpu_usage(self.root, 'kubepods.slice', self.usage_usec)


def test_v2_node_measures_working_sets_and_cpu(v2_node, tmp_path, monkeypatch):
    clock = AdvancingClock(v2_node, 750000)
    monkeypatch.setattr(_measure, 'time', clock)
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0.3, 'history': False,
                           'kubelet_config_path': str(tmp_path / 'none.yaml')},
                           sleep=clock.sleep)
    assert facts['cgroup']['version'] == 'v2'
    assert facts['cgroup']['mode'] == 'unified'
    assert facts['cgroup']['driver'] == 'systemd'
    assert facts['cgroup']['kubepods_limit_file'] == v2_node + '/kubepods.slice/memory.max'
    assert facts['memory']['kubepods_working_set_bytes'] == 650 * MIB
    assert facts['memory']['system_slice']['working_set_bytes'] == 210 * MIB
    # 0.3 s of 750 ms of CPU a second, read as cumulative cpu.stat usage_usec before and after.
    assert facts['cpu']['kubepods_millicores'] == 750
    assert facts['cpu']['sample_seconds'] == 0.3
    assert facts['current'] is None


def test_malformed_kubelet_config_is_an_error_naming_the_file(v2_node, tmp_path):
    config = tmp_path / 'config.yaml'
    config.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: [\n')
    with pytest.raises(ConfigError, match=str(config)):
        _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                       'history': False})


def test_config_found_by_option_is_read(v2_node, tmp_path):
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"systemReserved": {"memory": "1Gi"}, "enforceNodeAllocatable": ["pods", "system-reserved"]}')
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    assert facts['kubelet']['config_found_by'] == 'kubelet_config_path option'
    assert facts['current']['system_reserved'] == {'memory': '1Gi'}
    assert facts['current']['eviction_hard_source'] == 'default'
    assert facts['current']['enforce_node_allocatable'] == ['pods', 'system-reserved']


def test_no_kubelet_or_runtime_process_found_plans_no_kube_reserved(v2_node, tmp_path):
    # No process of either name (NO_HOST_PROCESSES), as on a k3s node whose kubelet is embedded: the plan must not
    # write kubeReserved '0' from "not found"; the reservation goes to systemReserved.
    config = tmp_path / 'config.yaml'
    config.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
                      'systemReserved: {memory: 1Mi}\n')
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0,
                            'kubelet_config_path': str(config), 'history': False})
    assert facts['components'] == []
    assert facts['recommendation']['kube_reserved'] == {}
    assert facts['decision']['kube_reserved'] == {}
    assert facts['decision']['system_reserved']['memory'] == facts['recommendation']['system_reserved']['memory']


def test_the_node_class_option_names_the_class_pooled_over_and_the_record(v2_node, tmp_path):
    options = {'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'history': False,
               'kubelet_config_path': str(tmp_path / 'none.yaml')}
    alone = _gather.gather(options)
    size = alone['class_record']['node_class']
    assert alone['class_record']['class_name'] is None
    # A peer of the same size but of a named pool (a GPU pool) with a far larger peak: not this node's class.
    peer = dict(alone['class_record'], class_name='gpu', jumps=dict(alone['class_record']['jumps'],
                                                                    memory_bytes=64 * GIB))
    named = _gather.gather(dict(options, node_class='general', class_peers=[peer]))
    assert named['class_record']['class_name'] == 'general' and named['class_record']['node_class'] == size
    assert named['class_peers_used'] == 0
    same = _gather.gather(dict(options, node_class='gpu', class_peers=[peer]))
    assert same['class_peers_used'] == 1


def _measured(v2_node, tmp_path):
    """The module's measurement of the v2 test node, with no kubelet config and no CPU sampling wait."""
    return _gather.measure(_gather.with_defaults({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0,
                                                  'kubelet_config_path': str(tmp_path / 'none.yaml')}),
                           sleep=lambda _s: None)


def _decide_with(options, measurement, now):
    """(history, recommendation, decision): _gather.gather's steps after measuring, on ``measurement``."""
    options = _gather.with_defaults(options)
    history, samples = _gather.read_history(options, measurement, now)
    reading = _gather.reading_from(measurement, 'module', now)
    samples = _gather.choose_history(options, history, samples, reading, measurement['memory']['mem_total_bytes'])
    _gather.history_basis(options, history, samples, reading, now, history['source'])
    _formulas, recommendation, decision = _gather.recommend(options, measurement, history)
    return history, recommendation, decision


def _recommend_from(path, v2_node, tmp_path, measurement, now):
    return _decide_with({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'history_path': str(path), 'history_window': '7d',
                         'kubelet_config_path': str(tmp_path / 'none.yaml')}, measurement, now)


def test_a_damaged_history_recommends_as_the_clean_one_it_came_from(v2_node, tmp_path):
    import json
    measurement = _measured(v2_node, tmp_path)
    mem_total = measurement['memory']['mem_total_bytes']
    now = time.time()
    clean = [json.dumps({'t': now - 3600 + 60 * i, 'non_pod_bytes': (700 + (i * 37) % 400) * MIB,
                         'non_pod_millicores': 100 + (i * 13) % 300, 'source': 'sampler'}) + '\n' for i in range(50)]
    (tmp_path / 'clean.jsonl').write_text(''.join(clean))
    damaged = list(clean)
    damaged.insert(5, 'garbage that is not json\n')
    damaged.insert(9, '{"t": %f, "non_pod_bytes": 1e300, "non_pod_millicores": 100}\n' % (now - 100))
    damaged.insert(12, '{"t": %f, "non_pod_bytes": NaN, "non_pod_millicores": 100}\n' % (now - 100))
    damaged.insert(20, '{"t": %f, "non_pod_bytes": -5, "non_pod_millicores": 100}\n' % (now - 100))
    damaged.insert(30, '{"t": %f, "non_pod_bytes": %d, "non_pod_millicores": 100}\n' % (now - 100, mem_total + 1))
    damaged.insert(31, '{"t": %f, "non_pod_bytes": 1, "non_pod_millicores": 10000000}\n' % (now - 100))
    damaged.append('{"t": %f, "non_pod_bytes": 1, "non_pod_millicores": 100}\n' % (now + 86400))
    damaged.append(clean[-1][:25])  # a torn last line
    (tmp_path / 'damaged.jsonl').write_text(''.join(damaged))

    clean_history, clean_rec, clean_decision = _recommend_from(tmp_path / 'clean.jsonl', v2_node, tmp_path,
                                                               measurement, now)
    history, rec, decision = _recommend_from(tmp_path / 'damaged.jsonl', v2_node, tmp_path, measurement, now)
    assert clean_history['problems'] == [] and clean_history['samples'] == 51
    assert history['rejected'] == 8 and len(history['problems']) == 8
    assert history['samples'] == clean_history['samples']
    assert rec['kube_reserved'] == clean_rec['kube_reserved'] and rec['system_reserved'] == clean_rec['system_reserved']
    assert rec['explanation'] == clean_rec['explanation']
    assert decision == clean_decision


def test_recording_is_opt_in_and_never_in_check_mode(v2_node, tmp_path):
    path = tmp_path / 'history.jsonl'
    base = {'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'history_path': str(path),
            'kubelet_config_path': str(tmp_path / 'none.yaml')}
    assert _gather.gather(base, sleep=lambda _s: None)['history']['recorded'] is False
    assert _gather.gather(dict(base, record=True, _check_mode=True), sleep=lambda _s: None)['history']['recorded'] is False
    assert not path.exists()
    assert _gather.gather(dict(base, record=True), sleep=lambda _s: None)['history']['recorded'] is True
    assert len(path.read_text().splitlines()) == 1


@pytest.mark.parametrize('field,enforced', [(', "enforceNodeAllocatable": []', []), ('', ['pods'])])
def test_an_explicit_empty_enforce_node_allocatable_means_no_enforcement(v2_node, tmp_path, field, enforced):
    # v1beta1 SetDefaults_KubeletConfiguration defaults only a nil list to ["pods"]; [] enforces nothing, so the
    # kubepods limit is the whole node. `or ['pods']` used to read [] as ["pods"].
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"%s}' % field)
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    assert facts['current']['enforce_node_allocatable'] == enforced
    limit = facts['recommendation']['kubepods_memory_limit_bytes']
    if enforced:
        assert limit < facts['memory']['mem_total_bytes']
    else:
        assert limit == facts['memory']['mem_total_bytes']


@pytest.fixture
def one_gib_node(v2_node, tmp_path, monkeypatch):
    """Options for a node with 1 GiB in use outside the pods whatever this machine is doing: a busy host (make test's
    2 GiB loop) would put every call at the max_reserved_fraction cap, where a class cannot raise anything."""
    meminfo = _procfs.read_meminfo()
    monkeypatch.setattr(_procfs, 'read_meminfo', lambda proc_root='/proc': dict(meminfo, MemAvailable=meminfo['MemTotal'] - GIB))
    return {'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'history': False, 'kubelet_config_path': str(tmp_path / 'none.yaml')}


def test_class_peers_of_another_class_are_ignored_and_of_its_own_give_the_cold_start_prior(one_gib_node):
    options = one_gib_node
    alone = _gather.gather(options)
    own = alone['class_record']
    assert own['cold_start'] and alone['class_peers_used'] == 0
    assert any("what the gke formula reserves" in line for line in alone['recommendation']['explanation'])
    # A peer of this node's class with history, reserving more than the formula; and one of another class.
    warm = dict(own, cold_start=False, reserved_memory_bytes=alone['recommendation']['reserved_memory_bytes'] + 512 * MIB,
                reserved_millicores=alone['recommendation']['reserved_millicores'] + 100,
                jumps=dict(own['jumps'], windows=3, memory_bytes=0, millicores=0))
    other = dict(warm, node_class=[own['node_class'][0] + 64, own['node_class'][1]])
    assert _gather.gather(dict(options, class_peers=[other]))['class_peers_used'] == 0
    pooled = _gather.gather(dict(options, class_peers=[other, warm]))
    assert pooled['class_peers_used'] == 1
    assert any('the largest reservation recommended for the 1 node(s) of the same class' in line
               for line in pooled['recommendation']['explanation'])
    assert not any('what the gke formula reserves' in line for line in pooled['recommendation']['explanation'])
    assert pooled['class_record']['cold_start']  # it still offers no reservation of its own to the class


def test_the_class_decision_decides_again_from_the_first_calls_basis_without_measuring(one_gib_node, monkeypatch):
    options = one_gib_node
    alone = _gather.gather(options)
    own = alone['class_record']
    warm = dict(own, cold_start=False, reserved_memory_bytes=alone['recommendation']['reserved_memory_bytes'] + 512 * MIB,
                reserved_millicores=alone['recommendation']['reserved_millicores'] + 100,
                jumps=dict(own['jumps'], windows=3, memory_bytes=0, millicores=0))

    def not_again(*_args, **_kwargs):
        raise AssertionError('the node was measured again')
    for name in ('measure', 'read_history', 'record'):
        monkeypatch.setattr(_gather, name, not_again)
    pooled = _gather.gather(dict(options, class_peers=[warm], basis=alone['basis']))
    assert pooled['class_peers_used'] == 1
    assert any('the largest reservation recommended for the 1 node(s) of the same class' in line
               for line in pooled['recommendation']['explanation'])
    # The first call's figures (a second sample of a busy machine's CPU would differ), decided again with the class.
    assert pooled['memory'] == alone['memory'] and pooled['cpu'] == alone['cpu']
    assert pooled['recommendation']['reserved_memory_bytes'] > alone['recommendation']['reserved_memory_bytes']
    assert pooled['plan']['apply']['kube_reserved'] == pooled['decision']['kube_reserved']
    # The basis handed back is this node's own, before pooling: a third call pools it the same way.
    assert pooled['basis'] == alone['basis']


STANDIN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "standin", "kubelet.py")


@pytest.mark.parametrize('installed,cgroup_version,config,refused', [
    ('v1.35.0', 'v1', {}, True),
    ('v1.35.0', 'v1', {'failCgroupV1': False}, False),
    ('v1.35.0', 'v2', {}, False),
    ('v1.34.2', 'v1', {}, False),
])
def test_the_kubelet_binary_is_asked_its_version_and_a_1_35_kubelet_on_v1_is_refused(
        tmp_path, monkeypatch, installed, cgroup_version, config, refused):
    # The stand-in kubelet answers --version from its node's version file, as an upgraded package would.
    version_file = tmp_path / 'version'
    version_file.write_text(installed + '\n')
    # The probe runs with a minimal environment of its own: the stand-in's variable is put there.
    monkeypatch.setitem(_kubelet_process.PROBE_ENVIRONMENT, 'STANDIN_VERSION', str(version_file))
    # Run as a kubelet is (pid 101 of a /proc): its interpreter is what /proc/101/exe names, its script verified.
    argv = [sys.executable, os.path.realpath(STANDIN), '--config=/var/lib/kubelet/config.yaml']
    proc = tmp_path / 'proc'
    (proc / '101').mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), str(proc / '101' / 'exe'))
    kubelet = {'pid': 101, 'argv': argv, 'config_dir': None}
    not_found = []
    result = _kubelet_version.kubelet_version(kubelet, config, cgroup_version, not_found, str(proc))
    assert not_found == []
    assert result['text'] == 'Kubernetes ' + installed
    assert result['git_version'] == installed
    assert bool(result['refusals']) == refused
    if refused:
        assert 'failCgroupV1' in result['refusals'][0]
    # A kubelet runs: on cgroup v1 the module warns of cgroup v1's end of life.
    assert (_version_rules.END_OF_LIFE in result['warnings']) == (cgroup_version == 'v1')


@pytest.mark.parametrize('kubelet,config,warned', [
    ({'pid': None, 'argv': None, 'config_path': None, 'config_dir': None}, {}, False),
    ({'pid': None, 'argv': None, 'config_path': '/var/lib/kubelet/config.yaml', 'config_dir': None}, {'kind': 'KubeletConfiguration'}, True),
])
def test_the_cgroup_v1_warnings_are_given_only_where_a_kubelet_is_found(monkeypatch, kubelet, config, warned):
    # A machine without a kubelet (make report on a workstation, issue 46) gets no warning about the kubelet's
    # failCgroupV1 or cgroup v1's end of life; a node with a kubelet config but no process still gets both.
    monkeypatch.setattr(_kubelet_version.shutil, 'which', lambda name: None)
    result = _kubelet_version.kubelet_version(kubelet, config, 'v1', [])
    assert bool(result['warnings']) == warned
    if warned:
        assert _version_rules.END_OF_LIFE in result['warnings']
        assert any('failCgroupV1' in warning for warning in result['warnings'])


def test_no_kubelet_binary_is_said_and_refuses_nothing(monkeypatch):
    monkeypatch.setattr(_kubelet_version.shutil, 'which', lambda name: None)
    not_found = []
    result = _kubelet_version.kubelet_version({'pid': None, 'argv': None, 'config_dir': None}, {}, 'v2', not_found)
    assert result['version'] is None and result['refusals'] == []
    assert not_found and 'no kubelet binary' in not_found[0]


def test_memory_min_on_the_reserved_group_is_costed_and_the_starved_daemons_get_a_validated_proposal(v2_node, tmp_path):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
    from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.guest_v2_protection import CAPTURE
    # What the kubelet leaves with MemoryQoS on and system-reserved enforced: memory.min on systemReservedCgroup.
    cgroup_v2.write(os.path.join(v2_node, 'system.slice', 'memory.min'), '%d\n' % (384 * MIB))
    cgroup_v2.write(os.path.join(v2_node, 'system.slice', 'memory.low'), '0\n')
    # The guest's system.slice starved for CPU (tests/unit/fixtures/guest_v2_protection.py).
    cgroup_v2.write(os.path.join(v2_node, 'system.slice', 'cpu.pressure'), CAPTURE['starved']['system.slice']['cpu.pressure'])
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"cgroupDriver": "systemd", "systemReservedCgroup": "/system.slice", '
                      '"featureGates": {"MemoryQoS": true}, "memoryReservationPolicy": "TieredReservation", '
                      '"systemReserved": {"memory": "1Gi"}, "enforceNodeAllocatable": ["pods", "system-reserved"]}')
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    protection = facts['memory_protection']
    assert protection['memory_qos_enabled'] is True and protection['memory_reservation_policy'] == 'TieredReservation'
    # system.slice's working set is 210 MiB (the tree's anon + active file): 174 MiB protected beyond use.
    assert protection['cost']['protected_beyond_use_bytes'] == 384 * MIB - 210 * MIB
    recommended = _quantity.quantity_value(_quantity.parse_quantity(facts['recommendation']['system_reserved']['memory']))
    assert protection['cost']['after_apply']['groups'][0]['memory_min_bytes'] == recommended
    assert any(line.startswith('memory.min beyond use of /system.slice') for line in facts['recommendation']['explanation'])
    # system-reserved is enforced already (its CPU weight written): nothing to propose, said so.
    assert facts['enforcement_proposal']['proposed'] is False
    assert any('already enforced' in reason for reason in facts['enforcement_proposal']['reasons'])

    # The same node enforcing pods only, with system.slice's weight set to 1 and its daemons starved: proposed.
    cgroup_v2.write(os.path.join(v2_node, 'system.slice', 'cpu.weight'), '1\n')
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"cgroupDriver": "systemd", "systemReserved": {"memory": "1Gi", "cpu": "1"}}')
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0, 'kubelet_config_path': str(config),
                           'history': False})
    proposal = facts['enforcement_proposal']
    assert proposal['proposed'] is True, proposal['reasons']
    assert proposal['changes'] == {'enforceNodeAllocatable': ['pods', 'system-reserved-compressible'],
                                   'systemReservedCgroup': '/system.slice'}
    assert proposal['validation']['refusal'] is None
    assert proposal['starved'][0]['cgroup'] == '/system.slice'


def test_the_version_probe_passes_none_of_our_environment_and_no_shell(monkeypatch):
    """A variable of the module's (LD_PRELOAD, PYTHONPATH, the become user's PATH) must not reach what root runs."""
    monkeypatch.setenv('LD_PRELOAD', '/home/u/evil.so')
    printed = _kubelet_version.run_version_command([sys.executable, '-c', 'import os, sys; print(sorted(os.environ)); '
                                                    'print(sys.stdin.read())'])
    assert printed.splitlines() == [repr(sorted(_kubelet_process.PROBE_ENVIRONMENT)), '']


def test_the_history_says_where_it_came_from_and_since_when(v2_node, tmp_path):
    # Issue 36: every report says where a figure came from; the source is the facts' own field, which the
    # Prometheus reader sets to 'prometheus' for the samples it hands over.
    import json
    measurement = _measured(v2_node, tmp_path)
    now = time.time()
    (tmp_path / 'history.jsonl').write_text(''.join(
        json.dumps({'t': now - 7200 + 60 * i, 'non_pod_bytes': 700 * MIB, 'non_pod_millicores': 100,
                    'source': 'sampler'}) + '\n' for i in range(10)))
    history, recommendation, _decision = _recommend_from(tmp_path / 'history.jsonl', v2_node, tmp_path, measurement, now)
    assert (history['source'], history['since']) == ('node', now - 7200)
    assert recommendation['basis']['history_source'] == 'node'
    empty, recommendation, _decision = _recommend_from(tmp_path / 'absent.jsonl', v2_node, tmp_path, measurement, now)
    assert (empty['source'], empty['since'], empty['span_seconds']) == ('none', None, 0)
    assert recommendation['cold_start']['takes_over_at'] is None  # nothing records: the floor would stay


def test_history_source_is_none_without_a_sample():
    assert _gather.history_source([], 'prometheus') == 'none'
    assert _gather.history_source([{'t': 1}], 'prometheus') == 'prometheus'


def _prometheus(now, days, peak_bytes, reason=None):
    """A history as the prometheus_history action hands it over: minute steps, ``peak_bytes`` an hour before now."""
    start = int(now - days * 86400) // 60 * 60
    samples = [[t, peak_bytes if abs(t - (now - 3600)) < 60 else peak_bytes // 2] for t in range(start, int(now), 60)]
    return {'source': 'prometheus', 'url': 'http://prom:9090', 'node': 'n1', 'query': 'q', 'step_seconds': 60,
            'samples': [] if reason else samples, 'span_seconds': 0 if reason else samples[-1][0] - samples[0][0],
            'reason': reason, 'problems': []}


def test_prometheus_history_is_used_where_it_spans_longer_and_never_when_unusable(v2_node, tmp_path):
    measurement = _measured(v2_node, tmp_path)
    mem_total = measurement['memory']['mem_total_bytes']
    now = time.time()
    options = {'history_path': str(tmp_path / 'none.jsonl')}  # no file: the node's own history is this reading alone
    alone_history, alone, _decision = _decide_with(options, measurement, now)
    assert alone_history['source'] == 'none' and alone_history['basis']['history_source'] == 'none'

    peak = mem_total * 2 // 5  # above this machine's reading, below MemTotal
    history, used, _decision = _decide_with(dict(options, prometheus_history=_prometheus(now, 3, peak)), measurement,
                                            now)
    assert history['source'] == 'prometheus' and history['prometheus']['used'] is True
    assert history['basis']['history_source'] == 'prometheus' and history['basis']['history_span_seconds'] > 2.9 * 86400
    assert history['basis']['non_pod_bytes'] == max(peak, measurement['memory']['non_pod_bytes'])
    assert any('history read from Prometheus' in line for line in used['explanation'])

    for bad in (_prometheus(now, 3, peak, reason='cannot reach http://prom:9090/api/v1/query_range: refused'),
                _prometheus(now, 3, mem_total + 1)):  # a value the node cannot hold: another node's, or not memory
        history, fallback, _decision = _decide_with(dict(options, prometheus_history=bad), measurement, now)
        assert history['source'] == 'none' and history['prometheus']['used'] is False
        assert history['prometheus']['reason'] and any('its history is not used' in p for p in history['problems'])
        assert fallback['reserved_memory_bytes'] == alone['reserved_memory_bytes']
        assert any('gave no usable history' in line for line in fallback['explanation'])


def test_with_prometheus_history_a_cpu_need_is_judged_on_the_node_s_own_readings(v2_node, tmp_path):
    """Prometheus gives memory: each of its samples carries the node's CPU percentile, this run's 5 s reading when it
    is the peak. Whether a CPU need is sustained (_cpu_sustained) rests on the node's own readings instead."""
    import json
    measurement = json.loads(json.dumps(_measured(v2_node, tmp_path)))  # a copy: measure()'s own stays as measured
    measurement['cpu']['non_pod_millicores'] = 900  # this run's reading, on a busy moment
    now = float(int(time.time()))  # whole seconds: the reading a day back is exactly at the window's edge, left out
    (tmp_path / 'own.jsonl').write_text(''.join(
        json.dumps({'t': now - 2 * 86400 + 60 * i, 'non_pod_bytes': 64 * MIB, 'non_pod_millicores': 100,
                    'source': 'sampler'}) + '\n' for i in range(2 * 1440)))
    history, _recommendation, _decision = _decide_with(
        {'history_path': str(tmp_path / 'own.jsonl'), 'prometheus_history': _prometheus(now, 3, 128 * MIB)},
        measurement, now)
    assert history['basis']['history_source'] == 'prometheus' and history['basis']['non_pod_millicores'] == 900
    sustained = history['basis']['cpu_sustained']
    assert (sustained['millicores'], sustained['readings'], sustained['latest_millicores']) == (100, 1440, 900), sustained
    assert 'cpu_sustained' not in history  # moved into the basis, not left in the facts' history


def test_gather_says_which_history_it_rests_on(v2_node, tmp_path):
    now = time.time()
    facts = _gather.gather({'cgroup_root': v2_node, **NO_HOST_PROCESSES, 'sample_seconds': 0,
                            'history_path': str(tmp_path / 'none.jsonl'), 'kubelet_config_path': str(tmp_path / 'n.yaml'),
                            'prometheus_history': _prometheus(now, 2, 64 * MIB)}, sleep=lambda _s: None)
    assert facts['history']['source'] == 'prometheus'
    assert facts['basis']['history']['basis']['history_source'] == 'prometheus'


def test_the_basis_copy_is_equal_and_shares_nothing_mutable_with_what_it_copies():
    name = b'odd-\xff.scope'.decode('utf-8', 'surrogateescape')  # a cgroup's name of any bytes
    plain = {'groups': [name, {'t': 1.5, 'n': 1 << 70, 'none': None, 'pair': (1, 'a')}], 'flag': True}
    point = collections.namedtuple('Point', 'x y')(1, [2])  # neither a dict nor a list: copied by copy.deepcopy
    for value in ({'plain': plain}, {'point': point, 'plain': plain}):
        copied = _gather._copied(value)
        assert copied == value and isinstance(copied, dict)
        copied['plain']['groups'][1]['t'] = 0
        assert plain['groups'][1]['t'] == 1.5
    assert _gather._copied({'point': point})['point'].y is not point.y


def _control_plane_config(tmp_path):
    """A kubelet config whose staticPodPath holds kubeadm's kube-apiserver manifest (shortened)."""
    manifests = tmp_path / 'manifests'
    manifests.mkdir()
    (manifests / 'kube-apiserver.yaml').write_text(
        'apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver, namespace: kube-system}\nspec:\n  containers:\n'
        '  - command: [kube-apiserver, --advertise-address=10.0.0.10]\n    image: registry.k8s.io/kube-apiserver:v1.31.0\n'
        '    name: kube-apiserver\n')
    config = tmp_path / 'config.json'
    config.write_text(json.dumps({'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
                                  'staticPodPath': str(manifests)}))
    return str(config)


def test_a_control_plane_node_is_detected_floored_and_pools_only_with_control_planes(one_gib_node, tmp_path):
    options = dict(one_gib_node, kubelet_config_path=_control_plane_config(tmp_path))
    alone = _gather.gather(options)
    assert alone['control_plane']['detected'] is True and alone['control_plane']['components'] == ['kube-apiserver']
    assert alone['class_record']['control_plane'] is True
    floor = alone['recommendation']['control_plane_floor']
    assert floor['memory_bytes'] == GIB and floor['millicores'] == 500
    assert alone['recommendation']['reserved_millicores'] >= 500
    assert alone['recommendation']['reserved_memory_bytes'] >= GIB
    assert any(line.startswith('control-plane node (the static pods in ') for line in alone['recommendation']['explanation'])
    own = alone['class_record']
    warm = dict(own, cold_start=False, reserved_memory_bytes=alone['recommendation']['reserved_memory_bytes'] + 512 * MIB,
                reserved_millicores=alone['recommendation']['reserved_millicores'] + 100,
                jumps=dict(own['jumps'], windows=3, memory_bytes=0, millicores=0))
    worker = dict(warm, control_plane=False)
    # A worker of the same size reserving more: not this node's class; a control-plane peer is.
    assert _gather.gather(dict(options, class_peers=[worker]))['class_peers_used'] == 0
    assert _gather.gather(dict(options, class_peers=[worker, warm]))['class_peers_used'] == 1
    # The worker side: the same node without the manifests does not pool with the control-plane peer.
    plain = _gather.gather(dict(one_gib_node, class_peers=[warm]))
    assert plain['control_plane']['detected'] is False and plain['class_peers_used'] == 0
    assert plain['recommendation']['control_plane_floor'] is None


def test_a_control_plane_node_does_not_rest_its_template_on_a_class_history_of_workers(one_gib_node, tmp_path):
    now = time.time()
    history = dict(_prometheus(now, 3, GIB), **{'class': '16gib-4cpu', 'label': None, 'members': ['w1', 'w2'],
                                                'nodes': 2, 'covered_seconds': 3 * 86400, 'window_seconds': 7 * 86400})
    control_plane = _gather.gather(dict(one_gib_node, kubelet_config_path=_control_plane_config(tmp_path),
                                        class_history=history))
    assert control_plane['class_template']['used'] is False
    assert 'a control-plane node' in control_plane['class_template']['reason']
    worker = _gather.gather(dict(one_gib_node, class_history=history))
    assert worker['class_template']['used'] is True


def _peer_profile(days=4, intercept_mib=400, slope_mib=12):
    """A class peer's pods profile: ``days`` of readings a minute apart, pods 10 to 60, exactly the line given."""
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _class_model
    start = time.time() - days * 86400
    readings = [{'t': start + index * 60, 'pods': 10 + index % 51, 'non_pod_millicores': 100,
                 'non_pod_bytes': (intercept_mib + slope_mib * (10 + index % 51)) * MIB}
                for index in range(int(days * 1440))]
    return _class_model.profile(readings)


def test_a_cold_node_takes_its_class_model_from_its_peers_profiles_and_a_broken_one_is_left_out(one_gib_node):
    options = one_gib_node
    alone = _gather.gather(options)
    own = alone['class_record']
    assert own['pods_profile'] and own['max_pods'] == 110
    # Alone, its one reading is no class with enough data: the formula stays its prior.
    assert alone['recommendation']['cold_start']['floor'] == 'gke'
    peer = dict(own, cold_start=False, pods_profile=_peer_profile())
    broken = dict(own, cold_start=False, pods_profile=dict(_peer_profile(), buckets=[[1, 2, 3]]))
    pooled = _gather.gather(dict(options, class_peers=[peer, broken]))
    model = pooled['recommendation']['class_model']
    assert model['cold'] and model['model']['nodes'] == 2 and model['model']['enough']
    assert model['model']['memory']['slope'] == pytest.approx(12 * MIB, rel=0.02)
    assert pooled['recommendation']['cold_start']['floor'] == 'class model'
    # 400 MiB + 12 MiB x 110 pods, the envelope a bucket's width of pods above the line.
    assert 1720 * MIB <= pooled['recommendation']['reserved_memory_bytes'] <= 1800 * MIB
    assert any('pods profile is not used' in problem for problem in pooled['history']['problems'])
