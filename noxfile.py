"""The controller support matrix: one nox session per ansible-core minor the collection claims (meta/runtime.yml).

Run by hack/run-tests.sh (``make test``) through hack/matrix.sh, or by hand: ``nox -l`` lists the lanes,
``nox -s "controller(ansible_core='2.16')"`` runs one. Each lane, with its own ansible-core and Python:

1. builds the tarball from this tree (``ansible-galaxy collection build``) and installs it into a path of the
   lane's own (``ansible-galaxy collection install -p``), as a user of a release does;
2. runs ``nodealloc.kubelet.recommend --check`` and ``nodealloc.kubelet.apply --check`` from that installed
   collection in an empty directory against localhost (the report must be written, rc 0);
3. runs the role's invalid-input tests, the YAML-writer tests that take the running ansible-core's own
   string types (tests/unit), and node_reservation_facts on a runtime in a cgroup named with bytes that are not UTF-8
   (tests/integration/test_module_results_utf8.py: this ansible-core takes the result) with the lane's
   ansible-playbook and the installed collection;
4. the rollout happy path on two nspawn nodes (tests/scenarios/test_rollout.py) with the lane's
   ansible-playbook (the ``rollout`` part: ``nox -s ... -- rollout``).

The pinned ansible-core of requirements.txt keeps the whole suite; the lanes prove the rest of the claimed range.
ansible-core 2.20 and later need Python >= 3.12, which Debian 12 does not have: those lanes run in a Debian 13
chroot (hack/matrix-chroot.sh), where this same file runs under the chroot's Python 3.13.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys

import nox

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from helpers import host_cgroups_lock as _host_cgroups_lock  # noqa: E402  pylint: disable=wrong-import-position
# The newest patch release of each minor on PyPI when this was written; update deliberately, as requirements.txt.
# The lowest line here is the one meta/runtime.yml's requires_ansible and the role's min_ansible_version claim.
ANSIBLE_CORE = {
    '2.16': '2.16.19',
    '2.17': '2.17.14',
    '2.18': '2.18.19',
    '2.19': '2.19.14',
    '2.20': '2.20.10',
    '2.21': '2.21.5',
}
# ansible-core's own controller Python floor for 2.20 on (its setup.cfg python_requires).
NEEDS_PYTHON_312 = ('2.20', '2.21')
# What a lane installs beside ansible-core: the tests' runner, the module's psutil, and the kubernetes client the
# role's API server check needs in the rollout. Their versions are requirements*.txt's (_constraints), so a lane
# differs from the main suite only in ansible-core and what that ansible-core itself requires.
LANE_PACKAGES = ('pytest', 'psutil', 'PyYAML', 'kubernetes')
# Pins of requirements*.txt a lane must not take: ansible-core's own, and what it bounds differently per minor.
NOT_CONSTRAINED = ('ansible-core', 'ansible', 'resolvelib')
# Tests that run in each lane: the role's invalid-input checks, the config writer with this version's types, and a
# module result holding node bytes that are not UTF-8 (a cgroup of the test's own, made and removed as root: ~4 s).
LANE_TESTS = ('tests/unit/roles/test_reservations_invalid_input.py', 'tests/unit/plugins/filter/test_controller_types.py',
              'tests/integration/test_module_results_utf8.py')
KUBELET_CONFIG = ('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n'
                  'kubeReserved:\n  cpu: 100m\n  memory: 256Mi\nsystemReserved:\n  memory: 256Mi\n'
                  'evictionHard:\n  memory.available: 100Mi\n')
ROLLOUT_TEST = 'tests/scenarios/test_rollout.py::test_happy_path_changes_every_node_once_in_order_and_a_second_run_changes_nothing'
# Two nodes in a lane's rollout (the main line runs three): the serial play's order with this ansible-core is still
# checked (the second node stops only once the first is healthy), at two thirds of the time (hack/matrix-chroot.sh too).
ROLLOUT_FLEET_SIZE = '2'


def _pinned_ansible_core():
    """The ansible-core version requirements.txt pins: the one the whole suite runs on."""
    with open(os.path.join(ROOT, 'requirements.txt'), encoding='utf-8') as handle:
        for line in handle:
            pin = line.split('#', 1)[0].strip()
            if pin.lower().startswith('ansible-core=='):
                return pin.split('==', 1)[1]
    return None


def _constraints(work):
    """requirements.txt's and requirements-test.txt's pins as a pip constraints file, less NOT_CONSTRAINED."""
    pins = []
    for name in ('requirements.txt', 'requirements-test.txt'):
        with open(os.path.join(ROOT, name), encoding='utf-8') as handle:
            for line in handle:
                line = line.split('#', 1)[0].strip()
                if line and not line.startswith('-') and line.split('==', 1)[0].lower() not in NOT_CONSTRAINED:
                    pins.append(line)
    path = os.path.join(work, 'constraints.txt')
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(pins) + '\n')
    return path


def _kubernetes_core():
    """The kubernetes.core collection directory in the main venv's ansible package."""
    found = glob.glob(os.path.join(ROOT, '.venv', 'lib', 'python3*', 'site-packages', 'ansible_collections', 'kubernetes', 'core'))
    if not found:
        raise RuntimeError('no kubernetes.core in %s/.venv: run make bootstrap-test' % ROOT)
    return found[0]


nox.options.default_venv_backend = 'venv'
nox.options.error_on_missing_interpreters = False


def _lanes_here():
    """The minors this interpreter can run: ansible-core 2.20 on needs Python 3.12."""
    high = sys.version_info >= (3, 12)
    return [minor for minor in ANSIBLE_CORE if (minor in NEEDS_PYTHON_312) == high]


PARTS = ('static', 'rollout')
# pytest's exit 5 is "no test collected": a selection that is empty on this machine is not a failure, as in
# hack/run-tests.sh (a test renamed away is exit 4, "not found", and fails).
PYTEST_OK = [0, 5]
# 'install' alone builds and installs the tarball, which every part does first (hack/matrix-chroot.sh asks for it
# before it runs a chroot lane's rollout from the host).
ALSO_ACCEPTED = ('install',)


@nox.session(reuse_venv=True)
@nox.parametrize('ansible_core', _lanes_here())
def controller(session, ansible_core):
    """One ansible-core minor: tarball built and installed, recommend/apply --check, invalid input, rollout.

    Positional arguments choose the parts (default both): ``static`` boots nothing; ``rollout`` boots the three
    nspawn nodes. hack/run-tests.sh runs the static parts beside the main line and the rollouts on its nspawn line
    (one fleet at a time; ``NODEALLOC_NSPAWN_SLOT=1`` puts a lane's fleet beside another: tests/nodes/testnodes.py).
    """
    parts = session.posargs or PARTS
    unknown = set(parts) - set(PARTS + ALSO_ACCEPTED)
    if unknown:
        session.error('unknown part(s) %s: choose from %s' % (', '.join(sorted(unknown)), ', '.join(PARTS + ALSO_ACCEPTED)))
    work = session.create_tmp()
    session.install('-c', _constraints(work), 'ansible-core==%s' % ANSIBLE_CORE[ansible_core], *LANE_PACKAGES)
    bin_dir = os.path.join(session.virtualenv.location, 'bin')
    installed = _build_and_install(session, bin_dir, work)
    # The tests' own code comes from the staged tree (hack/stage-collection.sh); Ansible loads the installed tarball.
    test_env = {'PYTHONPATH': os.path.join(ROOT, '.build'), 'NODEALLOC_TEST_COLLECTIONS_PATH': installed,
                'ANSIBLE_CONFIG': os.path.join(ROOT, 'ansible.cfg')}
    python = os.path.join(bin_dir, 'python')
    if 'static' in parts:
        _from_an_empty_directory(session, bin_dir, work, installed)
        session.run(python, '-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rs', '--basetemp', os.path.join(work, 'pytest'),
                    *LANE_TESTS, env=test_env)
    if 'rollout' in parts and ANSIBLE_CORE[ansible_core] == _pinned_ansible_core():
        # The main line of make test runs this very scenario with the pinned ansible-core; the lane's static part has
        # already run this version from the installed tarball. Booting the fleet again would prove nothing new.
        session.log('rollout: the main suite runs it with ansible-core %s, the pinned version' % ANSIBLE_CORE[ansible_core])
    elif 'rollout' in parts:
        # The scenario runs the playbooks with the ansible-playbook beside the Python running it (tests/helpers/rollout.py):
        # this lane's. It boots nspawn nodes of the slot NODEALLOC_NSPAWN_SLOT names (0 unless set).
        session.run(python, '-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rs',
                    '--basetemp', os.path.join(work, 'pytest-rollout'), '--nodes-lane', 'host', ROLLOUT_TEST,
                    env=dict(test_env, NODEALLOC_FLEET_SIZE=ROLLOUT_FLEET_SIZE), external=True,
                    success_codes=PYTEST_OK)


def _build_and_install(session, bin_dir, work):
    """The tarball built from this tree and installed into the lane's own path, as a user of a release does."""
    installed = os.path.join(work, 'installed')
    for left in ('build', 'installed'):
        shutil.rmtree(os.path.join(work, left), ignore_errors=True)
    with session.chdir(work):  # not ROOT, whose ansible.cfg names the staged tree as the collections path
        session.run(os.path.join(bin_dir, 'ansible-galaxy'), 'collection', 'build', '--output-path', os.path.join(work, 'build'), ROOT,
                    silent=True)
        tarball = next(os.path.join(work, 'build', name) for name in os.listdir(os.path.join(work, 'build')) if name.endswith('.tar.gz'))
        # The dependency (galaxy.yml) offline: the kubernetes.core that the ansible package of requirements-test.txt
        # put into the main venv, since only PyPI is reachable here.
        session.run(os.path.join(bin_dir, 'ansible-galaxy'), 'collection', 'install', '--offline', '--force', '-p', installed,
                    _kubernetes_core(), tarball, silent=True)
    return installed


def _from_an_empty_directory(session, bin_dir, work, installed):
    """recommend --check and apply --check from the installed collection, in an operator's directory, on localhost."""
    ops = os.path.join(work, 'ops')
    shutil.rmtree(ops, ignore_errors=True)
    os.makedirs(ops)
    # Nothing in it but an inventory: no ansible.cfg, the installed collection only.
    with open(os.path.join(ops, 'inventory.ini'), 'w', encoding='utf-8') as handle:
        handle.write('localhost ansible_connection=local ansible_python_interpreter=%s\n' % os.path.join(bin_dir, 'python'))
    # hack/matrix.sh starts nox without the Makefile's ANSIBLE_CONFIG and PYTHONPATH.
    env = {'ANSIBLE_COLLECTIONS_PATH': installed, 'ANSIBLE_NOCOLOR': '1', 'PWD': ops}
    # The real-cgroup tests of the main line change the host's cgroups meanwhile (tests/helpers/host_cgroups_lock.py).
    with session.chdir(ops), _host_cgroups_lock.held():
        session.run(os.path.join(bin_dir, 'ansible-playbook'), '-i', 'inventory.ini', 'nodealloc.kubelet.recommend', '--check',
                    '-e', 'reservations_sample_seconds=0.2', env=env, silent=True)
        with open(os.path.join(ops, 'reports', 'reservations.json'), encoding='utf-8') as handle:
            report = json.load(handle)
        # Measured: 'ok' where a kubelet runs (the nspawn nodes' stand-ins count, seen from the host), 'no_kubelet'
        # where none does; 'failed' or 'unreachable' is not a measurement.
        if [node['host'] for node in report['nodes']] != ['localhost'] or report['nodes'][0].get('status') not in ('ok', 'no_kubelet'):
            session.error('recommend wrote no measured row for localhost: %s' % report['nodes'])
        # apply needs a kubelet config to decide on (without one it refuses, by design): kubeadm's, shortened.
        config = os.path.join(ops, 'config.yaml')
        with open(config, 'w', encoding='utf-8') as handle:
            handle.write(KUBELET_CONFIG)
        session.run(os.path.join(bin_dir, 'ansible-playbook'), '-i', 'inventory.ini', 'nodealloc.kubelet.apply', '--check',
                    '-e', 'reservations_sample_seconds=0.2', '-e', 'reservations_kubelet_config_path=%s' % config,
                    '-e', 'reservations_history_path=%s' % os.path.join(ops, 'history.jsonl'), env=env, silent=True)
        with open(config, encoding='utf-8') as handle:
            if handle.read() != KUBELET_CONFIG:
                session.error('apply --check changed %s' % config)
