"""Every nodealloc path on a node derives from one place: _state_dir in Python, one variable in the role."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once
from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit

ROLE_FILES = {
    '_reservations_sampler_state_file': _state_dir.SAMPLER_STATE_FILE,
    '_reservations_decision_file': _state_dir.DECISION_FILE,
    '_reservations_applied_file': _state_dir.APPLIED_FILE,
}


@pytest.mark.parametrize('history_path', [_state_dir.HISTORY_PATH, '/srv/nodealloc-b/history.jsonl'])
def test_the_roles_state_files_follow_its_history_under_the_names_the_sampler_reads(history_path):
    context = sampler_unit.role_context(reservations_history_path=history_path)
    for variable, name in ROLE_FILES.items():
        assert context[variable] == os.path.join(os.path.dirname(history_path), name), variable
    settings, _sampler_dir = sampler_unit.settings(reservations_history_path=history_path)
    # The sampler finds the applied reservation beside the decision file the role gives it.
    assert _state_dir.beside(settings['decision_path'], _sample_once.RESERVATION_FILE) == context['_reservations_applied_file']
    assert settings['state_path'] == context['_reservations_sampler_state_file']


def test_the_defaults_are_the_roles_defaults():
    context = sampler_unit.role_context()
    assert context['reservations_history_path'] == _state_dir.HISTORY_PATH == _sample_once.DEFAULTS['history_path']
    assert context['_reservations_decision_file'] == _sample_once.DEFAULTS['decision_path']
    assert context['_reservations_sampler_state_file'] == _sample_once.DEFAULTS['state_path']


def test_the_node_lock_stays_put_when_the_history_moves():
    # The lock guards the node's one kubelet: runs with different history files must still exclude each other, so
    # neither the step's default nor the sampler's follows the history (see _state_dir's docstring).
    settings, _sampler_dir = sampler_unit.settings(reservations_history_path='/srv/nodealloc-b/history.jsonl')
    assert 'step_dir' not in settings
    # The sampler looks at the lock the on-node step takes by default.
    assert _sample_once.DEFAULTS['step_dir'] == _file_io.DEFAULT_NODE_LOCK_DIR
