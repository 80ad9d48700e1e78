"""node_reservation_facts' main() in-process, with module args, as the model collections test their modules."""

from __future__ import annotations

import functools

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NODE_RESERVATION_FACTS_OPTIONS
from ansible_collections.nodealloc.kubelet.plugins.modules import node_reservation_facts
from ansible_collections.nodealloc.kubelet.tests.unit.utils.module_harness import run_module
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

MIB = 1024 * 1024


@pytest.fixture
def run(monkeypatch):
    """run(args) -> the result of node_reservation_facts's main() with those module args."""
    return functools.partial(run_module, node_reservation_facts.main, monkeypatch=monkeypatch)


@pytest.fixture
def node(tmp_path):
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', anon_bytes=600 * MIB, active_file_bytes=50 * MIB,
                         inactive_file_bytes=300 * MIB)
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"kubeReserved": {"memory": "1Gi", "cpu": "100m"}}')
    # Program names no process can have (a name is a file's base name, never with '/'): a kubelet the host runs
    # (tests/integration starts one) must not become this node's.
    return {'cgroup_root': root, 'kubelet_config_path': str(config), 'sample_seconds': 0,
            'history_path': str(tmp_path / 'history.jsonl'),
            'kubelet_process_names': ['no/kubelet'], 'runtime_process_names': ['no/runtime']}


def test_check_mode_measures_and_records_nothing(run, node, tmp_path):
    result = run(dict(node, _ansible_check_mode=True))
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is False
    assert result['memory']['kubepods_working_set_bytes'] == 650 * MIB
    assert result['current']['kube_reserved'] == {'memory': '1Gi', 'cpu': '100m'}
    assert result['history']['recorded'] is False
    assert not (tmp_path / 'history.jsonl').exists()


def test_a_real_run_writes_nothing_unless_asked_to_record(run, node, tmp_path):
    result = run(node)
    assert result['changed'] is False and result['history']['recorded'] is False
    assert not (tmp_path / 'history.jsonl').exists()


def test_a_recording_run_appends_one_reading_and_says_changed(run, node, tmp_path):
    result = run(dict(node, record=True))
    assert result['changed'] is True and result['history']['recorded'] is True
    assert (tmp_path / 'history.jsonl').read_text().count('\n') == 1


@pytest.mark.parametrize('args,recorded', [
    ({'install_sampler': False}, True),  # the reservations role without its sampler: its runs build the history
    ({'install_sampler': True}, False),  # the sampler records every minute
    ({'install_sampler': False, 'record': False}, False),
])
def test_left_unset_record_follows_whether_a_sampler_records(run, node, tmp_path, args, recorded):
    result = run(dict(node, **args))
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is recorded and result['history']['recorded'] is recorded
    assert (tmp_path / 'history.jsonl').exists() is recorded


def test_the_openshift_version_option_reaches_the_formula(run, node):
    version_1 = run(dict(node, history=False, openshift_sizing_version=1))['formulas']['openshift']
    assert version_1['notes'][0] == 'sizing version 1'


@pytest.mark.parametrize('bad,words', [
    ({'percentile': 150}, 'percentile: 150.0 must be > 0 and <= 100'),
    ({'max_reserved_fraction': 0}, 'max_reserved_fraction: 0.0 must be > 0 and < 1'),
    ({'max_reserved_fraction': 2}, 'max_reserved_fraction: 2.0 must be > 0 and < 1'),
    ({'memory_headroom_percent': -10}, 'memory_headroom_percent: -10.0 must be >= 0'),
    ({'change_threshold_percent': -5}, 'change_threshold_percent: -5.0 must be >= 0'),
    ({'history_window': '7 days'}, "history_window: '7 days' must be a Go duration"),
    ({'stabilization_window': 'soon'}, "stabilization_window: 'soon' must be a Go duration"),
    ({'min_reserved': 'lots'}, "min_reserved: 'lots' must be a Kubernetes quantity"),
    ({'sample_seconds': -1}, 'sample_seconds: -1.0 must be >= 0'),
    ({'policy': 'azure'}, 'value of policy must be one of'),
])
def test_bad_options_fail_before_measuring(run, node, tmp_path, bad, words):
    result = run(dict(node, **bad))
    assert result['failed'] is True
    assert words in result['msg'], result['msg']
    assert not (tmp_path / 'history.jsonl').exists()


def test_a_reading_that_cannot_be_recorded_is_an_ansible_warning(run, node, tmp_path, monkeypatch):
    from ansible.module_utils import basic
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, text: warnings.append(text))
    blocker = tmp_path / 'not-a-directory'
    blocker.write_text('')
    history = blocker / 'history.jsonl'  # under a regular file: unwritable even for root
    result = run(dict(node, history_path=str(history), record=True))
    assert result.get('failed') is not True, result.get('msg')
    assert result['changed'] is False and result['history']['recorded'] is False
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith('record=true, but %s: this reading (t=' % history)
    assert 'was not recorded' in warnings[0] and warnings[0] == 'record=true, but ' + result['history']['not_recorded']


def test_a_recorded_reading_warns_nothing(run, node, monkeypatch):
    from ansible.module_utils import basic
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, text: warnings.append(text))
    result = run(dict(node, record=True))
    assert result['changed'] is True and result['history']['recorded'] is True
    assert warnings == [] and result['history']['not_recorded'] is None


def test_the_deprecated_jump_headroom_factor_is_ignored_with_a_deprecation_warning(run, node):
    # Issue 29 removed the climb rule it scaled: set, it changes nothing, and the module's argument spec (from
    # _option_specs) makes AnsibleModule name it deprecated, removed in 1.0.0. The spec's validator is asked
    # directly: the process-wide deprecation list depends on what other tests ran.
    # The percent rule (issue 38 made the jumps rule the default), whose arithmetic reads off one run's basis.
    percent = dict(node, _ansible_check_mode=True, memory_headroom_rule='percent', memory_headroom_min_bytes=100 * MIB)
    plain = run(percent)
    with_factor = run(dict(percent, jump_headroom_factor=3.0))
    # The host's own memory moves between the two runs: compare the rule, not the figures.
    for result in (plain, with_factor):
        recommendation = result['recommendation']
        peak = recommendation['basis']['non_pod_bytes']
        assert recommendation['memory_headroom_bytes'] == max(100 * MIB, -(-peak * 50 // 100))
    validator = ArgumentSpecValidator(NODE_RESERVATION_FACTS_OPTIONS)
    deprecations = validator.validate({'jump_headroom_factor': 3.0})._deprecations
    assert [(entry['version'], entry['collection_name']) for entry in deprecations
            if 'jump_headroom_factor' in entry['msg']] == [('1.0.0', 'nodealloc.kubelet')]
    assert not validator.validate({})._deprecations


def test_the_invocation_names_the_class_s_records_and_the_basis_by_their_size_not_their_content(run, node):
    # Issue 45: the role registers every host's result; ansible-core would put every option in its invocation, so a
    # class of 1,000 nodes kept 1,000 copies of about a megabyte of peer records on the controller and in AWX's events.
    first = run(node)
    peer = first['class_record']
    again = run(dict(node, basis=first['basis'], class_peers=[peer] * 50))
    assert again.get('failed') is not True, again.get('msg')
    args = again['invocation']['module_args']
    assert args['class_peers'] == '(list of 50 items, not repeated in the invocation)'
    assert args['basis'] == '(dict of %d items, not repeated in the invocation)' % len(first['basis'])
    assert args['prometheus_history'] is None and args['cgroup_root'] == node['cgroup_root']
    # The decision still took them (the 50 records are of its own class), and the invocation stays small.
    assert again['class_peers_used'] == 50
    assert len(str(again['invocation'])) < len(str(peer)) * 5
    # A failure's invocation is summarized the same way.
    failed = run(dict(node, basis=first['basis'], class_peers=[peer] * 50, sample_seconds=-1))
    assert failed['failed'] is True
    assert failed['invocation']['module_args']['class_peers'] == '(list of 50 items, not repeated in the invocation)'


@pytest.mark.parametrize('config_max_pods,option,expected', [
    (None, None, (110, 'default')),   # nothing read: the kubelet's default, assumed
    (58, None, (58, 'kubelet')),
    (58, 30, (30, 'option')),
])
def test_the_class_record_says_where_its_max_pods_came_from(run, node, tmp_path, config_max_pods, option, expected):
    # Issue 45 review: the templates set maxPods only from a given one, never from the assumed 110.
    if config_max_pods is not None:
        (tmp_path / 'config.json').write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": '
                                              '"KubeletConfiguration", "maxPods": %d}' % config_max_pods)
    result = run(dict(node, max_pods=option) if option else node)
    assert result.get('failed') is not True, result.get('msg')
    record = result['class_record']
    assert (record['max_pods'], record['max_pods_source']) == expected
