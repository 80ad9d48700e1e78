"""Fixtures for tests against the real kernel: cgroups made for the test, removed afterwards."""

from __future__ import annotations

import os

import pytest

from helpers import cgroups_v1


def _remove_stale(relative):
    # A run that was killed can leave empty groups behind; rmdir removes only empty ones.
    for controller in cgroups_v1.CONTROLLERS:
        top = os.path.join(cgroups_v1.ROOT, controller, relative)
        for directory, _subdirs, _files in sorted(os.walk(top), key=lambda w: w[0].count('/'), reverse=True):
            try:
                os.rmdir(directory)
            except OSError:
                pass


@pytest.fixture
def cgroup_tree():
    if not cgroups_v1.v1_available():
        pytest.skip('needs root and cgroup v1 memory, cpu and cpuacct controllers under /sys/fs/cgroup')
    for name in ('kubepods.slice', 'kubepods', 'system.slice'):
        _remove_stale(name)
        if os.path.isdir(os.path.join(cgroups_v1.ROOT, 'memory', name)) and name != 'system.slice':
            pytest.fail('%s already exists with tasks in it; this test needs a machine without a kubelet' % name)
    tree = cgroups_v1.CgroupTree()
    try:
        yield tree
    finally:
        tree.cleanup()
