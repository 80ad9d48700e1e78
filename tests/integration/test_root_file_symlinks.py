"""Root's files on a node against a real unprivileged user (issue 44): the facts module and the sampler run as root,
as processes, after ``nobody`` planted links and files in a directory it can write.

Each directory below is one a user can write: owned by nobody (uid 65534), or root's with mode 0777. ``nobody``
plants, with its own credentials (setpriv), a symbolic link at the history, the sampler's state and the ``.prom``
path, each to a root-owned 0640 file whose last line has no newline (an append through the link would first cut it).
Measured on the code before the fix: the history link cut that line and appended JSON, the ``.prom`` link replaced
the target and made it 0644, and a user's 0666 history of invented samples was used without a word.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLER = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')
MODULE = 'ansible_collections.nodealloc.kubelet.plugins.modules.node_reservation_facts'
NOBODY = 65534
AS_NOBODY = ['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups']
VICTIM_BYTES = b'root:secret line one\nroot:secret last line without newline'
LINK_REFUSED = 'is a symbolic link (to %s): not followed, nothing read or written there'

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason='needs root to act as nobody and to own the victim'),
              pytest.mark.skipif(shutil.which('setpriv') is None, reason='needs setpriv (util-linux)')]


@pytest.fixture
def node():
    """A directory nobody can reach (pytest's tmp_path is root's 0700), a root-only victim in it, and the victim's
    stat; removed afterwards."""
    base = tempfile.mkdtemp(prefix='nodealloc-links-', dir='/tmp')
    os.chmod(base, 0o755)
    secret_dir = os.path.join(base, 'root-only')
    os.mkdir(secret_dir, 0o700)
    victim = os.path.join(secret_dir, 'shadow-like')
    with open(victim, 'wb') as handle:
        handle.write(VICTIM_BYTES)
    os.chmod(victim, 0o640)
    try:
        yield {'base': base, 'victim': victim, 'stat': os.stat(victim)}
    finally:
        shutil.rmtree(base)


def users_directory(node, name, kind):
    """A directory nobody can write: its own (``owned``) or root's with mode 0777 (``world``)."""
    path = os.path.join(node['base'], name)
    os.mkdir(path, 0o755)
    if kind == 'owned':
        os.chown(path, NOBODY, NOBODY)
    else:
        os.chmod(path, 0o777)
    return path


def as_nobody(*argv):
    subprocess.run(AS_NOBODY + list(argv), check=True, capture_output=True)


def assert_untouched(node):
    stat = os.stat(node['victim'])
    with open(node['victim'], 'rb') as handle:
        assert handle.read() == VICTIM_BYTES
    assert (stat.st_mode, stat.st_uid, stat.st_gid, stat.st_ino) == (
        node['stat'].st_mode, node['stat'].st_uid, node['stat'].st_gid, node['stat'].st_ino)


def environment():
    return {'PATH': os.environ['PATH'], 'PYTHONPATH': ':'.join(p for p in sys.path if p)}


def run_facts(node, args):
    args_file = os.path.join(node['base'], 'args.json')
    with open(args_file, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, sample_seconds=0)}, handle)
    completed = subprocess.run([sys.executable, '-m', MODULE, args_file], capture_output=True, text=True, check=False,
                               env=environment(), timeout=120)
    assert 'Traceback' not in completed.stderr + completed.stdout, completed.stderr
    return json.loads(completed.stdout)


def install_sampler(node):
    """The installed layout (tests/integration/test_sampler.py): the script beside the collection's module_utils."""
    utils = os.path.join(node['base'], 'lib', 'ansible_collections', 'nodealloc', 'kubelet', 'plugins')
    os.makedirs(utils)
    os.symlink(os.path.join(ROOT, 'plugins', 'module_utils'), os.path.join(utils, 'module_utils'))
    script = os.path.join(node['base'], 'lib', 'nodealloc-sampler.py')
    shutil.copyfile(SAMPLER, script)
    return script


@pytest.mark.parametrize('kind', ['owned', 'world'])
def test_the_facts_module_refuses_a_link_at_the_history_and_at_the_textfile(node, kind):
    state = users_directory(node, 'state', kind)
    textfile_dir = users_directory(node, 'textfile', kind)
    history = os.path.join(state, 'history.jsonl')
    textfile = os.path.join(textfile_dir, 'nodealloc.prom')
    as_nobody('ln', '-s', node['victim'], history)
    as_nobody('ln', '-s', node['victim'], textfile)

    recorded = run_facts(node, {'record': True, 'history_path': history})
    assert not recorded.get('failed'), recorded.get('msg')
    assert recorded['history']['recorded'] is False
    reasons = ' '.join(recorded['history']['problems'])
    assert '%s: the directory is' % state in reasons and 'the history is not used' in reasons, reasons
    assert 'was not recorded: %s: the directory is' % state in recorded['history']['not_recorded']
    assert_untouched(node)

    written = run_facts(node, {'history': False, 'textfile_path': textfile})
    assert written.get('failed') and written['msg'].startswith('%s: the directory is' % textfile_dir), written.get('msg')
    assert_untouched(node)
    assert os.readlink(history) == node['victim'] and os.readlink(textfile) == node['victim']


def test_the_facts_module_refuses_a_link_in_a_root_directory_left_open_to_no_one_else(node):
    # The directory is root's 0755 (as the role makes it); a link root itself left there is still not followed.
    state = os.path.join(node['base'], 'state')
    os.mkdir(state, 0o755)
    history = os.path.join(state, 'history.jsonl')
    os.symlink(node['victim'], history)
    result = run_facts(node, {'record': True, 'history_path': history})
    assert result['history']['recorded'] is False
    assert any(problem.startswith('%s %s' % (history, LINK_REFUSED % node['victim']))
               for problem in result['history']['problems']), result['history']['problems']
    assert_untouched(node)


@pytest.mark.parametrize('kind', ['owned', 'world'])
def test_the_sampler_refuses_links_exits_non_zero_and_says_why(node, kind):
    script = install_sampler(node)
    state = users_directory(node, 'state', kind)
    textfile_dir = users_directory(node, 'textfile', kind)
    paths = {'history': os.path.join(state, 'history.jsonl'), 'state': os.path.join(state, 'sampler-state.json'),
             'textfile': os.path.join(textfile_dir, 'nodealloc.prom')}
    for path in paths.values():
        as_nobody('ln', '-s', node['victim'], path)
    run = subprocess.run([sys.executable, '-I', '-S', script] + ['--%s=%s' % item for item in sorted(paths.items())]
                         + ['--sample-seconds', '0.2', '--step-dir', ''],
                         capture_output=True, text=True, check=False, env={'PATH': os.environ['PATH']}, timeout=120)
    assert run.returncode == 1, run.stderr
    assert 'Traceback' not in run.stderr, run.stderr
    assert '%s: the directory is' % state in run.stderr and 'this reading was not recorded' in run.stderr, run.stderr
    assert '%s: metrics not written: %s: the directory is' % (paths['textfile'], textfile_dir) in run.stderr, run.stderr
    assert_untouched(node)
    assert all(os.readlink(path) == node['victim'] for path in paths.values())


@pytest.mark.parametrize('kind', ['owned', 'world'])
def test_a_users_history_of_invented_samples_is_not_used_and_the_reason_given(node, kind):
    state = users_directory(node, 'state', kind)
    history = os.path.join(state, 'history.jsonl')
    # Samples a week long, all of 1 MiB: used, they would set the node's percentile.
    invented = ''.join('{"t": %d, "non_pod_bytes": 1048576, "non_pod_millicores": 1}\n' % t
                       for t in range(1700000000, 1700600000, 600))
    as_nobody('sh', '-c', 'umask 0; printf %%s "$1" > %s' % history, 'sh', invented)
    assert (os.stat(history).st_uid, os.stat(history).st_mode & 0o777) == (NOBODY, 0o666)
    result = run_facts(node, {'history_path': history})
    assert not result.get('failed'), result.get('msg')
    assert result['history']['samples'] == 1  # this run's reading alone
    reasons = result['history']['problems']
    assert len(reasons) == 1 and reasons[0].startswith('%s: the directory is' % state), reasons
    assert reasons[0].endswith('; the history is not used')
    with open(history) as handle:
        assert handle.read() == invented
