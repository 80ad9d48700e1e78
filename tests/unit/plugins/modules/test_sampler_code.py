"""sampler_code's main() in-process: it installs the sampler's closure, then changes nothing."""

from __future__ import annotations

import functools

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
    assert '_sampler.py' in installed['files'] and '_errors.py' in installed['files']
    again = run({'path': path})
    assert again['changed'] is False and again['written'] == [] and again['removed'] == []


def test_a_directory_that_cannot_be_written_fails_with_its_path(run, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('a file where the directory should be')
    result = run({'path': str(blocker)})
    assert result['failed'] is True and str(blocker) in result['msg']
