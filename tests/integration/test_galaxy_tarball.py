"""The collection as a user gets it: ``ansible-galaxy collection build``, its file list, install, and the recommend
playbook run from the installed copy in an empty directory (check mode, localhost)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# What an installed collection needs: its content, its docs, its changelog. Directories ship whole (every file in the
# tree); nothing that builds, tests or benchmarks it (tests/, hack/, benchmarks/, extensions/, Makefile, ansible.cfg,
# the requirement files, changelog fragments) does.
EXPECTED_FILES = {'MANIFEST.json', 'FILES.json', 'README.md', 'LICENSE', 'CHANGELOG.rst', 'changelogs/changelog.yaml',
                  'changelogs/config.yaml'}
EXPECTED_DIRS = ('docs', 'meta', 'monitoring', 'playbooks', 'plugins', 'roles')


def tree_files(directory):
    found = set()
    for parent, dirs, files in os.walk(os.path.join(ROOT, directory)):
        dirs[:] = [name for name in dirs if name != '__pycache__']
        found.update(os.path.relpath(os.path.join(parent, name), ROOT) for name in files if not name.endswith('.pyc'))
    return found


@pytest.fixture(scope='module')
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp('galaxy')
    result = subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(out), ROOT],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = out.glob('nodealloc-kubelet-*.tar.gz')
    return path


def test_the_tarball_holds_what_an_installed_collection_needs_and_nothing_else(tarball):
    with tarfile.open(tarball) as archive:
        shipped = {member.name for member in archive.getmembers() if member.isfile()}
    expected = set(EXPECTED_FILES)
    for directory in EXPECTED_DIRS:
        expected |= tree_files(directory)
    assert shipped == expected, (sorted(shipped - expected), sorted(expected - shipped))


def test_recommend_runs_from_the_installed_tarball_in_an_empty_directory(tarball, tmp_path):
    collections = tmp_path / 'collections'
    empty = tmp_path / 'empty'
    empty.mkdir()
    # Nothing of the source tree: no PYTHONPATH to the staged copy, no project ansible.cfg, no collections path that
    # holds it (ansible-galaxy would find it there and install nothing); only the installed copy.
    env = {name: value for name, value in os.environ.items()
           if not name.startswith('ANSIBLE_') and name not in ('PYTHONPATH', 'PWD')}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), PWD=str(empty), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    # --no-deps: kubernetes.core (the role's API server check) comes from the ansible package here; no registry.
    installed = subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--no-deps', '-p',
                                str(collections), str(tarball)], cwd=str(empty), env=env, capture_output=True, text=True,
                               check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (collections / 'ansible_collections' / 'nodealloc' / 'kubelet' / 'MANIFEST.json').is_file(), installed.stdout
    listed = subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'list', 'nodealloc.kubelet', '--format', 'json'],
                            cwd=str(empty), env=env, capture_output=True, text=True, check=False)
    assert list(json.loads(listed.stdout)) == [str(collections / 'ansible_collections')], listed.stdout + listed.stderr
    result = subprocess.run([os.path.join(BIN, 'ansible-playbook'), 'nodealloc.kubelet.recommend', '-i', 'localhost,',
                             '-c', 'local', '--check', '-e', 'reservations_sample_seconds=1'],
                            cwd=str(empty), env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads((empty / 'reports' / 'reservations.json').read_text())
    assert 'localhost' in json.dumps(report)
    assert sorted(os.listdir(empty)) == ['reports']
    # The AWX project layout the README gives: a file per playbook importing the installed collection's.
    project = tmp_path / 'project'
    project.mkdir()
    for name in ('recommend', 'observe', 'apply', 'rollback', 'report_merge'):
        (project / (name + '.yml')).write_text('- ansible.builtin.import_playbook: nodealloc.kubelet.%s\n' % name)
        checked = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '--syntax-check', '-i', 'localhost,', name + '.yml'],
                                 cwd=str(project), env=dict(env, PWD=str(project)), capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr
