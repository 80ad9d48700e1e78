"""tests_invalid_input: bad reservations options fail before any task runs on the node, naming the option.

The node is a loopback port nothing listens on (127.0.0.1:9): any task that tried to reach it would end the play
UNREACHABLE, so a failure that names the option proves the check ran first and touched nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def run_role(tmp_path, bad):
    inventory = tmp_path / 'inventory.ini'
    # A node nothing answers for, on loopback (port 9, where nothing listens): reaching it would fail.
    inventory.write_text('node ansible_host=127.0.0.1 ansible_port=9 ansible_connection=ssh ansible_user=nobody '
                         "ansible_ssh_common_args='-o ConnectTimeout=3 -o BatchMode=yes'\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
               '-e', json.dumps(bad), 'tests/playbooks/tests_invalid_input.yml']
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300)


BAD = {
    'reservations_percentile': (150, 'must be > 0 and <= 100'),
    'reservations_max_reserved_fraction': (0, 'must be > 0 and < 1'),
    'reservations_memory_headroom_percent': (-1, 'must be >= 0'),
    'reservations_cpu_headroom_min_millicores': (-50, 'must be >= 0'),
    'reservations_change_threshold_percent': (-5, 'must be >= 0'),
    'reservations_history_window': ('7 days', 'must be a Go duration'),
    'reservations_stabilization_window': ('a day', 'must be a Go duration'),
    'reservations_min_reserved': ('lots', 'must be a Kubernetes quantity'),
    'reservations_kubepods_margin': ('-1Gi', 'must not be negative'),
    'reservations_health_timeout_seconds': (0, 'must be >= 1'),
}


@pytest.mark.parametrize('bad', [{'reservations_percentile': 0}, {'reservations_max_reserved_fraction': 2},
                                 {name: value for name, (value, _rule) in BAD.items()}],
                         ids=['percentile-0', 'fraction-2', 'all-at-once'])
def test_bad_options_fail_before_the_node_is_touched(tmp_path, bad):
    # One playbook run per case (each costs seconds); the last case proves every rule names its option at once.
    result = run_role(tmp_path, bad)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert 'UNREACHABLE' not in output and 'unreachable=0' in output, output[-3000:]
    assert 'Check every option before any task touches the node' in output
    assert 'Measure the node and decide' not in output
    for name, value in bad.items():
        rule = BAD.get(name, (None, 'must be > 0'))[1]
        assert '%s: %r %s' % (name, value, rule) in output, (name, output[-3000:])
