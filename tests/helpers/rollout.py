"""Run the collection's playbooks against a fleet of test nodes and read what happened on the nodes.

Shared by the rollout scenarios on nspawn nodes (tests/scenarios) and on VM guests (tests/vm).
A fleet is a dict: ``inventory``, ``nodes``, ``state_dir``, ``kubeconfig``, ``api_url`` (the stand-in
API server) and ``extra_vars`` (the settings its scenarios run with). What happened is proven from the
stand-in kubelets' own logs and the files on the nodes, never from what the playbook says about itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import yaml

from nodes import nodeio

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where the ansible-playbook that runs the playbooks is: the running Python's, which a matrix lane (noxfile.py)
# chooses by running the scenario with its own interpreter, or NODEALLOC_ANSIBLE_BIN (hack/matrix-chroot.sh: one
# that runs in a chroot with a newer Python than this machine's).
BIN = os.environ.get('NODEALLOC_ANSIBLE_BIN') or os.path.dirname(sys.executable)
# The collection Ansible loads: the staged tree, or the one a matrix lane installed from the tarball.
COLLECTIONS_PATH = os.environ.get('NODEALLOC_TEST_COLLECTIONS_PATH') or os.path.join(ROOT, '.build')
CONFIG = '/var/lib/kubelet/config.yaml'
STEP_DIR = '/var/lib/nodealloc/step'


def command_for(fleet, *extra, check=False, playbook='playbooks/apply.yml', drop_in=False):
    """The ansible-playbook command and environment; ``drop_in`` keeps the role's default target.

    Without it the scenarios prove the main-file path (the nodes' kubelets have --config-dir, where the
    default would write a drop-in); the drop-in default is proven in tests/scenarios/test_safety.py.
    """
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOST_KEY_CHECKING='False')
    settings = ['-e%s=%s' % item for item in sorted(fleet['extra_vars'].items())]
    settings.append('-ereservations_kubeconfig=%s' % fleet['kubeconfig'])
    if not drop_in:
        settings.append('-ereservations_use_drop_in=false')
    command = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet['inventory'], playbook] + settings + list(extra)
    if check:
        command.append('--check')
    return command, env


def run_playbook(fleet, playbook, *extra):
    """Run a playbook with the role's default target (the drop-in); output kept in the fleet's state dir."""
    command, env = command_for(fleet, *extra, playbook=playbook, drop_in=True)
    start = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=900)
    result.wall_seconds = time.monotonic() - start
    name = '%s-%s-%d.log' % (os.path.basename(playbook), 'check' if '--check' in extra else 'run', int(time.time()))
    with open(os.path.join(fleet['state_dir'], name), 'w', encoding='utf-8') as handle:
        handle.write(' '.join(command) + '\n' + result.stdout + '\n--- stderr ---\n' + result.stderr)
    return result


def hosts_by_task(output, header):
    """For each time a task whose header line starts with ``header`` ran (once per batch in a serial play), the
    sorted hosts it reported changed, ok or fatal on: from ansible-playbook's default output."""
    sections = re.split(r'^(?=TASK \[|PLAY |NO MORE HOSTS)', output, flags=re.M)
    return [sorted(re.findall(r'^(?:changed|ok|fatal): \[(\w+)\]', section, re.M)) for section in sections
            if section.startswith(header)]


def output_tail(result):
    """The end of a playbook's stdout and stderr, for an assertion message: a run can fail outside the play's output."""
    return result.stdout[-3000:] + '\n--- stderr ---\n' + result.stderr[-2000:]


def log_output(fleet, stdout, stderr, start):
    test_name = os.environ.get('PYTEST_CURRENT_TEST', 'playbook').split('::')[-1].split(' ')[0]
    with open(os.path.join(fleet['state_dir'], '%s-%d.log' % (test_name, int(start))), 'a') as handle:
        handle.write(stdout + '\n--- stderr ---\n' + stderr)


def apply(fleet, *extra, check=False, playbook='playbooks/apply.yml'):
    command, env = command_for(fleet, *extra, check=check, playbook=playbook)
    start = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=1500)
    result.wall_seconds = time.monotonic() - start
    log_output(fleet, result.stdout, result.stderr, start)
    return result


def config_digest(node):
    return hashlib.sha256(nodeio.read_bytes(node, CONFIG)).hexdigest()


def running_config(node):
    return yaml.safe_load(nodeio.read_bytes(node, CONFIG))


def starts_since(node, mark):
    return [e for e in nodeio.events(node) if e['event'] == 'start' and e['time'] >= mark]


def restart_windows(nodes, mark):
    """(node, stop time, healthy time) for every restart since ``mark``, from the stand-ins' logs."""
    windows = []
    for node in nodes:
        log = [e for e in nodeio.events(node) if e['time'] >= mark]
        stops = [e['time'] for e in log if e['event'] == 'stop']
        healthy = [e['time'] for e in log if e['event'] == 'healthy']
        for stop in stops:
            after = [h for h in healthy if h >= stop]
            windows.append((node['name'], stop, after[0] if after else None))
    return sorted(windows, key=lambda w: w[1])


def api_node_status(fleet, node):
    """The Node's status as the stand-in API server holds it (written by the node's stand-in kubelet)."""
    with urllib.request.urlopen('%s/api/v1/nodes/%s' % (fleet['api_url'], node['name']), timeout=10) as response:
        return json.load(response)['status']


def changed_tasks(stdout):
    """Every 'changed:' line of a playbook's output with the task it belongs to, to name what changed."""
    found, task = [], None
    for line in stdout.splitlines():
        task = line if line.startswith('TASK [') else task
        if line.startswith('changed:'):
            found.append('%s %s' % (task, line))
    return found


def recap_changed_counts(stdout):
    return [int(line.split('changed=')[1].split()[0]) for line in stdout.splitlines() if 'changed=' in line]


def leftovers(node):
    """Journal, lock holder and temporary files a step could leave on a node."""
    found = [os.path.join(STEP_DIR, n) for n in nodeio.listdir(node, STEP_DIR)]
    for directory in ('/var/lib/kubelet', '/etc/kubernetes/kubelet.conf.d'):
        found += [os.path.join(directory, n) for n in nodeio.listdir(node, directory) if n.endswith('.nodealloc.tmp')]
    return found


def healthy_on_last_start(node, mark):
    log = [e for e in nodeio.events(node) if e['time'] >= mark]
    starts = [e for e in log if e['event'] == 'start']
    if not starts:
        return None
    last = starts[-1]
    return last if any(e['event'] == 'healthy' and e['time'] >= last['time'] for e in log) else None


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError('gave up after %d s waiting for %s' % (seconds, what))
