"""Wall time of a rollout over N real test nodes against a bare playbook restarting the same kubelets.

Usage: python benchmarks/rollout.py [--json] [--nodes N]

Boots N nodes (tests/nodes/testnodes.py: systemd-nspawn, sshd, the stand-in kubelet), then in the
same run times (a) playbooks/apply.yml, which measures, writes, restarts and checks each node in
turn (every node changes: its initial reservations are far below what it uses), and (b)
benchmarks/restart_only.yml, which only restarts each kubelet serially and waits for /healthz.
Reports ratio a/b. Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from nodes import testnodes  # noqa: E402

BIN = os.path.dirname(sys.executable)


def playbook(inventory, path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_HOST_KEY_CHECKING='False')
    start = time.monotonic()
    result = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', inventory, path] + list(extra),
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError('%s failed:\n%s' % (path, result.stdout[-2000:]))
    return time.monotonic() - start


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--nodes', type=int, default=3)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print(json.dumps({'name': 'rollout', 'skipped': 'needs root'}))
        return 0
    state_dir = tempfile.mkdtemp(prefix='nodealloc-bench-')
    inventory, _nodes = testnodes.up(args.nodes, state_dir)
    try:
        baseline = playbook(inventory, 'benchmarks/restart_only.yml')
        rollout = playbook(inventory, 'playbooks/apply.yml', '-e', 'reservations_sample_seconds=1',
                           '-e', 'reservations_health_poll_seconds=1')
        baseline_again = playbook(inventory, 'benchmarks/restart_only.yml')
    finally:
        testnodes.down(state_dir)
    baseline_seconds = (baseline + baseline_again) / 2
    result = {'name': 'rollout', 'nodes': args.nodes, 'rollout_seconds': round(rollout, 1),
              'restart_only_seconds': round(baseline_seconds, 1), 'ratio': round(rollout / baseline_seconds, 2),
              'target': 1.3}
    print(json.dumps(result) if args.json else
          '%(nodes)d nodes: rollout %(rollout_seconds).1f s, restart only %(restart_only_seconds).1f s, '
          'ratio %(ratio).2f (target %(target).1f)' % result)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
