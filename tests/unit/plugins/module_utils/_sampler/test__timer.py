"""The sampler's timer: reloaded, enabled and started only where that is due, and nothing run but questions in check mode.

The systemd answers here are scripted (this machine has no systemd as PID 1); the nspawn nodes and the VM guests run
the real one: tests/scenarios/test_rollout.py checks the timer enabled and active after a rollout, and its second
run reports nothing changed.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _timer
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

TIMER = 'nodealloc-sampler.timer'


class Systemctl:
    """A scripted systemctl: the exit status of each verb, and every command line it was given."""

    def __init__(self, **rc):
        self.rc = rc
        self.ran = []

    def __call__(self, argv):
        self.ran.append(argv[1:])
        return self.rc.get(argv[1].replace('-', '_'), 0), '', 'stderr of %s' % argv[1]


@pytest.mark.parametrize('check_mode', [False, True])
def test_an_enabled_active_timer_with_no_unit_written_runs_only_the_two_questions(check_mode):
    systemctl = Systemctl()
    done = _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=False, check_mode=check_mode)
    assert done == {'daemon_reloaded': False, 'timer_enabled': False, 'timer_started': False}
    assert systemctl.ran == [['is-enabled', TIMER], ['is-active', TIMER]]


def test_a_written_unit_reloads_systemd_before_the_questions_and_a_stopped_timer_is_enabled_and_started():
    systemctl = Systemctl(is_enabled=1, is_active=3)
    done = _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=True, check_mode=False)
    assert done == {'daemon_reloaded': True, 'timer_enabled': True, 'timer_started': True}
    assert systemctl.ran == [['daemon-reload'], ['is-enabled', TIMER], ['is-active', TIMER], ['enable', TIMER],
                             ['start', TIMER]]


def test_an_enabled_timer_that_is_not_running_is_only_started():
    systemctl = Systemctl(is_active=3)
    done = _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=False, check_mode=False)
    assert (done['timer_enabled'], done['timer_started']) == (False, True)
    assert systemctl.ran[-1] == ['start', TIMER] and ['enable', TIMER] not in systemctl.ran


def test_check_mode_says_what_would_be_done_and_does_nothing():
    systemctl = Systemctl(is_enabled=1, is_active=3)
    done = _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=True, check_mode=True)
    assert done == {'daemon_reloaded': True, 'timer_enabled': True, 'timer_started': True}
    assert systemctl.ran == [['is-enabled', TIMER], ['is-active', TIMER]]


def test_a_failed_enable_fails_with_the_command_and_what_systemctl_said():
    systemctl = Systemctl(is_enabled=1, enable=1)
    with pytest.raises(NodeallocError, match=r'enable nodealloc-sampler.timer failed \(exit 1\): stderr of enable'):
        _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=False, check_mode=False)
    assert ['start', TIMER] not in systemctl.ran


def test_a_failed_reload_stops_before_the_timer_is_touched():
    systemctl = Systemctl(daemon_reload=1)
    with pytest.raises(NodeallocError, match='daemon-reload failed'):
        _timer.ensure_started(systemctl, '/bin/systemctl', TIMER, reload=True, check_mode=False)
    assert systemctl.ran == [['daemon-reload']]


def test_no_systemctl_fails_a_run_and_is_a_change_to_come_in_check_mode():
    with pytest.raises(NodeallocError, match='systemctl not found'):
        _timer.ensure_started(Systemctl(), None, TIMER, reload=False, check_mode=False)
    assert _timer.ensure_started(Systemctl(), None, TIMER, reload=True, check_mode=True) == {
        'daemon_reloaded': True, 'timer_enabled': True, 'timer_started': True}
