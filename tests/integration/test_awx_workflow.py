"""docs/awx.md's workflow, run stage by stage through ansible-runner (the engine AWX uses), in check mode (issue 48).

observe -> recommend (check) -> approval -> apply canary -> apply the rest: each job template's playbook with its
survey's extra variables, as AWX would pass them (survey text fields arrive as strings), in the workflow's order. The
approval node is AWX's own and runs no playbook. Three inventory hosts on this machine (ansible_connection=local)
read a kubelet config in a temporary directory that reserves 1 MiB, so every node's plan rolls; --check, so no node
and no file changes. No node is booted.
"""

from __future__ import annotations

import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = ('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n'
          'kubeReserved:\n  memory: 1Mi\n')
STEP = 'Write, restart and verify on the node (it restores the backup itself on failure)'
NODES = ('node1', 'node2', 'node3')

# (stage, playbook, survey answers, limit): docs/awx.md, "Workflow".
WORKFLOW = [
    # The inventory opts out of the sampler for the other stages; observe is the stage that installs it.
    ('observe', 'playbooks/observe.yml', {'nodealloc_classes': 'general', 'reservations_install_sampler': 'true'}, None),
    ('recommend', 'playbooks/recommend.yml', {}, None),
    ('apply canary', 'playbooks/apply.yml', {'nodealloc_classes': 'general', 'nodealloc_serial': '1'}, 'node1'),
    ('apply the rest', 'playbooks/apply.yml', {'nodealloc_classes': 'general', 'nodealloc_serial': '1, 5, 10%, 25%, 100%',
                                               'nodealloc_max_fail_percentage': 0}, None),
]


def run_stage(tmp_path, name, playbook, survey, limit):
    import ansible_runner  # pylint: disable=import-outside-toplevel
    private = tmp_path / name.replace(' ', '-')
    (private / 'inventory').mkdir(parents=True)
    (private / 'env').mkdir()
    (private / 'inventory' / 'hosts').write_text(
        ''.join('%s nodealloc_node_class=general\n' % node for node in NODES) +
        '[all:vars]\nansible_connection=local\nansible_python_interpreter=%s\nreservations_kubelet_config_path=%s\n'
        'reservations_history_path=%s\nreservations_install_sampler=false\nreservations_sample_seconds=0.2\n'
        % (sys.executable, tmp_path / 'kubelet.yaml', tmp_path / 'history.jsonl'))
    (private / 'env' / 'envvars').write_text(yaml.safe_dump({
        'ANSIBLE_CONFIG': os.path.join(ROOT, 'ansible.cfg'), 'ANSIBLE_COLLECTIONS_PATH': os.path.join(ROOT, '.build')}))
    (private / 'env' / 'extravars').write_text(json.dumps(dict(survey, nodealloc_report_dir=str(tmp_path / 'reports'))))
    return ansible_runner.run(private_data_dir=str(private), project_dir=ROOT, playbook=playbook, quiet=True,
                              cmdline='--check', limit=limit)


def task_hosts(runner, task):
    return sorted(e['event_data']['host'] for e in runner.events
                  if e['event'] in ('runner_on_ok', 'runner_on_failed') and e['event_data'].get('task') == task)


def rollout_plan(runner):
    """The plan apply.yml's measuring play handed its serial play (the set_fact on localhost)."""
    return next(e['event_data']['res']['ansible_facts']['_nodealloc_rollout'] for e in runner.events
                if e['event'] == 'runner_on_ok' and e['event_data'].get('task') == "Plan the rollout's batches (a canary first, in each class)")


def custom_stats(runner):
    return next(e['event_data'].get('artifact_data') for e in runner.events if e['event'] == 'playbook_on_stats')


def test_the_workflow_runs_stage_by_stage_and_changes_nothing(tmp_path, monkeypatch):
    # ansible-runner runs the ansible-playbook it finds on PATH: this venv's, as an EE has its own.
    monkeypatch.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    (tmp_path / 'kubelet.yaml').write_text(CONFIG)
    runs = {}
    for name, playbook, survey, limit in WORKFLOW:
        runner = run_stage(tmp_path, name, playbook, survey, limit)
        runs[name] = runner
        # A failed stage takes the workflow's failure path: the later stages do not run.
        assert runner.status == 'successful' and runner.rc == 0, (name, runner.stdout.read()[-4000:])
        assert not runner.stats['failures'], (name, runner.stats)
    assert (tmp_path / 'kubelet.yaml').read_text() == CONFIG  # check mode: nothing written by any stage
    assert (tmp_path / 'reports' / 'reservations.json').is_file()
    # The canary: the survey's "1" read as the serial list [1], one batch, the limited node only.
    canary = rollout_plan(runs['apply canary'])
    assert canary['given'] == [1] and canary['serial'] == [1] and canary['hosts'] == ['node1']
    assert task_hosts(runs['apply canary'], STEP) == ['node1']
    assert custom_stats(runs['apply canary'])['nodealloc_rollout_untouched'] == []
    # The rest: the survey's text read as growing batches; over three rolling nodes that is a canary, then two.
    rest = rollout_plan(runs['apply the rest'])
    assert rest['given'] == [1, 5, '10%', '25%', '100%'] and rest['serial'] == [1, 2]
    assert [batch['hosts'] for batch in rest['batches']] == [['node1'], ['node2', 'node3']]
    assert task_hosts(runs['apply the rest'], STEP) == list(NODES)
    assert custom_stats(runs['apply the rest']) == {'nodealloc_rollout_batch': ['node2', 'node3'], 'nodealloc_rollout_untouched': []}
