"""Wall time of a rollout over N real test nodes against a careful operator's restart-only playbook.

Usage: python benchmarks/rollout.py [--json] [--nodes N | --batches 1,3,8]

Boots N nodes (tests/nodes/testnodes.py: systemd-nspawn, sshd, the stand-in kubelet), then in the
same run times (a) playbooks/apply.yml at the shipped defaults (5-s sample, 2-s health polling, 30-s soak;
nothing overridden), which measures every node at once and then writes, restarts, checks and soaks
each node in turn (every node changes: its initial reservations are far below what it uses), and
(b) benchmarks/restart_only.yml, which restarts each kubelet serially, waits for the first healthy
answer and soaks the same 30 s with the same checks. The baseline runs before and after the rollout
and its mean is used. Reports the ratio a/b and a per-node breakdown of both from the
ansible.posix.json callback's task timings (the parts add up to the wall time). Needs root.

With ``--batches 1,3,8`` it boots as many nodes as the batches hold and rolls them in those batches
(``nodealloc_serial``, the growing batches of docs/rollout.md), the baseline in the same batches: the nodes of a
batch are written, restarted and soaked together, so each batch's wall time (the serial play's time for that
batch, from the callback's play timings) is set against the first batch's, a single node's rollout in the same
run (issue 48: each at most 1.1 times it).
"""

from __future__ import annotations

import argparse
import configparser
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from nodes import testnodes  # noqa: E402

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout._batches import (  # noqa: E402
    batch_sizes, serial_items)

BIN = os.path.dirname(sys.executable)
# The on-node step's tasks: started on every node of a batch, then waited for on each node (with a restart
# throttle, polled in the first). The module's result, with its step_seconds and health, is in the one that ended it.
STEP_TASKS = ('Write, restart and verify on the node (it restores the backup itself on failure)',
              'Wait on the node for the step to end and take its result (the batch\'s nodes run theirs at once)')


def _is_step(name):
    # The json callback names a role's task '<role FQCN> : <task name>'.
    return name.split(' : ', 1)[-1] in STEP_TASKS


def _slowest_step(tasks):
    """The result of the node whose step took longest, among these step tasks' results."""
    results = [res for task in tasks for res in task['hosts'].values()]
    return max(results, key=lambda res: res.get('step_seconds', 0.0)) if results else {}


def _seconds(duration):
    parse = datetime.datetime.fromisoformat
    return (parse(duration['end'].rstrip('Z')) - parse(duration['start'].rstrip('Z'))).total_seconds()


def playbook(inventory, path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_HOST_KEY_CHECKING='False',
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    start, cpu = time.monotonic(), _children_cpu()
    result = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', inventory, path] + list(extra),
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if result.returncode != 0:
        raise RuntimeError('%s failed:\n%s\n%s' % (path, result.stdout[-3000:], result.stderr[-2000:]))
    report = json.loads(result.stdout[result.stdout.index('{'):])
    # ansible-playbook and everything it ran here (its workers, the ssh clients): the controller's share, not the
    # nodes', whose processes are this script's children too but still running.
    report['controller_cpu_seconds'] = round(_children_cpu() - cpu, 1)
    return wall, report


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


SERIAL_PLAY = 'Set kubelet reservations from the measurements, batch by batch'
BASELINE_PLAY = 'Restart every kubelet, one node at a time, and watch it'


def batch_seconds(report, play_name):
    """Each batch's seconds: the json callback starts a play entry for every batch of a serial play."""
    return [round(_seconds(play['play']['duration']), 1) for play in report['plays']
            if play['play']['name'] == play_name]


# The measure play's CPU sample on every node, reservations_sample_seconds' default (roles/reservations/defaults).
SAMPLE_SECONDS = 5
# docs/rollout.md's shape for large fleets, and the fleet the model is for.
MODEL_SHAPE = [1, 5, '10%', '25%', '100%']
MODEL_NODES = 1000


def fleet_model(batches, measure_seconds, nodes, controller_cpu_seconds, forks):
    """A model, not a measurement: the wall time of MODEL_NODES nodes in MODEL_SHAPE's batches, from this run.

    Two figures. ``this_machine``: a batch costs the single node's batch plus, for each further node, the
    least-squares slope of the measured batches' seconds over their sizes, and the measure play its seconds per
    node here, times MODEL_NODES: everything as this run had it, the nodes' own work (the measuring, the restarts,
    the soak's checks) on the controller's CPUs too, so this overstates a real fleet. ``controller_bound``: the
    controller's CPU seconds per node in this run (ansible-playbook and its workers and ssh clients, all plays)
    times MODEL_NODES over this machine's CPUs, plus what no CPU shortens, taken as never overlapping that: the
    measure play's sample once per round of ``forks`` nodes and each batch's single-node wall (its restart and soak).
    """
    sizes = [batch['size'] for batch in batches]
    seconds = [batch['rollout_seconds'] for batch in batches]
    mean_size, mean_seconds = sum(sizes) / len(sizes), sum(seconds) / len(seconds)
    spread = sum((size - mean_size) ** 2 for size in sizes)
    slope = max(0.0, sum((size - mean_size) * (second - mean_seconds) for size, second in zip(sizes, seconds))
                / spread) if spread else 0.0
    model_sizes = batch_sizes(serial_items(MODEL_SHAPE), MODEL_NODES)
    single = seconds[sizes.index(1)] if 1 in sizes else seconds[0]
    rolled = sum(single + (size - 1) * slope for size in model_sizes)
    measure = measure_seconds / nodes * MODEL_NODES
    cpus = os.cpu_count() or 1
    controller = controller_cpu_seconds / nodes * MODEL_NODES / cpus
    waits = SAMPLE_SECONDS * -(-MODEL_NODES // forks) + single * len(model_sizes)
    return {'nodes': MODEL_NODES, 'shape': MODEL_SHAPE, 'batches': model_sizes, 'forks': forks,
            'this_machine': {'seconds_per_further_node_in_a_batch': round(slope, 3),
                             'single_node_batch_seconds': single, 'measure_seconds': round(measure, 1),
                             'seconds': round(measure + rolled, 1), 'hours': round((measure + rolled) / 3600.0, 2)},
            'controller_bound': {'controller_cpu_seconds_per_node': round(controller_cpu_seconds / nodes, 2),
                                 'cpus': cpus, 'controller_seconds': round(controller, 1),
                                 'wait_seconds': round(waits, 1), 'seconds': round(controller + waits, 1),
                                 'hours': round((controller + waits) / 3600.0, 2)},
            'target_hours': 1.0}


def _forks():
    """The forks the playbooks ran with: ANSIBLE_FORKS, else the repository's ansible.cfg."""
    if os.environ.get('ANSIBLE_FORKS'):
        return int(os.environ['ANSIBLE_FORKS'])
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, 'ansible.cfg'))
    return parser.getint('defaults', 'forks', fallback=5)


def batch_steps(report):
    """For each batch of the serial play: the on-node step task's seconds and its slowest node's step seconds (the
    difference is the controller's: starting each node's step and polling it, at most ``forks`` nodes at once)."""
    found = []
    for play in report['plays']:
        if play['play']['name'] != SERIAL_PLAY:
            continue
        steps = [task for task in play['tasks'] if _is_step(task['task']['name'])]
        tasks = sorted(((_seconds(task['task']['duration']), task['task']['name'].split(' : ', 1)[-1])
                        for task in play['tasks']), reverse=True)
        found.append({'step_task_seconds': round(sum(_seconds(task['task']['duration']) for task in steps), 1),
                      'slowest_step_seconds': round(_slowest_step(steps).get('step_seconds', 0.0), 1),
                      'play_seconds': round(_seconds(play['play']['duration']), 1),
                      'longest_tasks': [[name, round(seconds, 1)] for seconds, name in tasks[:6]]})
    return found


def batches_argument(text):
    sizes = [int(size) for size in text.split(',')]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError('batch sizes are whole numbers of nodes, at least 1: %r' % text)
    return sizes


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
                continue
            key = ('measure play: %s' % name) if play['play']['name'].startswith('Measure') else name
            parts[key] = parts.get(key, 0.0) + seconds
        steps = [task for task in play['tasks'] if _is_step(task['task']['name'])]
        if steps:
            # The nodes of a batch run the step together: the tasks last as long as the slowest node's step and the
            # controller's start and polling around it; that node's parts are the ones on the wall.
            slowest = _slowest_step(steps)
            health = slowest.get('health') or {}
            healthy = health.get('healthy_after_seconds', 0.0)
            soak = health.get('soak_seconds', 0.0)
            step_seconds = slowest.get('step_seconds', 0.0)
            for part, part_seconds in (('step: restart until healthy (on node)', healthy),
                                       ('step: soak (on node)', soak),
                                       ('step: validate, backup, write, restart call (on node)',
                                        max(0.0, step_seconds - healthy - soak)),
                                       ('step: detached start and waiting latency (controller)',
                                        sum(_seconds(task['task']['duration']) for task in steps) - step_seconds)):
                parts[part] = parts.get(part, 0.0) + part_seconds
        key = 'between tasks, plays and batches (controller)'
        parts[key] = parts.get(key, 0.0) + play_seconds - tasks_total
    parts['ansible-playbook start and exit'] = wall - plays_total
    return {name: round(seconds / nodes, 2) for name, seconds in parts.items()}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--nodes', type=int, default=None, help='nodes, rolled one at a time (default 3)')
    parser.add_argument('--batches', type=batches_argument, default=None,
                        help='batch sizes, e.g. 1,3,8: as many nodes as they hold, rolled in those batches')
    args = parser.parse_args(argv)
    if args.batches and args.nodes:
        parser.error('--batches gives the number of nodes: not with --nodes')
    args.nodes = sum(args.batches) if args.batches else (args.nodes or 3)
    serial = ['-e', json.dumps({'nodealloc_serial': args.batches})] if args.batches else []
    baseline_serial = ['-e', json.dumps({'restart_only_serial': args.batches})] if args.batches else []
    if os.geteuid() != 0:
        print(json.dumps({'name': 'rollout', 'skipped': 'needs root'}))
        return 0
    state_dir = tempfile.mkdtemp(prefix='nodealloc-bench-')
    inventory, _nodes = testnodes.up(args.nodes, state_dir)
    try:
        baseline, baseline_report = playbook(inventory, 'benchmarks/restart_only.yml', *baseline_serial)
        rollout, rollout_report = playbook(inventory, 'playbooks/apply.yml', *serial)
        baseline_again, baseline_again_report = playbook(inventory, 'benchmarks/restart_only.yml', *baseline_serial)
    finally:
        testnodes.down(state_dir)
    baseline_seconds = (baseline + baseline_again) / 2
    # The result that holds the module's step_seconds (the started task's, when it polled; else the waiting one's).
    changed = sum(1 for play in rollout_report['plays'] for task in play['tasks'] if _is_step(task['task']['name'])
                  for res in task['hosts'].values() if res.get('changed') and 'step_seconds' in res)
    # Every node starts far below what it uses: a rollout that changed fewer nodes measured something else.
    result = {'name': 'rollout', 'nodes': args.nodes, 'forks': _forks(), 'changed_nodes': changed,
              'valid': changed == args.nodes,
              'rollout_seconds': round(rollout, 1), 'restart_only_seconds': round(baseline_seconds, 1),
              'restart_only_runs': [round(baseline, 1), round(baseline_again, 1)],
              'rollout_controller_cpu_seconds': rollout_report['controller_cpu_seconds'],
              'ratio': round(rollout / baseline_seconds, 2), 'target': 1.1,
              'rollout_per_node': breakdown(rollout, rollout_report, args.nodes),
              'restart_only_per_node': breakdown(baseline, baseline_report, args.nodes)}
    if args.batches:
        rolled = batch_seconds(rollout_report, SERIAL_PLAY)
        restarted = [round((first + second) / 2, 1) for first, second in zip(
            batch_seconds(baseline_report, BASELINE_PLAY), batch_seconds(baseline_again_report, BASELINE_PLAY))]
        result['batches'] = [
            {'size': size, 'rollout_seconds': seconds, 'restart_only_seconds': baseline_seconds_batch,
             'ratio_to_single_node': round(seconds / rolled[0], 2),
             'ratio_to_restart_only': round(seconds / baseline_seconds_batch, 2), **steps}
            for size, seconds, baseline_seconds_batch, steps in zip(args.batches, rolled, restarted,
                                                                    batch_steps(rollout_report))]
        result['batch_target'] = 1.1
        measure_seconds = sum(_seconds(play['play']['duration']) for play in rollout_report['plays']
                              if play['play']['name'].startswith('Measure'))
        result['model'] = fleet_model(result['batches'], measure_seconds, args.nodes,
                                      rollout_report['controller_cpu_seconds'], _forks())
        result['valid'] = result['valid'] and len(rolled) == len(args.batches)
    if args.json:
        print(json.dumps(result))
    else:
        print('%(nodes)d nodes (%(changed_nodes)d changed): rollout %(rollout_seconds).1f s, restart only '
              '%(restart_only_seconds).1f s, ratio %(ratio).2f (target %(target).1f)' % result)
        for batch in result.get('batches', ()):
            print('  batch of %(size)d: %(rollout_seconds).1f s, %(ratio_to_single_node).2f x the single node '
                  '(target 1.1), %(ratio_to_restart_only).2f x the careful restart of the same batch '
                  '(%(restart_only_seconds).1f s); the step task %(step_task_seconds).1f s, its slowest node\'s '
                  'step %(slowest_step_seconds).1f s' % batch)
        if 'model' in result:
            model = result['model']
            print('model: %d nodes in batches %s (target %.1f h): %.2f h bound by the controller (%.2f CPU s a node '
                  'on %d CPUs, %.0f s of waits); %.2f h with every node\'s work on this machine too' % (
                      model['nodes'], model['batches'], model['target_hours'], model['controller_bound']['hours'],
                      model['controller_bound']['controller_cpu_seconds_per_node'], model['controller_bound']['cpus'],
                      model['controller_bound']['wait_seconds'], model['this_machine']['hours']))
        for side in ('rollout_per_node', 'restart_only_per_node'):
            print('%s (seconds per node, sum %.1f):' % (side, sum(result[side].values())))
            for name, seconds in result[side].items():
                print('  %6.2f  %s' % (seconds, name))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
