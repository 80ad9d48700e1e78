"""report_files' main() in-process: one call writes every file, check mode writes none, a bad mode or path fails."""

from __future__ import annotations

import functools

import pytest

from ansible_collections.nodealloc.kubelet.plugins.modules import report_files
from ansible_collections.nodealloc.kubelet.tests.unit.utils.module_harness import run_module


@pytest.fixture
def run(monkeypatch):
    return functools.partial(run_module, report_files.main, monkeypatch=monkeypatch)


def test_check_mode_then_write_then_nothing_to_do(run, tmp_path):
    args = {'dir': str(tmp_path / 'templates'),
            'files': [{'path': 'alpha/drop-in.conf', 'content': 'kubeReserved: {}\n', 'class': 'alpha'},
                      {'path': 'beta/drop-in.conf', 'content': 'systemReserved: {}\n', 'class': 'beta'}]}
    predicted = run(dict(args, _ansible_check_mode=True))
    assert predicted['changed'] is True and len(predicted['written']) == 2 and not (tmp_path / 'templates').exists()
    written = run(dict(args, mode='0600'))
    assert written['written'] == predicted['written']
    conf = tmp_path / 'templates' / 'beta' / 'drop-in.conf'
    assert conf.read_text() == 'systemReserved: {}\n' and conf.stat().st_mode & 0o7777 == 0o600
    again = run(args)
    assert again['changed'] is False and again['written'] == []


@pytest.mark.parametrize('mode', ['rw-r--r--', '99999', '-1'])
def test_a_mode_that_is_not_octal_fails_naming_it(run, tmp_path, mode):
    result = run({'files': [{'path': str(tmp_path / 'r.json'), 'content': '{}'}], 'mode': mode})
    assert result['failed'] is True and repr(mode) in result['msg']
    assert not (tmp_path / 'r.json').exists()


def test_a_relative_path_without_a_directory_fails_and_writes_nothing(run, tmp_path):
    result = run({'files': [{'path': str(tmp_path / 'ok.json'), 'content': '{}'}, {'path': 'r.json', 'content': '{}'}]})
    assert result['failed'] is True and 'nothing was written' in result['msg']
    assert not (tmp_path / 'ok.json').exists()
