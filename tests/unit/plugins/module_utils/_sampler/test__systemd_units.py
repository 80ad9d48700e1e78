"""The sampler's units as the role renders them: sandboxed (systemd-analyze security), and no option value on a command line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _systemd_units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit

SYSTEMD_ANALYZE = shutil.which('systemd-analyze')
# Values that would edit a command line or a unit if pasted in: quotes, systemd's $VAR and %-specifiers,
# backslash escapes, a second flag, a newline starting a directive of its own.
HOSTILE = [
    "x' --history /etc/passwd '",
    '" --state /etc/shadow "',
    '$HOME ${PATH} %n %i %%',
    'a\\nb \\x41',
    'ok\nExecStartPre=/bin/sh -c "touch /tmp/pwned"',
    '--textfile=/etc/motd',
]
# The options that reach only the options file (their directories aside).
JSON_ONLY = ('history_window', 'percentile', 'sample_seconds', 'decision_path')


def score(tmp_path, unit_text):
    """systemd-analyze's overall exposure of ``unit_text`` (0.0 safest, 10.0 unsafe)."""
    path = tmp_path / _systemd_units.SERVICE_NAME
    path.write_text(unit_text)
    result = subprocess.run([SYSTEMD_ANALYZE, 'security', '--offline=true', '--no-pager', str(path)],
                            capture_output=True, text=True, check=False)
    found = re.search(r'Overall exposure level for \S+: ([0-9.]+)', result.stdout)
    assert found, result.stdout + result.stderr
    return float(found.group(1))


def exec_start(unit_text):
    lines = [line for line in unit_text.splitlines() if line.startswith('ExecStart')]
    assert len(lines) == 1, unit_text
    return lines[0]


def directives(unit_text):
    return [line.split('=', 1)[0] for line in unit_text.splitlines() if line and not line.startswith(('#', '['))]


pytestmark = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason='systemd-analyze is not installed (the systemd package)')


def test_the_default_unit_scores_safe_and_systemd_finds_nothing_to_say(tmp_path):
    settings, sampler_dir = sampler_unit.settings()
    unit = _systemd_units.service(settings, sampler_dir)
    assert score(tmp_path, unit) <= 2.0
    (tmp_path / _systemd_units.TIMER_NAME).write_text(_systemd_units.timer(settings))
    verified = subprocess.run([SYSTEMD_ANALYZE, 'verify', str(tmp_path / _systemd_units.SERVICE_NAME),
                               str(tmp_path / _systemd_units.TIMER_NAME)], capture_output=True, text=True, check=False)
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, '')


def test_the_service_writes_only_its_state_and_textfile_directories():
    settings, sampler_dir = sampler_unit.settings(reservations_history_path='/srv/na/history.jsonl',
                                                  reservations_sampler_textfile_path='/run/prom/nodealloc.prom')
    unit = _systemd_units.service(settings, sampler_dir)
    assert 'ProtectSystem=strict' in unit.splitlines()
    assert [line for line in unit.splitlines() if line.startswith('ReadWrite')] == ['ReadWritePaths=-/run/prom -/srv/na']


@pytest.mark.parametrize('value', HOSTILE)
@pytest.mark.parametrize('name', JSON_ONLY)
def test_a_hostile_value_stays_data(tmp_path, name, value):
    """Rendered, the unit's command line is the defaults' and the options file holds the value as given."""
    default_settings, sampler_dir = sampler_unit.settings()
    hostile = dict(default_settings, **{name: value})
    unit = _systemd_units.service(hostile, sampler_dir)
    assert exec_start(unit) == exec_start(_systemd_units.service(default_settings, sampler_dir))
    assert directives(unit) == directives(_systemd_units.service(default_settings, sampler_dir))
    key = dict(_systemd_units.OPTION_KEYS)[name]
    assert json.loads(_systemd_units.options_json(hostile))[key] == value
    assert score(tmp_path, unit) <= 2.0


@pytest.mark.parametrize('value', HOSTILE)
def test_a_hostile_textfile_name_stays_data(value):
    default_settings, sampler_dir = sampler_unit.settings()
    textfile = '/var/lib/node_exporter/textfile_collector/' + value.replace('/', '_')
    hostile = dict(default_settings, textfile_path=textfile)
    # Its directory stands in ReadWritePaths=, its name only in the options file: the unit is the defaults' to the byte.
    assert _systemd_units.service(hostile, sampler_dir) == _systemd_units.service(default_settings, sampler_dir)
    assert json.loads(_systemd_units.options_json(hostile))['textfile'] == textfile


@pytest.mark.parametrize('value', HOSTILE + ['/var/lib/node alloc', 'relative/dir', '/var/lib/../../etc'])
@pytest.mark.parametrize('name', ('sampler_dir', 'history_path', 'state_path', 'textfile_path'))
def test_a_hostile_path_that_would_stand_in_the_unit_is_refused(name, value):
    settings, sampler_dir = sampler_unit.settings()
    if name == 'sampler_dir':
        sampler_dir = value
    else:
        settings[name] = os.path.join(value, 'file')
    with pytest.raises(NodeallocError, match=name):
        _systemd_units.files(settings, sampler_dir, '/etc/systemd/system')


@pytest.mark.parametrize('name, value', [
    ('nice', '15\nExecStartPre=/bin/true'), ('nice', '20'), ('nice', 'low'),
    ('memory_max', '64M\nUser=nobody'), ('memory_max', '64M 1G'), ('memory_max', "'64M'"),
    ('cpu_quota', '20'), ('cpu_quota', '20%\nCPUQuota=100%'),
    ('interval', '1min\nOnBootSec=0'), ('interval', '1min;'), ('interval', '%n'),
    # Issue 35, each confirmed with systemd-analyze verify: passed the old checks and broke the units.
    ('interval', '\n1min'), ('interval', '1min\x0b'), ('cpu_quota', '\uff12\uff10%'), ('memory_max', '\u0666\u0664M'),
    ('memory_max', '64M\n'),
    # Found by tests/fuzz: accepted here, then ignored by systemd (systemd-analyze verify says so).
    ('memory_max', '0'), ('memory_max', '0.5'), ('memory_max', '16E'), ('memory_max', '101%'), ('memory_max', '0.001%'),
    ('cpu_quota', '0.555%'), ('cpu_quota', '21474837%'), ('interval', '999999999999min'), ('interval', '0'),
])
def test_a_hostile_resource_setting_is_refused(name, value):
    settings, sampler_dir = sampler_unit.settings()
    settings[name] = value
    with pytest.raises(NodeallocError, match=name):
        _systemd_units.files(settings, sampler_dir, '/etc/systemd/system')


@pytest.mark.parametrize('name', ('history_path', 'state_path', 'textfile_path'))
def test_a_file_directly_under_the_root_is_refused(name):
    # Issue 35: its directory would give ReadWritePaths=-/, which cancels ProtectSystem=strict.
    settings, sampler_dir = sampler_unit.settings()
    settings[name] = '/nodealloc-file'
    with pytest.raises(NodeallocError, match=name):
        _systemd_units.files(settings, sampler_dir, '/etc/systemd/system')


@pytest.mark.parametrize('name, value', [('nice', '-5'), ('memory_max', '1G'), ('memory_max', '5%'), ('cpu_quota', '150%'),
                                         ('interval', '5min'), ('interval', '1min 30s'), ('interval', '90')])
def test_ordinary_resource_settings_are_written_as_given(name, value):
    settings, sampler_dir = sampler_unit.settings()
    settings[name] = value
    rendered = _systemd_units.files(settings, sampler_dir, '/etc/systemd/system')
    text = ''.join(content for content, _mode in rendered.values())
    assert '=%s\n' % value in text
