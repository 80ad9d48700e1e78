"""The on-node step's sequence against a scripted kubelet: the status files it writes after the outcome.

The kubelet is a fake ``_step_primitives.Node`` (restart, unit state, /healthz); config, backups, journal and status
files are real files in a temporary directory. The full module (a process, a scripted systemctl, SIGKILL) is
tests/integration/test_rollout_step_module.py.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_sequence
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_primitives as step
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import plant_link, untouched, victim

OLD = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
systemReserved:
  memory: 100Mi
"""
# What the plan's status documents keep for the sampler (_node_plan.status; values as a node's facts).
DECISION = {'action': 'increase', 'eviction_hard_memory_bytes': 104857600,
            'recommended_kubepods_memory_limit_bytes': 3221225472}
APPLIED = {'reserved_memory_bytes': 1073741824, 'memory_headroom_bytes': 134217728}


class FakeKubelet(step.Node):
    """Healthy after every restart unless ``healthy`` says otherwise; counts restarts."""

    healthy = True
    restarts = 0

    def __init__(self, unit, healthz_url, limit_file=None):
        super().__init__(unit, healthz_url, limit_file, clock=lambda: 0.0, sleep=lambda seconds: None)

    def restart(self):
        type(self).restarts += 1
        return None

    def unit_state(self):
        return {'active_state': 'active', 'sub_state': 'running', 'main_pid': 100 + type(self).restarts,
                'n_restarts': 0}

    def healthz(self):
        return (True, "HTTP 200 'ok'") if type(self).healthy else (False, "HTTP 500 'refused'")


@pytest.fixture
def node(tmp_path, monkeypatch):
    monkeypatch.setattr(step, 'Node', FakeKubelet)
    monkeypatch.setattr(FakeKubelet, 'healthy', True)
    monkeypatch.setattr(FakeKubelet, 'restarts', 0)
    monkeypatch.setattr(_step_sequence, 'probe_node', lambda params: {})  # no capacity: nothing of the host is read
    (tmp_path / 'kubelet').mkdir()
    (tmp_path / 'kubelet' / 'config.yaml').write_text(OLD)
    params = {name: option['default'] for name, option in _option_specs.STEP_OPTIONS.items()}
    params.update({name: _option_specs.OPTIONS[name]['default'] for name in _option_specs.STEP_SHARED})
    params.update(path=str(tmp_path / 'kubelet' / 'config.yaml'), kube_reserved={'memory': '300Mi'},
                  system_reserved={'memory': '700Mi'}, kubepods_margin='0', state_dir=str(tmp_path / 'step'),
                  health_timeout=0, soak_seconds=0,
                  status={'on_success': [{'path': str(tmp_path / 'metrics' / 'decision.json'),
                                          'content': dict(DECISION, action='keep')},
                                         {'path': str(tmp_path / 'metrics' / 'applied.json'), 'content': APPLIED}],
                          'on_failure': [{'path': str(tmp_path / 'metrics' / 'decision.json'), 'content': DECISION}]})
    return {'tmp': tmp_path, 'params': params}


def run(node, check_mode=False, **overrides):
    result = {'changed': False, 'step': {'pid': 1, 'started': 'now', 'controller': 'test'}}
    _step_sequence.run(dict(node['params'], **overrides), check_mode, False, result)
    return result


def status_files(node):
    directory = node['tmp'] / 'metrics'
    return {name: json.loads((directory / name).read_text()) for name in sorted(os.listdir(directory))} \
        if directory.is_dir() else {}


def test_a_verified_step_writes_the_success_status_in_the_same_call(node):
    result = run(node)
    assert result['changed'] and result['health']['main_pid'] == 101
    assert status_files(node) == {'decision.json': dict(DECISION, action='keep'), 'applied.json': APPLIED}
    mode = stat.S_IMODE(os.stat(node['tmp'] / 'metrics' / 'applied.json').st_mode)
    assert mode == 0o644


def test_a_failed_step_restores_then_writes_the_failure_status(node):
    FakeKubelet.healthy = False
    with pytest.raises(step.StepError) as failure:
        run(node)
    assert 'Restored' in str(failure.value)
    assert (node['tmp'] / 'kubelet' / 'config.yaml').read_text() == OLD
    assert status_files(node) == {'decision.json': DECISION}


def test_a_step_that_changes_nothing_because_the_config_moved_says_the_change_is_still_pending(node):
    result = run(node, measured_reserved={'system_reserved': {'memory': '50Mi'}})
    assert not result['changed'] and 'changed since this node was measured' in result['msg']
    assert status_files(node) == {'decision.json': DECISION}


def test_a_refused_change_writes_the_failure_status_and_nothing_else(node):
    with pytest.raises(ValueError):
        run(node, system_reserved={'memory': '-1Mi'})
    assert (node['tmp'] / 'kubelet' / 'config.yaml').read_text() == OLD and FakeKubelet.restarts == 0
    assert status_files(node) == {'decision.json': DECISION}


def test_check_mode_writes_no_status(node):
    assert run(node, check_mode=True)['changed']
    assert status_files(node) == {} and FakeKubelet.restarts == 0


def test_without_status_the_step_writes_none(node):
    assert run(node, status=None)['changed']
    assert status_files(node) == {}


def test_a_status_file_that_cannot_be_written_fails_the_step_naming_it(node):
    (node['tmp'] / 'metrics').write_text('a file where the directory should be')
    with pytest.raises(NodeallocError) as failure:
        run(node)
    assert 'decision.json' in str(failure.value)
    assert yaml.safe_load((node['tmp'] / 'kubelet' / 'config.yaml').read_text())['systemReserved'] == {
        'memory': '700Mi'}  # the verified change stays


def test_a_restore_forgets_what_its_success_status_removes(node):
    # What the sampler must forget once the change is no longer in force (the plan's status.undo and status.restore).
    run(node)
    assert (node['tmp'] / 'metrics' / 'applied.json').exists()
    forget = {'on_success': [{'path': str(node['tmp'] / 'metrics' / 'applied.json'), 'state': 'absent'}],
              'on_failure': []}
    result = run(node, state='restored', status=forget)
    assert result['changed'] and result['status_changed'] == [str(node['tmp'] / 'metrics' / 'applied.json')]
    assert status_files(node) == {'decision.json': dict(DECISION, action='keep')}
    # Already forgotten: nothing to remove, nothing said.
    assert 'status_changed' not in run(node, state='restored', status=forget)


def kept_status(node, content):
    return {'on_success': [{'path': str(node['tmp'] / 'metrics' / 'decision.json'), 'content': content}]}


def test_kept_writes_only_the_status_and_reports_a_change_only_when_a_file_changes(node):
    (node['tmp'] / 'kubelet' / 'config.yaml').unlink()  # not read: nothing of the kubelet is looked at
    kept = dict(DECISION, action='keep')
    assert run(node, state='kept', status=kept_status(node, kept), check_mode=True)['changed']
    assert status_files(node) == {}  # check mode writes nothing
    first = run(node, state='kept', status=kept_status(node, kept))
    assert first['changed'] and first['status_changed'] == [str(node['tmp'] / 'metrics' / 'decision.json')]
    assert status_files(node) == {'decision.json': kept}
    written = os.stat(node['tmp'] / 'metrics' / 'decision.json')
    again = run(node, state='kept', status=kept_status(node, kept))
    assert not again['changed'] and 'status_changed' not in again  # idempotent: a second run changes nothing
    assert os.stat(node['tmp'] / 'metrics' / 'decision.json').st_ino == written.st_ino  # not even rewritten
    assert not run(node, state='kept', status=kept_status(node, kept), check_mode=True)['changed']
    assert run(node, state='kept', status=kept_status(node, DECISION))['changed']
    assert status_files(node) == {'decision.json': DECISION}
    assert FakeKubelet.restarts == 0 and not (node['tmp'] / 'step').exists()  # no restart, no node lock taken


@pytest.mark.parametrize('status,problem', [
    ({'on_sucess': []}, 'not on_sucess'),
    ({'on_success': [{'path': '/x'}]}, 'entries are {path, content'),
    ({'on_success': [{'path': '/x', 'content': 'text'}]}, 'entries are {path, content'),
    ({'on_failure': [{'path': 'relative.json', 'content': {}}]}, 'is not absolute'),
    ({'on_success': [{'path': '/x', 'state': 'present'}]}, 'or {path, state: absent}'),
    ({'on_success': [{'path': '/x', 'state': 'absent', 'content': {}}]}, 'or {path, state: absent}'),
    ({'on_success': [{'path': 'x', 'state': 'absent'}]}, 'is not absolute'),
])
def test_a_malformed_status_is_refused(status, problem):
    assert problem in _step_sequence.check_status(status)


def test_a_wellformed_status_passes():
    assert _step_sequence.check_status({'on_success': [{'path': '/a.json', 'content': {}}], 'on_failure': []}) is None
    assert _step_sequence.check_status({'on_success': [{'path': '/a.json', 'state': 'absent'}]}) is None
    assert _step_sequence.check_status(None) is None


def test_a_failed_step_whose_status_cannot_be_written_says_both(node):
    FakeKubelet.healthy = False
    (node['tmp'] / 'metrics').write_text('a file where the directory should be')
    with pytest.raises(NodeallocError) as failure:
        run(node)
    assert 'Restored' in str(failure.value) and 'the status file was not written' in str(failure.value)
    assert (node['tmp'] / 'kubelet' / 'config.yaml').read_text() == OLD


def test_a_link_at_a_status_file_is_refused_naming_it_and_its_target_untouched(node):
    # Issue 44: a status file is written at its own name, never through a link someone planted there.
    target = victim(str(node['tmp'] / 'root-only'))
    plant_link(str(node['tmp'] / 'metrics' / 'decision.json'), target)
    with pytest.raises(NodeallocError, match='decision.json is a symbolic link'):
        run(node)
    assert untouched(target)
