"""A history that cannot be written: the module still recommends and says the sample was not kept."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip('needs root to mount tmpfs')
    mount_point = tmp_path / 'state'
    mount_point.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16k,mode=755', 'nodealloc-state', str(mount_point)], check=True)
    yield mount_point
    subprocess.run(['umount', '-l', str(mount_point)], check=False)


def test_full_disk(small_tmpfs):
    fd = os.open(small_tmpfs / 'filler', os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b'\0' * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    facts = _gather.gather({'sample_seconds': 0, 'record': True, 'history_path': str(small_tmpfs / 'history.jsonl')})
    assert facts['history']['recorded'] is False
    assert any('not recorded' in problem for problem in facts['history']['problems'])
    # systemReserved: this machine runs no kubelet or runtime, so kubeReserved is not measured and stays out (issue 37).
    assert facts['recommendation']['system_reserved'] and facts['recommendation']['single_reading']


def test_read_only_state_dir(small_tmpfs):
    subprocess.run(['mount', '-o', 'remount,ro', str(small_tmpfs)], check=True)
    facts = _gather.gather({'sample_seconds': 0, 'record': True, 'history_path': str(small_tmpfs / 'sub' / 'history.jsonl')})
    assert facts['history']['recorded'] is False
    assert any('not recorded' in problem for problem in facts['history']['problems'])
    assert facts['recommendation']['system_reserved']
