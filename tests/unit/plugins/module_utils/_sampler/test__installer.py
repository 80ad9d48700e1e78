"""The sampler's code: the import closure is complete on its own, and install makes the node's copy exact."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _installer
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.planted_links import NOBODY_UID, needs_root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
SCRIPT = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')


def test_the_sampler_runs_from_the_installed_files_alone(tmp_path):
    written, removed = _installer.install(str(tmp_path), _installer.sources())
    assert removed == [] and '_sampler/_sample_once.py' in written and '_sampler/__init__.py' in written
    script = tmp_path / 'nodealloc-sampler.py'
    script.write_bytes(open(SCRIPT, 'rb').read())
    # -I -S as the unit runs it: no PYTHONPATH, no site; the script finds only what install() wrote beside it. A measurement
    # runs every import, including those inside functions.
    textfile = tmp_path / 'metrics.prom'
    result = subprocess.run([sys.executable, '-I', '-S', str(script), '--history', str(tmp_path / 'h.jsonl'),
                             '--state', str(tmp_path / 'state.json'), '--textfile', str(textfile),
                             '--decision', str(tmp_path / 'decision.json'), '--sample-seconds', '0.1'],
                            capture_output=True, text=True, check=False)
    assert 'ModuleNotFoundError' not in result.stderr and 'ImportError' not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr


def test_every_collection_import_of_the_closure_is_in_it():
    files = _installer.sources()
    modules = {name[:-len('/__init__.py')] if name.endswith('/__init__.py') else name[:-3] for name in files}
    for name, source in files.items():
        for imported in _installer.imported_names(source):
            # an imported name is a module of the closure, or an attribute of one
            assert imported.replace('.', '/') in modules or imported.rpartition('.')[0].replace('.', '/') in modules, (name, imported)


def test_the_closure_holds_the_packages_it_imports_from_and_nothing_the_sampler_does_not_need():
    files = _installer.sources()
    assert '_sampler/__init__.py' in files and '_node/__init__.py' in files and '_errors.py' in files
    # the sampler measures and records; it neither decides a rollout nor writes a report
    assert not [name for name in files if name.startswith(('_rollout/', '_report/'))], sorted(files)


def test_imported_names_reads_every_import_form():
    source = '\n'.join([
        'from ansible_collections.nodealloc.kubelet.plugins.module_utils import _a, _b',
        'from ansible_collections.nodealloc.kubelet.plugins.module_utils._c import thing',
        'from ansible_collections.nodealloc.kubelet.plugins.module_utils._pkg import _mod',
        'import ansible_collections.nodealloc.kubelet.plugins.module_utils._d',
        'import os',
        'from ansible.module_utils.basic import AnsibleModule',
        'def later():',
        '    from ansible_collections.nodealloc.kubelet.plugins.module_utils import _e',
    ])
    assert _installer.imported_names(source) == {'_a', '_b', '_c', '_c.thing', '_pkg', '_pkg._mod', '_d', '_e'}


def test_install_writes_what_differs_removes_stale_sources_and_keeps_the_rest(tmp_path):
    files = {'_one.py': 'ONE = 1\n', '_two.py': 'TWO = 2\n'}
    assert _installer.install(str(tmp_path), files) == (['_one.py', '_two.py'], [])
    target = tmp_path / _installer.RELATIVE_DIR
    assert (target / '_one.py').read_text() == 'ONE = 1\n'
    assert oct((target / '_one.py').stat().st_mode & 0o777) == '0o644'
    assert _installer.install(str(tmp_path), files) == ([], [])

    (target / '_old.py').write_text('OLD = 0\n')
    (target / '_pkg').mkdir()
    (target / '_pkg' / '_stale.py').write_text('STALE = 0\n')
    (target / '__pycache__').mkdir()
    (target / 'notes.txt').write_text('not ours to judge')
    changed = {'_one.py': 'ONE = 1\n', '_two.py': 'TWO = 22\n'}
    assert _installer.install(str(tmp_path), changed, check_mode=True) == (['_two.py'], ['_old.py', '_pkg/_stale.py'])
    assert (target / '_two.py').read_text() == 'TWO = 2\n' and (target / '_old.py').exists()
    assert _installer.install(str(tmp_path), changed) == (['_two.py'], ['_old.py', '_pkg/_stale.py'])
    assert sorted(os.listdir(target)) == ['__pycache__', '_one.py', '_pkg', '_two.py', 'notes.txt']
    assert os.listdir(target / '_pkg') == []
    assert (target / '_two.py').read_text() == 'TWO = 22\n'


def test_install_in_check_mode_on_a_new_node_creates_nothing(tmp_path):
    assert _installer.install(str(tmp_path / 'new'), {'_one.py': 'ONE = 1\n'}, check_mode=True) == (['_one.py'], [])
    assert not (tmp_path / 'new').exists()


# Issue 44: a textfile or state directory another user owns or can write is refused, never chmod'ed.
@pytest.mark.parametrize('mode', [0o775, 0o777, 0o1777])
def test_an_existing_directory_others_can_write_is_refused_and_left_as_it_is(tmp_path, mode):
    textfile_dir = tmp_path / 'textfile_collector'
    textfile_dir.mkdir()
    os.chmod(textfile_dir, mode)
    for check_mode in (True, False):
        with pytest.raises(_safe_open.UnsafePathError, match='textfile_collector: the directory is writable by'):
            _installer.ensure_directory(str(textfile_dir), check_mode)
    assert os.stat(textfile_dir).st_mode & 0o7777 == mode


@needs_root
def test_an_existing_directory_another_user_owns_is_refused(tmp_path):
    state_dir = tmp_path / 'nodealloc'
    state_dir.mkdir(mode=0o755)
    os.chown(state_dir, NOBODY_UID, NOBODY_UID)
    with pytest.raises(_safe_open.UnsafePathError, match='the directory is owned by uid 65534'):
        _installer.ensure_directory(str(state_dir))
    assert os.stat(state_dir).st_uid == NOBODY_UID


def test_a_missing_directory_is_made_and_a_root_one_accepted(tmp_path):
    assert _installer.ensure_directory(str(tmp_path / 'a' / 'b'))
    assert not _installer.ensure_directory(str(tmp_path / 'a' / 'b'))
