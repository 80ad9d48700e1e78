"""The fleet view on the 500-node fleet. One memory risk: the JSON, the fleet chart's dots (place and colour) and the table
say the same for every node, and every node whose own history passed its reservation is in the worst category."""

from __future__ import annotations

import re

import pytest

from fleet_results import fleet

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report


@pytest.fixture(scope='module')
def fleet_500():
    results = fleet(500)
    report = _fleet_report.build_report(results)
    return results, report, _fleet_report.render_html(report)


def _memory(reservation):
    text = (reservation or {}).get('memory')
    return _quantity.quantity_value(_quantity.parse_quantity(text)) if text else 0


def test_every_node_whose_history_passed_its_reservation_is_exceeded(fleet_500):
    results, report, _page = fleet_500
    by_host = {node['host']: node for node in report['nodes']}
    passed = 0
    for host, result in results.items():
        current = result.get('current')
        series = (result.get('history') or {}).get('series') or []
        if not current or not series or 'recommendation' not in result:
            continue
        reserved = _memory(current.get('kube_reserved')) + _memory(current.get('system_reserved'))
        if reserved and max(value for _t, value in series) > reserved:
            passed += 1
            assert by_host[host]['risk'] == 'exceeded', host
        if not reserved:
            assert by_host[host]['risk'] == 'not_configured', host
    assert passed > 50  # the fixture has such nodes: the check above ran on them
    counts = report['summary']['risk']
    assert counts['not_configured'] < 470 and counts['exceeded'] >= passed


def test_chart_colour_table_and_json_agree_for_every_node(fleet_500):
    _results, report, page = fleet_500
    nodes = report['nodes']
    chart = re.search(r'<svg[^>]*aria-label="fleet">(.*?)</svg>', page, re.S).group(1)
    zero = float(re.search(r'<path class="capl" d="M(\d+(?:\.\d+)?) 0V', chart).group(1))
    dots = re.findall(r'<a href="#n(\d+)"><circle class="(\w+)" r="3.5" cx="([\d.]+)" cy="\d+" data-risk="(\w+)">'
                      r'<title>([^:<]+):', chart)
    with_kubelet = [index for index, node in enumerate(nodes) if node['status'] == 'ok']
    assert sorted(int(index) for index, *_rest in dots) == with_kubelet  # one dot per node with a kubelet
    for index, colour, x, data_risk, host in dots:
        node = nodes[int(index)]
        assert node['host'] == host  # the dot links to its own node
        assert colour == data_risk == node['risk'], host
        share = node['memory_risk']['spare_share']
        if node['risk'] == 'exceeded':
            assert float(x) < zero and share < 0, host
        elif node['risk'] in ('thin', 'ok'):
            assert float(x) >= zero and share >= 0, host
        else:  # reserves nothing, or unknown: the column left of the axis, not a place on it
            assert share is None and float(x) < zero, host
    table = re.search(r'<table id="fleet".*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    rows = re.findall(r'<tr class="\w+"><td><a href="#n(\d+)">[^<]*</a>.*?<td class="(\w+)" data-v="\d+">([^<]+)</td>',
                      table)
    # The fleet table holds the measured nodes; the others are rows of the not-measured table (#failed): each node once.
    failed = re.search(r'<table id="failed".*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    failed_rows = [int(index) for index in re.findall(r'<tr class="\w+"><td><a href="#n(\d+)">', failed)]
    assert sorted([int(index) for index, *_rest in rows] + failed_rows) == list(range(len(nodes)))
    assert failed_rows == [index for index, node in enumerate(nodes) if 'measured' not in node] != []
    for index, css, label in rows:
        node = nodes[int(index)]
        assert css == node['risk'] and label == node['risk'].replace('_', ' '), node['host']
    # The worst first: the report's order never puts a milder category before a worse one.
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk
    measured = [_memory_risk.rank(node['risk']) for node in nodes if node['status'] == 'ok']
    assert measured == sorted(measured)


def test_per_class_what_to_do_agrees_with_the_nodes_and_the_templates(fleet_500):
    results, report, page = fleet_500
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _node_templates
    import yaml
    classes = {entry['name']: entry for entry in report['classes']}
    # The templates as the node_templates filter renders them from the facts (not from the report).
    rendered = _node_templates.render({host: {'facts': result, 'node_class': None} for host, result in results.items()})
    drop_ins = {item['class']: yaml.safe_load(item['content']) for item in rendered
                if item['path'].endswith('/50-nodealloc.conf')}
    assert set(drop_ins) == {name for name, entry in classes.items() if entry['recommended']}
    for name, drop_in in drop_ins.items():
        recommended = classes[name]['recommended']
        # The fixture's nodes run a kubelet and containerd (components found): kubeReserved is measured.
        assert drop_in['kubeReserved'] == recommended['kube_reserved'] and recommended['kube_reserved']['memory']
        assert drop_in['systemReserved'] == recommended['system_reserved']
        assert drop_in['evictionHard'] == recommended['eviction_hard']
    # Restarts and memory moved, counted again from each node's own result.
    for name, entry in classes.items():
        if name == 'not measured':
            continue
        restarts, given, taken = 0, 0, 0
        for host, result in results.items():
            record = (result.get('class_record') or {}).get('node_class') or []
            if not record or '%dgib-%dcpu' % tuple(record) != name or not (result.get('current')):
                continue
            action = result['decision']['action']
            if action in ('increase', 'decrease'):
                restarts += 1
                current = result['current']
                change = result['recommendation']['reserved_memory_bytes'] - (
                    _memory(current.get('kube_reserved')) + _memory(current.get('system_reserved')))
                taken, given = taken + max(0, change), given + max(0, -change)
        assert (entry['kubelet_restarts'], entry['memory_taken_bytes'], entry['memory_given_back_bytes']) == (
            restarts, taken, given), name
        assert entry['increase'] + entry['decrease'] == restarts
    # The page says it, in a table of its own.
    table = re.search(r'<table id="classes">(.*?)</table>', page, re.S).group(1)
    for name, entry in classes.items():
        assert '<tr><td>%s<td>%d<td' % (name, entry['nodes']) in table


def test_the_job_output_is_the_fleet_summary_under_300_lines_at_500_nodes(fleet_500, tmp_path):
    from test_playbooks import ansible_playbook
    import json
    _results, report, _page = fleet_500
    renderings = _fleet_report.renderings(report)
    lines = renderings['text_lines']
    assert len(lines) < 300 and not any('\n' in line for line in lines)
    assert len(renderings['text'].splitlines()) > 10000  # the per-node text, which goes to the files only
    # It starts with where the figures came from, then the fleet: per class, then the riskiest nodes, the first of them
    # the report's worst.
    assert lines[0] == _fleet_report.history_sentence(report['summary'])
    # Each class's verdict leads (issue 46), then the class table.
    start = lines.index('Per node class, what apply would do:')
    assert start < 30 and '8gib-2cpu' in '\n'.join(lines[start:start + 6])
    assert all(any(line.startswith('  %s (' % entry['name']) for line in lines[:start]) for entry in report['classes'])
    worst = [node['host'] for node in report['nodes'] if node['status'] == 'ok'][:20]
    risky = [line.split()[0] for line in lines[lines.index(next(line for line in lines if 'riskiest' in line)) + 2:][:20]]
    assert risky == worst
    markdown = renderings['markdown'].splitlines()
    assert markdown.index('## Fleet summary') < markdown.index('### The 20 riskiest nodes') < markdown.index(
        '# Each node')
    # report_merge.yml's whole job output, the merged 500-node report printed as an AWX user reads it first.
    (tmp_path / 'reservations-42-1.json').write_text(_fleet_report.render_json(report))
    run = ansible_playbook('playbooks/report_merge.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                           '-e', 'nodealloc_report_group=42')
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    print('report_merge.yml output at 500 nodes: %d lines' % len(run.stdout.splitlines()))
    assert len(run.stdout.splitlines()) < 300
    assert json.loads((tmp_path / 'reservations-42.json').read_text())['summary'] == report['summary']
    assert (tmp_path / 'reservations-42.md').read_text().count('\n## node') == 500  # every node, in the file
