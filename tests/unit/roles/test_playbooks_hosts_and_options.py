"""The playbooks as operators run them: --limit, a rollback with no host choice, bad and misspelt options.

Every node is a loopback port nothing listens on (127.0.0.1:9), so no node is booted and nothing can change:
a task that tried to reach a node ends UNREACHABLE (and names that node), so "UNREACHABLE" absent from the output
proves that no task reached any node, and a node named UNREACHABLE proves that the playbook went to it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.nodealloc.kubelet.plugins.filter.reservation_report import reservation_report
from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NODES = ('node6', 'node7', 'node8')
PLAYBOOKS = ('apply', 'recommend', 'rollback', 'observe')


def run_playbook(tmp_path, playbook, *args):
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('[workers]\n' + ''.join(
        '%s ansible_host=127.0.0.1 ansible_port=9 ansible_connection=ssh ansible_user=nobody '
        "ansible_ssh_common_args='-o ConnectTimeout=3 -o BatchMode=yes'\n" % node for node in NODES))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR='1', ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               ANSIBLE_SHOW_CUSTOM_STATS='1',  # set_stats' data, printed in the recap as AWX would store it
               PWD=str(tmp_path))  # as a shell sets it: recommend.yml writes its report under $PWD/reports
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
               'nodealloc.kubelet.' + playbook] + list(args)  # as users run it, from an empty directory
    result = subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False,
                            timeout=300)
    return result, result.stdout + result.stderr


def reached(output):
    """The nodes a task tried to reach."""
    return sorted(node for node in NODES if 'fatal: [%s]: UNREACHABLE!' % node in output)


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_limit_chooses_the_nodes(tmp_path, playbook):
    # Today's rollback.yml targeted nodealloc_hosts | default([]): --limit node7 matched no host and ran nothing, rc 0.
    result, output = run_playbook(tmp_path, playbook, '--limit', 'node7')
    assert reached(output) == ['node7'], output[-3000:]
    assert result.returncode == 4, output[-3000:]  # ansible-playbook's "a host was unreachable"
    assert 'no hosts matched' not in output
    # Reported as unreachable in the recap, once, and no later task errs on what the node never returned. recommend.yml
    # goes on past it (ignore_unreachable) to write the report, changing the controller's report directory and files
    # (counted on node7, the run_once host), and counts it unreachable last: its UNREACHABLE is printed twice.
    changed, unreachable_lines = (r'\d+', 2) if playbook == 'recommend' else ('0', 1)
    assert re.search(r'node7 +: ok=\d+ +changed=%s +unreachable=1 +failed=0 ' % changed, output), output[-3000:]
    assert output.count('UNREACHABLE!') == unreachable_lines and output.count('...ignoring') == unreachable_lines - 1
    assert 'FAILED!' not in output and 'has no attribute' not in output


def report_rows(tmp_path):
    """Each report file's rows as {host: status}, and the summary set_stats handed on."""
    reports = tmp_path / 'reports'
    data = json.loads((reports / 'reservations.json').read_text())
    markdown = (reports / 'reservations.md').read_text()
    html = (reports / 'reservations.html').read_text()
    return {
        'json': {node['host']: (node['status'], node['status_reason']) for node in data['nodes']},
        'markdown': dict(re.findall(r'^## (\S+)\n\n\*\*(\w+):\*\* ', markdown, re.M)),
        # The measured nodes' rows in the fleet table (closed cells), the others' in the not-measured table (#failed).
        'html': dict(re.findall(r'<tr class="[^"]*"><td><a href="#n\d+">([^<]+)</a>(?:</td>)?<td[^>]*>(\w+)(?:</td>|<td)', html)),
    }


@pytest.mark.parametrize('limit', [None, 'node7'], ids=['every-node', 'limit-node7'])
def test_recommend_reports_every_node_when_none_can_be_reached(tmp_path, limit):
    # Before, the play ended when its last node became unreachable, before the run_once report tasks: an AWX job against
    # a fleet whose SSH was broken wrote no report and handed on no summary.
    result, output = run_playbook(tmp_path, 'recommend', *(['--limit', limit] if limit else []))
    nodes = [limit] if limit else list(NODES)
    # Exit code and recap as Ansible gives unreachable hosts (rc 4), each node counted unreachable once.
    assert result.returncode == 4, output[-3000:]
    for node in nodes:
        assert re.search(r'%s +: ok=\d+ +changed=\d+ +unreachable=1 +failed=0 ' % node, output), output[-3000:]
    assert reached(output) == nodes and 'FAILED!' not in output, output[-3000:]
    rows = report_rows(tmp_path)
    # Every node the run chose is a row of each file, saying it was unreachable and why (ssh's own words), and no other.
    assert {host: status for host, (status, dummy) in rows['json'].items()} == dict.fromkeys(nodes, 'unreachable')
    assert all('Connection refused' in reason for dummy, reason in rows['json'].values()), rows['json']
    assert rows['markdown'] == dict.fromkeys(nodes, 'Unreachable'), rows['markdown']
    assert rows['html'] == dict.fromkeys(nodes, 'unreachable'), rows['html']
    stats = json.loads(re.search(r'^\tRUN: (.*)$', output, re.M).group(1))
    assert stats['nodealloc_report_summary']['status'] == {'unreachable': len(nodes)}, stats
    # The verdict leads (issue 46): nodes nobody could reach are to fix first, and the command re-checks those.
    assert stats['nodealloc_report_summary']['verdicts'] == {'not_measured': 'fix'}, stats
    fix = stats['nodealloc_report_verdicts']['not measured']
    assert fix['action'] == 'fix' and fix['command'] == 'ansible-playbook playbooks/recommend.yml --limit ' + ','.join(nodes)
    # Where the figures came from, for AWX too (issue 36): no node was measured, so none rests on any source.
    assert stats['nodealloc_report_summary']['history_source'] == {'node': 0, 'prometheus': 0, 'none': 0}, stats
    assert stats['nodealloc_report_history'].startswith('History: 0 node(s) on their own history file'), stats
    assert stats['nodealloc_report_json'] == str(tmp_path / 'reports' / 'reservations.json')


def test_rollback_with_nodealloc_hosts_restores_those(tmp_path):
    result, output = run_playbook(tmp_path, 'rollback', '-e', 'nodealloc_hosts=node8')
    assert reached(output) == ['node8'] and result.returncode == 4, output[-3000:]


def test_rollback_without_a_host_choice_fails_saying_how_to_choose(tmp_path):
    # Today's rollback.yml skipped every host and returned 0: an emergency rollback did nothing and showed green.
    result, output = run_playbook(tmp_path, 'rollback')
    assert result.returncode == 2, output[-3000:]
    assert 'Choose the hosts to restore: --limit HOSTS' in output and 'nodealloc_hosts' in output
    assert reached(output) == [], output[-3000:]


# Each value was seen to pass today: a range the run went on past (recommend.yml's ignore_errors), a typo silently
# left at its default, and forms that reach a unit file or a URL.
BAD = {
    'reservations_percentile': 150,
    'reservations_sample_seconds': 'abc',
    'reservations_percentil': 90,
    'reservations_sampler_cpu_quota': '200',
    'reservations_healthz_url': 'localhost:10248',
}
SAID = [
    "reservations_percentile: 150 must be > 0 and <= 100",
    "reservations_sample_seconds: 'abc' must be a number",
    'reservations_percentil is not an option of the reservations role (did you mean reservations_percentile?)',
    "reservations_sampler_cpu_quota: '200' must be a percentage with a % sign",
    "reservations_healthz_url: 'localhost:10248' must be an http:// or https:// URL",
]


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_bad_and_unknown_options_fail_the_run_before_any_node_is_touched(tmp_path, playbook):
    result, output = run_playbook(tmp_path, playbook, '--limit', 'node6,node7', '-e', json.dumps(BAD))
    assert result.returncode == 2, output[-3000:]
    assert reached(output) == [], output[-3000:]
    for sentence in SAID:
        assert sentence in output, (sentence, output[-3000:])


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_a_typo_alone_fails_the_run(tmp_path, playbook):
    # The typo on one host only: every host stops, not just the one with the typo.
    result, output = run_playbook(tmp_path, playbook, '--limit', 'node6,node7', '-e', 'nodealloc_hosts=workers',
                                  '-e', '{"reservations_helthz_url": "http://127.0.0.1:10248/healthz"}')
    assert result.returncode == 2 and reached(output) == [], output[-3000:]
    assert 'reservations_helthz_url is not an option of the reservations role (did you mean reservations_healthz_url?)' \
        in output


@pytest.mark.parametrize('value', ['true', 'false'])
def test_measure_only_stops_apply_before_any_node_is_touched(tmp_path, value):
    # docs/templates.md's step 1 said to install the sampler with apply.yml -e reservations_measure_only=true: the
    # serial play never read it and restarted every kubelet. With "false" the extra variable beat apply.yml's own
    # setting in its second play, which then rolled every node at once, outside the serial play. Both reached nodes.
    result, output = run_playbook(tmp_path, 'apply', '-e', 'reservations_measure_only=%s' % value)
    assert result.returncode == 2 and reached(output) == [], output[-3000:]
    assert 'reservations_measure_only was removed: to install the sampler without touching any kubelet, run ' \
        'playbooks/observe.yml (nodealloc.kubelet.observe); apply.yml always applies' in output


def test_report_merge_runs_on_the_controller_under_a_limit(tmp_path):
    # Today's report_merge.yml targeted localhost only: any --limit (AWX passes a workflow's Limit to every node)
    # left it no host, and it merged nothing, rc 0.
    reports = tmp_path / 'reports'
    reports.mkdir()
    for job, host in (('1', 'node6'), ('2', 'node7')):
        # Each slice as recommend.yml writes it (the report filter), here for a node that could not be reached.
        (reports / ('reservations-42-%s.json' % job)).write_text(
            reservation_report({host: {'unreachable': True, 'msg': 'ssh: connect to host: Connection refused'}})['json'])
    result, output = run_playbook(tmp_path, 'report_merge', '--limit', 'node7', '-e', 'nodealloc_report_dir=%s' % reports,
                                  '-e', 'nodealloc_report_group=42')
    assert result.returncode == 0, output[-3000:]
    assert reached(output) == []
    merged = json.loads((reports / 'reservations-42.json').read_text())
    assert sorted(node['host'] for node in merged['nodes']) == ['node6', 'node7']


@pytest.mark.parametrize('serial, named', [('1,5,abc', "'abc'"), ('[1, 0]', '0'), ('{"nodealloc_serial": [1, "150%"]}', "'150%'")])
def test_a_bad_batch_size_stops_apply_before_any_node_is_touched(tmp_path, serial, named):
    # Issue 48: Ansible reads serial only when the serial play starts, after the measuring play reached every node
    # (and takes 0 for every node at once); the first play checks it, naming the item.
    value = serial if serial.startswith('{') else ('{"nodealloc_serial": %s}' % serial if serial.startswith('[')
                                                   else 'nodealloc_serial=%s' % serial)
    result, output = run_playbook(tmp_path, 'apply', '-e', value)
    assert result.returncode == 2 and reached(output) == [], output[-3000:]
    assert 'nodealloc_serial: %s is not a batch size' % named in output, output[-3000:]
