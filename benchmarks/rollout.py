"""Wall time of a rollout over N real test nodes against a careful operator's restart-only playbook.

Usage: python benchmarks/rollout.py [--json] [--nodes N]

Boots N nodes (tests/nodes/testnodes.py: systemd-nspawn, sshd, the stand-in kubelet), then in the
same run times (a) playbooks/apply.yml at the shipped defaults (5-s sample, 2-s health polling, 30-s soak;
nothing overridden), which measures every node at once and then writes, restarts, checks and soaks
each node in turn (every node changes: its initial reservations are far below what it uses), and
(b) benchmarks/restart_only.yml, which restarts each kubelet serially, waits for the first healthy
answer and soaks the same 30 s with the same checks. The baseline runs before and after the rollout
and its mean is used. Reports the ratio a/b and a per-node breakdown of both from the
ansible.posix.json callback's task timings (the parts add up to the wall time). Needs root.
"""

from __future__ import annotations

import argparse
import datetime
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
STEP_TASK = 'Write, restart and verify on the node (it restores the backup itself on failure)'


def _is_step(name):
    # The json callback names a role's task '<role FQCN> : <task name>'.
    return name.split(' : ', 1)[-1] == STEP_TASK


def _seconds(duration):
    parse = datetime.datetime.fromisoformat
    return (parse(duration['end'].rstrip('Z')) - parse(duration['start'].rstrip('Z'))).total_seconds()


def playbook(inventory, path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_HOST_KEY_CHECKING='False',
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    start = time.monotonic()
    result = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', inventory, path] + list(extra),
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if result.returncode != 0:
        raise RuntimeError('%s failed:\n%s\n%s' % (path, result.stdout[-3000:], result.stderr[-2000:]))
    return wall, json.loads(result.stdout[result.stdout.index('{'):])


def breakdown(wall, report, nodes):
    """Seconds per part, summed over the run: the parts add up to ``wall``."""
    parts = {}
    plays_total = 0.0
    for play in report['plays']:
        play_seconds = _seconds(play['play']['duration'])
        plays_total += play_seconds
        tasks_total = 0.0
        for task in play['tasks']:
            seconds = _seconds(task['task']['duration'])
            tasks_total += seconds
            name = task['task']['name']
            if _is_step(name):
                for host, res in task['hosts'].items():
                    health = res.get('health') or {}
                    healthy = health.get('healthy_after_seconds', 0.0)
                    soak = health.get('soak_seconds', 0.0)
                    parts['step: restart until healthy (on node)'] = parts.get(
                        'step: restart until healthy (on node)', 0.0) + healthy
                    parts['step: soak (on node)'] = parts.get('step: soak (on node)', 0.0) + soak
                    parts['step: validate, backup, write, restart call (on node)'] = parts.get(
                        'step: validate, backup, write, restart call (on node)', 0.0) + max(
                            0.0, res.get('step_seconds', 0.0) - healthy - soak)
                step_seconds = sum(r.get('step_seconds', 0.0) for r in task['hosts'].values())
                parts['step: async start and polling latency (controller)'] = parts.get(
                    'step: async start and polling latency (controller)', 0.0) + seconds - step_seconds
                continue
            key = ('measure play: %s' % name) if play['play']['name'].startswith('Measure') else name
            parts[key] = parts.get(key, 0.0) + seconds
        key = 'between tasks, plays and batches (controller)'
        parts[key] = parts.get(key, 0.0) + play_seconds - tasks_total
    parts['ansible-playbook start and exit'] = wall - plays_total
    return {name: round(seconds / nodes, 2) for name, seconds in parts.items()}


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
        baseline, baseline_report = playbook(inventory, 'benchmarks/restart_only.yml')
        rollout, rollout_report = playbook(inventory, 'playbooks/apply.yml')
        baseline_again, _fleet_report = playbook(inventory, 'benchmarks/restart_only.yml')
    finally:
        testnodes.down(state_dir)
    baseline_seconds = (baseline + baseline_again) / 2
    changed = sum(1 for play in rollout_report['plays'] for task in play['tasks']
                  if _is_step(task['task']['name']) for res in task['hosts'].values() if res.get('changed'))
    # Every node starts far below what it uses: a rollout that changed fewer nodes measured something else.
    result = {'name': 'rollout', 'nodes': args.nodes, 'changed_nodes': changed, 'valid': changed == args.nodes,
              'rollout_seconds': round(rollout, 1), 'restart_only_seconds': round(baseline_seconds, 1),
              'restart_only_runs': [round(baseline, 1), round(baseline_again, 1)],
              'ratio': round(rollout / baseline_seconds, 2), 'target': 1.1,
              'rollout_per_node': breakdown(rollout, rollout_report, args.nodes),
              'restart_only_per_node': breakdown(baseline, baseline_report, args.nodes)}
    if args.json:
        print(json.dumps(result))
    else:
        print('%(nodes)d nodes (%(changed_nodes)d changed): rollout %(rollout_seconds).1f s, restart only '
              '%(restart_only_seconds).1f s, ratio %(ratio).2f (target %(target).1f)' % result)
        for side in ('rollout_per_node', 'restart_only_per_node'):
            print('%s (seconds per node, sum %.1f):' % (side, sum(result[side].values())))
            for name, seconds in result[side].items():
                print('  %6.2f  %s' % (seconds, name))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
