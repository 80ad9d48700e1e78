"""The on-node step's pieces: health and soak against a scripted node, restore rules, the node lock, /healthz."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_primitives as step
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import (
    needs_root, plant_link, untouched, users_file, victim)

CONFIG = b'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsystemReserved:\n  memory: 100Mi\n'


class ScriptedNode(step.Node):
    """A node whose unit state and /healthz follow a script indexed by simulated time."""

    def __init__(self, script, limit=None, limit_file=None):
        super().__init__('kubelet.service', 'http://127.0.0.1:10248/healthz', limit_file,
                         clock=self._clock, sleep=self._sleep)
        self.now = 0.0
        self.script = script  # list of (from_time, unit_state dict, (healthz_ok, seen))
        self.limit = limit

    def _clock(self):
        return self.now

    def _sleep(self, seconds):
        self.now += max(seconds, 0.1)

    def _current(self):
        return [entry for entry in self.script if entry[0] <= self.now][-1]

    def unit_state(self):
        return dict(self._current()[1])

    def healthz(self):
        return self._current()[2]

    def kubepods_limit(self):
        return self.limit


def unit(active='active', pid=100, restarts=0):
    return {'active_state': active, 'sub_state': 'running' if active == 'active' else 'auto-restart',
            'main_pid': pid, 'n_restarts': restarts}


def test_health_waits_for_all_three_and_soak_passes_when_nothing_moves():
    node = ScriptedNode([(0, unit('activating', 0), (False, 'no answer')), (3, unit(), (True, "HTTP 200 'ok'"))],
                        limit=1000, limit_file='/x/memory.max')
    state = step.wait_healthy(node, 1000, 60, 1)
    assert state['main_pid'] == 100 and state['healthy_after_seconds'] >= 3
    assert step.soak(node, state, 30, 2)['soak_seconds'] == 30


def test_health_timeout_says_what_it_waited_for_and_what_it_saw():
    node = ScriptedNode([(0, unit(), (False, "HTTP 500 'refused config'"))], limit=5000, limit_file='/x/memory.max')
    with pytest.raises(step.StepError) as failure:
        step.wait_healthy(node, 1000 * 4096, 10, 1)
    message = str(failure.value)
    assert 'waited 10 s for unit kubelet.service active' in message
    assert "HTTP 500 'refused config'" in message and '/x/memory.max = 4096000' in message and '5000' in message


def test_limit_within_a_page_counts_as_set():
    node = ScriptedNode([(0, unit(), (True, 'ok'))], limit=4096 * 1000 - 4095, limit_file='/x/memory.limit_in_bytes')
    assert step.wait_healthy(node, 4096 * 1000, 5, 1)


@pytest.mark.parametrize('later,seen', [
    (unit(pid=200, restarts=1), 'MainPID 100 -> 200, NRestarts 0 -> 1'),
    (unit('activating', 0), 'ActiveState=activating'),
])
def test_soak_catches_a_kubelet_that_dies_after_looking_healthy(later, seen):
    node = ScriptedNode([(0, unit(), (True, 'ok')), (20, later, (False, 'no answer (connection refused)'))])
    state = step.wait_healthy(node, None, 60, 2)
    with pytest.raises(step.StepError) as failure:
        step.soak(node, state, 30, 2)
    assert seen in str(failure.value) and 'did not stay healthy for the 30 s soak' in str(failure.value)


def test_a_kubelet_healthy_soon_after_its_restart_starts_its_soak_then_and_checks_stay_within_the_poll():
    node = ScriptedNode([(0, unit('activating', 0), (False, 'no answer')), (0.3, unit(), (True, "HTTP 200 'ok'"))])
    asked = []
    unit_state = node.unit_state
    node.unit_state = lambda: asked.append(node.now) or unit_state()
    state = step.wait_healthy(node, None, 60, 2)
    assert state['healthy_after_seconds'] < 1  # simulated time: not up to a whole 2-s poll later
    slow = ScriptedNode([(0, unit('activating', 0), (False, 'no answer')), (30, unit(), (True, "HTTP 200 'ok'"))])
    slow_asked = []
    slow_state = slow.unit_state
    slow.unit_state = lambda: slow_asked.append(slow.now) or slow_state()
    step.wait_healthy(slow, None, 60, 2)
    assert max(b - a for a, b in zip(slow_asked, slow_asked[1:])) <= 2


def test_restore_puts_back_only_its_own_backup_over_what_it_wrote(tmp_path):
    target = tmp_path / 'config.yaml'
    backup = tmp_path / 'config.yaml.20260101T000000.000000.nodealloc.bak'
    backup.write_bytes(CONFIG)
    target.write_bytes(b'written by the step\n')
    with pytest.raises(step.StepError, match='no longer holds what this step wrote'):
        step.restore(str(target), str(backup), False, step.sha256(b'something else\n'))
    assert target.read_bytes() == b'written by the step\n'
    done = step.restore(str(target), str(backup), False, step.sha256(b'written by the step\n'))
    assert target.read_bytes() == CONFIG and done.startswith('Restored %s from' % target)


@pytest.mark.parametrize('content', [b'', b'kind: [oops\n', b'apiVersion: v1\nkind: ConfigMap\n'])
def test_restore_refuses_a_backup_that_is_not_a_kubelet_configuration(tmp_path, content):
    target = tmp_path / 'config.yaml'
    backup = tmp_path / 'config.yaml.20260101T000000.000000.nodealloc.bak'
    backup.write_bytes(content)
    target.write_bytes(b'new\n')
    with pytest.raises(step.StepError, match='is not a KubeletConfiguration, not restored'):
        step.restore(str(target), str(backup), False, step.sha256(b'new\n'))
    assert target.read_bytes() == b'new\n'


def test_restore_removes_a_drop_in_the_step_created(tmp_path):
    target = tmp_path / '50-nodealloc.conf'
    target.write_bytes(b'{}')
    assert 'Removed' in step.restore(str(target), None, True, step.sha256(b'{}'))
    assert not target.exists()


def test_second_step_waits_then_refuses_naming_the_holder(tmp_path):
    state_dir = tmp_path / 'step'
    holder = {'pid': 4242, 'started': '2026-11-23T09:00:00Z', 'controller': '10.0.0.7'}
    with step.node_lock(str(state_dir), 1, holder):
        # Another process (as a second rollout would be) tries for 0.5 s.
        code = ('import sys; from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_primitives as s\n'
                'try:\n'
                '    with s.node_lock(sys.argv[1], 0.5, {"pid": 1}):\n'
                '        print("got it")\n'
                'except s.StepError as e:\n'
                '    print(e)\n')
        out = subprocess.run([sys.executable, '-c', code, str(state_dir)], capture_output=True, text=True,
                             check=True, env={'PYTHONPATH': ':'.join(sys.path)}).stdout
    assert 'pid 4242, started 2026-11-23T09:00:00Z, from controller 10.0.0.7' in out and 'waited 0 s' in out
    assert list(state_dir.iterdir()) == []  # the holder file goes with the lock
    with step.node_lock(str(state_dir), 1, {'pid': 1}) as waited:
        assert not waited.get('holder')


def test_journal_round_trip_and_clear(tmp_path):
    assert step.read_journal(str(tmp_path)) is None
    step.write_journal(str(tmp_path), {'target': '/x', 'written_sha256': 'ab'})
    assert step.read_journal(str(tmp_path))['target'] == '/x'
    step.clear_journal(str(tmp_path))
    assert step.read_journal(str(tmp_path)) is None


def test_healthz_reports_what_the_kubelet_answered():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b'[-]syncloop failed')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        node = step.Node('kubelet.service', 'http://127.0.0.1:%d/healthz' % server.server_address[1])
        assert node.healthz() == (False, "HTTP 500 '[-]syncloop failed'")
    finally:
        server.shutdown()
        server.server_close()
    assert node.healthz()[0] is False and node.healthz()[1].startswith('no answer')


def test_controller_is_named_from_the_ssh_connection():
    assert step.controller_name(None, {'SSH_CONNECTION': '10.1.2.3 5555 10.1.2.4 22'}) == '10.1.2.3'
    assert step.controller_name('ci-runner', {}) == 'ci-runner'
    assert json.dumps(step.controller_name(None, {})) == '"unknown"'


def test_newest_backup_is_none_where_the_kubelet_directory_does_not_exist(tmp_path):
    # rollback.yml on a host without a kubelet: "no backup", not a raw FileNotFoundError from listing the directory.
    assert step.newest_backup(str(tmp_path / 'var' / 'lib' / 'kubelet' / 'config.yaml')) is None
    (tmp_path / 'config.yaml').write_text('kind: KubeletConfiguration\n')
    (tmp_path / 'config.yaml.20261124T010203.nodealloc.bak').write_text('kind: KubeletConfiguration\n')
    assert step.newest_backup(str(tmp_path / 'config.yaml')) == str(tmp_path / 'config.yaml.20261124T010203.nodealloc.bak')


# Issue 44: the node lock directory holds the journal, which names what a later step restores and where.
def test_a_link_at_the_journal_or_a_record_is_refused_and_its_target_untouched(tmp_path):
    target = victim(str(tmp_path / 'root-only'))
    state_dir = tmp_path / 'step'
    for name in (step.JOURNAL, 'config_dir.json'):
        plant_link(str(state_dir / name), target)
    with pytest.raises(_safe_open.UnsafePathError, match='step.json is a symbolic link'):
        step.write_journal(str(state_dir), {'target': '/x'})
    with pytest.raises(_safe_open.UnsafePathError, match='config_dir.json is a symbolic link'):
        step.write_state(str(state_dir), 'config_dir.json', {'config_dir': '/x'})
    with pytest.raises(step.StepError, match='step.json is a symbolic link .*; nothing restored or changed'):
        step.read_journal(str(state_dir))
    assert untouched(target)


@needs_root
def test_a_journal_another_user_wrote_is_refused_not_acted_on(tmp_path):
    journal = {'target': '/etc/passwd', 'backup_file': '/tmp/mine', 'written_sha256': None}
    users_file(str(tmp_path / step.JOURNAL), json.dumps(journal))
    with pytest.raises(step.StepError, match='step.json is owned by uid 65534.*nothing restored or changed'):
        step.read_journal(str(tmp_path))


@pytest.mark.parametrize('mode', [0o770, 0o777])
def test_a_node_lock_directory_others_can_write_is_refused(tmp_path, mode):
    state_dir = tmp_path / 'step'
    state_dir.mkdir()
    os.chmod(state_dir, mode)
    with pytest.raises(step.StepError, match='the node lock directory is refused, nothing done: .*writable by'):
        with step.node_lock(str(state_dir), 1, {'pid': 1}):
            pytest.fail('the lock was taken')
    assert os.listdir(state_dir) == [] and os.stat(state_dir).st_mode & 0o7777 == mode
