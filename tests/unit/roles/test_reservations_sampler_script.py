"""nodealloc-sampler.py's options: the unit's own command line is read without argparse, to the same values."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit
from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, 'roles', 'reservations')
SCRIPT = os.path.join(ROLE, 'files', 'nodealloc-sampler.py')


def unit_arguments():
    """The options the unit's ExecStart passes at the role's defaults (what follows the script's path)."""
    argv = sampler_unit.exec_start_argv()
    return argv[[arg.endswith('/nodealloc-sampler.py') for arg in argv].index(True) + 1:]


# The script's functions without running its main: its source executed under another __name__. Not
# runpy.run_path: under ansible-test the collection loader's path hook claims any path in the collection
# tree, and run_path then looks for a __main__ module "in" the script.
LOAD = ('namespace = {"__name__": "nodealloc_sampler", "__file__": %r}\n'
        'with open(%r) as handle:\n'
        '    exec(compile(handle.read(), %r, "exec"), namespace)\n') % (SCRIPT, SCRIPT, SCRIPT)


@pytest.fixture(scope='module')
def script():
    scope = {}
    exec(LOAD, scope)  # pylint: disable=exec-used
    return scope['namespace']


@pytest.mark.parametrize('argv', [
    unit_arguments(),
    unit_arguments() + ['--textfile', ''],
    ['--percentile=99.5', '--window', '24h', '--sample-seconds', '0.5'],
    [],
])
def test_the_same_values_as_argparse(script, argv):
    assert script['parse_args'](argv) == script['parse_args'](argv, fast=False)


def test_the_units_command_line_does_not_load_argparse():
    code = ('import json, sys\n' + LOAD
            + 'values = namespace["parse_args"](sys.argv[1:])\nprint(json.dumps(["argparse" in sys.modules, values]))\n')
    # The script imports the collection's module_utils: from the tree under test (no PYTHONPATH under ansible-test).
    result = subprocess.run([sys.executable, '-c', code] + unit_arguments(), capture_output=True, text=True, check=False,
                            env=dict(os.environ, PYTHONPATH=COLLECTIONS_PATH))
    assert result.returncode == 0, result.stderr
    loaded, values = json.loads(result.stdout)
    assert not loaded and values['window'] == '7d'  # the history_window default (issue 38)


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


def test_the_options_file_gives_the_values_and_a_flag_wins(script, tmp_path):
    """What the unit runs: ``--config sampler.json``; hostile text there is a value, never a flag."""
    config = tmp_path / 'sampler.json'
    config.write_text(json.dumps({'textfile': "/tmp/it's $HOME %n --history /etc/passwd", 'percentile': 99,
                                  'window': '24h', 'sample_seconds': '0.5'}))
    argv = ['--config', str(config), '--window', '1h']
    values = script['with_config'](script['parse_args'](argv), argv)
    assert values['textfile'] == "/tmp/it's $HOME %n --history /etc/passwd"
    assert (values['percentile'], values['window'], values['sample_seconds']) == (99.0, '1h', 0.5)
    assert values['history'] == script['parse_args']([])['history']


def test_an_unknown_key_in_the_options_file_is_refused(script, tmp_path):
    config = tmp_path / 'sampler.json'
    config.write_text(json.dumps({'textfle': '/tmp/x.prom'}))
    with pytest.raises(ValueError, match='textfle'):
        script['with_config'](script['parse_args'](['--config', str(config)]), ['--config', str(config)])
