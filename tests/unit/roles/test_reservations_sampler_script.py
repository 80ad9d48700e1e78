"""nodealloc-sampler.py's options: the unit's own command line is read without argparse, to the same values."""

from __future__ import annotations

import json
import os
import runpy
import shlex
import subprocess
import sys

import jinja2
import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, 'roles', 'reservations')
SCRIPT = os.path.join(ROLE, 'files', 'nodealloc-sampler.py')


def unit_arguments():
    """The options the unit's ExecStart passes at the role's defaults (what follows the script's path)."""
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROLE, 'templates', 'nodealloc-sampler.service.j2')) as handle:
        exec_start = [line for line in handle if line.startswith('ExecStart=')][0][len('ExecStart='):]
    environment = jinja2.Environment()
    environment.filters['dirname'] = os.path.dirname
    argv = shlex.split(environment.from_string(exec_start).render(defaults))
    return argv[[arg.endswith('/nodealloc-sampler.py') for arg in argv].index(True) + 1:]


@pytest.fixture(scope='module')
def script():
    return runpy.run_path(SCRIPT, run_name='nodealloc_sampler')


@pytest.mark.parametrize('argv', [
    unit_arguments(),
    unit_arguments() + ['--textfile', ''],
    ['--percentile=99.5', '--window', '24h', '--sample-seconds', '0.5'],
    [],
])
def test_the_same_values_as_argparse(script, argv):
    assert script['parse_args'](argv) == script['parse_args'](argv, fast=False)


def test_the_units_command_line_does_not_load_argparse():
    code = ('import json, runpy, sys; namespace = runpy.run_path(%r, run_name="nodealloc_sampler"); '
            'values = namespace["parse_args"](sys.argv[1:]); print(json.dumps(["argparse" in sys.modules, values]))' % SCRIPT)
    result = subprocess.run([sys.executable, '-c', code] + unit_arguments(), capture_output=True, text=True, check=True)
    loaded, values = json.loads(result.stdout)
    assert not loaded and values['window'] == '7d'


@pytest.mark.parametrize('argv, status', [
    (['--help'], 0),
    (['--percentile', 'high'], 2),
    (['--textfile', '--history', '/tmp/h'], 2),
    (['--unknown', '1'], 2),
    (['--window'], 2),
])
def test_help_and_mistakes_go_to_argparse(script, argv, status, capsys):
    with pytest.raises(SystemExit) as exited:
        script['parse_args'](argv)
    assert exited.value.code == status
    printed = capsys.readouterr()
    assert 'usage: nodealloc-sampler' in printed.out + printed.err
