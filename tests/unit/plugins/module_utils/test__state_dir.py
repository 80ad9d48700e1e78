"""Every nodealloc path on a node derives from one place: _state_dir's names, beside the history (_node_plan.state_paths)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once
from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit


@pytest.mark.parametrize('history_path', [_state_dir.HISTORY_PATH, '/srv/nodealloc-b/history.jsonl'])
def test_the_sampler_task_passes_the_plans_state_paths(history_path):
    # The role builds no path: tasks/sampler.yml gives the sampler the files the plan named beside the history.
    paths = sampler_unit.role_context(reservations_history_path=history_path)['_reservations_plan']['paths']
    settings, _sampler_dir = sampler_unit.settings(reservations_history_path=history_path)
    assert (settings['history_path'], settings['state_path'], settings['decision_path']) == (
        history_path, paths['sampler_state'], paths['decision'])
    assert os.path.dirname(settings['state_path']) == os.path.dirname(history_path)
    # The sampler finds the applied reservation, which the step writes and removes, beside that decision file.
    assert _state_dir.beside(settings['decision_path'], _sample_once.RESERVATION_FILE) == paths['applied']


def test_the_defaults_are_the_roles_defaults():
    settings, _sampler_dir = sampler_unit.settings()
    assert settings['history_path'] == _state_dir.HISTORY_PATH == _sample_once.DEFAULTS['history_path']
    assert settings['decision_path'] == _sample_once.DEFAULTS['decision_path']
    assert settings['state_path'] == _sample_once.DEFAULTS['state_path']


def test_the_node_lock_stays_put_when_the_history_moves():
    # The lock guards the node's one kubelet: runs with different history files must still exclude each other, so
    # neither the step's default nor the sampler's follows the history (see _state_dir's docstring).
    settings, _sampler_dir = sampler_unit.settings(reservations_history_path='/srv/nodealloc-b/history.jsonl')
    assert 'step_dir' not in settings
    # The sampler looks at the lock the on-node step takes by default.
    assert _sample_once.DEFAULTS['step_dir'] == _file_io.DEFAULT_NODE_LOCK_DIR
