"""sampler_code's main() in-process: it installs the sampler's closure, then changes nothing."""

from __future__ import annotations

import functools
import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.modules import sampler_code
from ansible_collections.nodealloc.kubelet.tests.unit.utils.module_harness import run_module


@pytest.fixture
def run(monkeypatch):
    return functools.partial(run_module, sampler_code.main, monkeypatch=monkeypatch)


def test_check_mode_then_install_then_nothing_to_do(run, tmp_path):
    path = str(tmp_path / 'sampler')
    predicted = run({'path': path, '_ansible_check_mode': True})
    assert predicted['changed'] is True and predicted['written'] == predicted['files']
    assert not (tmp_path / 'sampler').exists()
    installed = run({'path': path})
    assert installed['changed'] is True and installed['written'] == predicted['written']
    assert '_sampler/_sample_once.py' in installed['files'] and '_errors.py' in installed['files']
    again = run({'path': path})
    assert again['changed'] is False and again['written'] == [] and again['removed'] == []


def test_a_directory_that_cannot_be_written_fails_with_its_path(run, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('a file where the directory should be')
    result = run({'path': str(blocker)})
    assert result['failed'] is True and str(blocker) in result['msg']


def test_script_units_and_state_dir_in_the_same_call(run, tmp_path):
    args = {'path': str(tmp_path / 'lib'), 'state_dir': str(tmp_path / 'state'), 'unit_dir': str(tmp_path / 'units'),
            'script': '#!/usr/bin/python3\nprint("sample")\n',
            'units': {'s.service': '[Service]\nExecStart=/bin/true\n', 's.timer': '[Timer]\nOnBootSec=2min\n'}}
    predicted = run(dict(args, _ansible_check_mode=True))
    assert (predicted['changed'], predicted['script_written'], predicted['units_written'], predicted['state_dir_created']) == (
        True, True, ['s.service', 's.timer'], True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    installed = run(args)
    assert (installed['script_written'], installed['units_written'], installed['state_dir_created']) == (
        True, ['s.service', 's.timer'], True)
    script = tmp_path / 'lib' / 'nodealloc-sampler.py'
    assert script.read_text() == args['script'] and script.stat().st_mode & 0o7777 == 0o755
    unit = tmp_path / 'units' / 's.service'
    assert unit.read_text() == args['units']['s.service'] and unit.stat().st_mode & 0o7777 == 0o644
    assert (tmp_path / 'state').is_dir()
    again = run(args)
    assert again['changed'] is False and not again['script_written'] and again['units_written'] == []
    # A unit edited on the node, and a script whose mode was changed, are put back; diff mode shows the unit's change.
    unit.write_text('[Service]\nExecStart=/bin/false\n')
    script.chmod(0o644)
    repaired = run(dict(args, _ansible_diff=True))
    assert repaired['changed'] is True and repaired['units_written'] == ['s.service'] and repaired['script_written']
    assert unit.read_text() == args['units']['s.service'] and script.stat().st_mode & 0o7777 == 0o755
    shown = {entry['after_header']: entry for entry in repaired['diff']}
    assert shown[str(unit)]['before'] == '[Service]\nExecStart=/bin/false\n'
    assert shown[str(unit)]['after'] == args['units']['s.service']


def test_a_state_dir_that_cannot_be_created_fails_with_its_path_before_any_file(run, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('a file where the directory should be')
    result = run({'path': str(tmp_path / 'lib'), 'state_dir': str(blocker / 'state'), 'script': 'x\n'})
    assert result['failed'] is True and str(blocker / 'state') in result['msg']
    assert not (tmp_path / 'lib').exists()


def _settings(tmp_path, **overrides):
    settings = {'history_path': str(tmp_path / 'state' / 'history.jsonl'), 'state_path': str(tmp_path / 'state' / 'sampler-state.json'),
                'decision_path': str(tmp_path / 'state' / 'decision.json'),
                'textfile_path': str(tmp_path / 'prom' / 'nodealloc.prom'), 'percentile': 99.5, 'history_window': '7d',
                'sample_seconds': 10, 'nice': 15, 'memory_max': '64M', 'cpu_quota': '20%', 'interval': '1min'}
    settings.update(overrides)
    return settings


def test_settings_render_the_sandboxed_units_and_the_options_file(run, tmp_path):
    hostile = str(tmp_path / 'prom' / "it's $HOME %n.prom")
    args = {'path': str(tmp_path / 'lib'), 'state_dir': str(tmp_path / 'state'), 'unit_dir': str(tmp_path / 'units'),
            'settings': _settings(tmp_path, textfile_path=hostile)}
    predicted = run(dict(args, _ansible_check_mode=True))
    assert predicted['changed'] and predicted['units_written'] == ['nodealloc-sampler.service', 'nodealloc-sampler.timer']
    assert predicted['options_written'] is True and sorted(p.name for p in tmp_path.iterdir()) == []
    installed = run(args)
    assert installed['units_written'] == ['nodealloc-sampler.service', 'nodealloc-sampler.timer'] and installed['options_written']
    service = (tmp_path / 'units' / 'nodealloc-sampler.service').read_text()
    assert ('ExecStart=/usr/bin/python3 -I -S -X pycache_prefix=/var/cache/nodealloc-sampler %s/nodealloc-sampler.py --config '
            '%s/sampler.json\n' % (args['path'], args['path'])) in service
    assert hostile not in service and "'" not in service
    assert json.loads((tmp_path / 'lib' / 'sampler.json').read_text())['textfile'] == hostile
    # ReadWritePaths= leaves out a directory missing at start: the module creates the textfile's.
    assert (tmp_path / 'prom').is_dir()
    again = run(args)
    assert again['changed'] is False and again['units_written'] == [] and again['options_written'] is False


def test_a_setting_that_would_need_quoting_in_a_unit_fails_before_any_file(run, tmp_path):
    args = {'path': str(tmp_path / 'lib'), 'unit_dir': str(tmp_path / 'units'),
            'settings': _settings(tmp_path, state_path=str(tmp_path / "it's" / 'state.json'))}
    result = run(args)
    assert result['failed'] is True and 'state_path' in result['msg']
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_start_timer_needs_the_settings_the_timer_is_rendered_from(run, tmp_path):
    result = run({'path': str(tmp_path / 'lib'), 'start_timer': True})
    assert result['failed'] is True and 'start_timer needs settings' in result['msg']
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_start_timer_in_check_mode_on_a_machine_without_the_timer_says_it_would_start_it(run, tmp_path):
    # This machine's systemctl cannot answer for a timer it does not have (no unit, no systemd as PID 1): a change.
    args = {'path': str(tmp_path / 'lib'), 'unit_dir': str(tmp_path / 'units'), 'settings': _settings(tmp_path),
            'start_timer': True, '_ansible_check_mode': True}
    predicted = run(args)
    assert predicted['changed'] is True
    assert (predicted['daemon_reloaded'], predicted['timer_enabled'], predicted['timer_started']) == (True, True, True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
