"""The fleet report: schema, risk order, what a failed node looks like, and how a person reads it."""

from __future__ import annotations

import datetime
import html
import json
import re

import pytest
from markdown_it import MarkdownIt

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _memory_accounting
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _memory_risk

GI = 1 << 30
MI = 1 << 20
# A byte count as the module prints it ("3277848576 B", "+224395264 B"), a bare integer of a MiB or more, or a
# Ki quantity ("24684092Ki"): none of them belongs in what a person reads.
RAW_BYTES = re.compile(r'\d+ B\b|(?<![\w.])\d{7,}(?![\w.])|\d+Ki\b')


def result(non_pod_bytes, current_memory=None, kubelet_pid=None, config_path=None, mem_total_bytes=8 * GI, basis=None,
           settings=None):
    """A node_reservation_facts result as the module builds it (its own recommend, decide, formulas, accounting)."""
    meminfo = {'MemTotal': mem_total_bytes, 'MemAvailable': mem_total_bytes - non_pod_bytes,
               'Active(file)': 300 * MI, 'Inactive(file)': 200 * MI, 'KReclaimable': 50 * MI}
    accounting = _memory_accounting.non_pod_memory(meminfo, {'working_set_bytes': 0}, 60 * MI)
    measured = dict(mem_total_bytes=mem_total_bytes, mem_available_bytes=mem_total_bytes - non_pod_bytes,
                    kubepods_working_set_bytes=0, kube_components_working_set_bytes=0,
                    capacity_millicores=2000, non_pod_millicores=100, kube_components_millicores=0,
                    non_pod_memory=accounting)
    current = None
    if current_memory:
        current = {'kube_reserved': {'memory': current_memory}, 'system_reserved': {},
                   'eviction_hard': {'memory.available': '100Mi'}, 'enforce_node_allocatable': ['pods']}
    formulas = _vendor_formulas.all_formulas(mem_total_bytes, 2)
    recommendation = _recommend.recommend(measured, settings, current, basis, formulas)
    history = {} if basis is None else {'samples': basis['samples'], 'span_seconds': basis['span_seconds'],
                                        'source': basis['history_source'], 'since': basis['history_since']}
    return {
        'history': history,
        'decision': _decision.decide(current, recommendation),
        'capacity': {'memory': '%dKi' % (mem_total_bytes // 1024), 'cpu': '2'},
        'memory': {'non_pod_bytes': non_pod_bytes, 'kubepods_working_set_bytes': 0, 'mem_total_bytes': mem_total_bytes,
                   'non_pod_poc_bytes': accounting['poc_bytes']},
        'cpu': {'non_pod_millicores': 100, 'sample_seconds': 5.0, 'capacity_millicores': 2000},
        'cgroup': {'version': 'v1', 'mode': 'legacy', 'driver': 'systemd', 'kubepods': '/kubepods.slice'},
        'kubelet': {'config_path': config_path or ('/var/lib/kubelet/config.yaml' if current else None),
                    'pid': kubelet_pid},
        'current': current,
        'recommendation': recommendation,
        'formulas': formulas,
        'not_found': [],
    }


def test_unmeasured_nodes_first_then_closest_to_oom():
    report = _fleet_report.build_report({
        'roomy': result(GI, current_memory='3Gi'),
        'tight': result(2 * GI, current_memory='1Gi'),
        'broken': {'failed': True, 'msg': 'boom'},
        'gone': {},
    }, now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    assert [n['host'] for n in report['nodes']] == ['broken', 'gone', 'tight', 'roomy']
    assert [n['status'] for n in report['nodes']] == ['failed', 'unreachable', 'ok', 'ok']
    assert report['nodes'][0]['status_reason'] == 'boom'
    assert report['nodes'][2]['margin_bytes'] == -GI and report['nodes'][2]['risk'] == 'exceeded'
    assert report['nodes'][3]['risk'] == 'ok'  # 3Gi reserved, 1Gi used: 2Gi over the peak, more than the headroom
    assert report['summary']['status'] == {'failed': 1, 'unreachable': 1, 'ok': 2}
    assert report['generated_at'] == '2026-01-01T00:00:00Z'
    json.loads(_fleet_report.render_json(report))


def test_any_status_with_a_reason_is_a_row_of_its_own():
    # A playbook may hand over a row for a host it could not measure, with a status word of its own.
    report = _fleet_report.build_report({'node': result(GI, current_memory='1Gi', kubelet_pid=1),
                                         'odd': {'status': 'unmeasured', 'status_reason': 'no python3 on the node'}})
    assert [(n['host'], n['status'], n['status_reason']) for n in report['nodes']][0] == (
        'odd', 'unmeasured', 'no python3 on the node')
    assert '  UNMEASURED: no python3 on the node' in _fleet_report.render_text_lines(report)
    assert '**Unmeasured:** no python3 on the node' in _fleet_report.render_markdown(report)
    page = _fleet_report.render_html(report)
    assert '<tr class="failed">' in page and 'no python3 on the node</p>' in page
    assert report['summary']['status'] == {'unmeasured': 1, 'ok': 1}


def test_config_diff_is_what_the_kubelet_config_merge_writes():
    # kubeReserved keeps its ephemeral-storage key (map keys merge one by one) and an equal quantity keeps its text.
    current = {'kube_reserved': {'memory': '1Gi', 'ephemeral-storage': '1Gi'}, 'system_reserved': {'cpu': '0.5'}}
    recommended = {'kube_reserved': {'memory': '1024Mi', 'cpu': '100m'},
                   'system_reserved': {'memory': '512Mi', 'cpu': '500m'}}
    diff = _fleet_report.config_diff(current, recommended, '/var/lib/kubelet/config.yaml')
    assert diff[:2] == ['--- /var/lib/kubelet/config.yaml (now)', '+++ /var/lib/kubelet/config.yaml (apply)']
    assert [line for line in diff[3:] if line[:1] in '+-'] == ['+  cpu: 100m', '+  memory: 512Mi']
    assert '   memory: 1Gi' in diff and '   ephemeral-storage: 1Gi' in diff and "   cpu: '0.5'" in diff
    assert _fleet_report.config_diff(current, {'kube_reserved': {'memory': '1024Mi'}, 'system_reserved': {'cpu': '500m'}}) == []


def test_merged_slices_equal_one_report_of_all_hosts():
    results = {'a': result(GI, current_memory='3Gi'), 'b': result(2 * GI, current_memory='1Gi'),
               'c': {'failed': True, 'msg': 'boom'}}
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    slices = [_fleet_report.build_report({'a': results['a'], 'c': results['c']}, now), _fleet_report.build_report({'b': results['b']}, now)]
    whole = _fleet_report.build_report(results, now)
    assert json.loads(_fleet_report.render_json(_fleet_report.merge_reports(slices, now))) == json.loads(_fleet_report.render_json(whole))


def test_renderings_show_every_row_and_say_what_was_not_found():
    # A kubelet runs (it has a pid) but no config file was found: reservations unknown, apply refuses.
    report = _fleet_report.build_report({'node': result(GI, kubelet_pid=1234)})
    text = _fleet_report.render_text(report)
    markdown = _fleet_report.render_markdown(report)
    for label in ('capacity', 'current kubeReserved', 'measured non-pod usage', 'recommended kubeReserved',
                  'recommended systemReserved', 'allocatable (recommended)'):
        assert label in text and label in markdown
    assert 'current reservations unknown' in text
    assert 'decision: increase' in text and '**Decision: increase' in markdown  # nothing reserved yet
    assert report['nodes'][0]['config_diff'] == []  # no config file to write into
    lines = _fleet_report.render_text_lines(report)
    assert '\n'.join(lines) == text and not any('\n' in line for line in lines)


def test_no_kubelet_means_nothing_to_apply_not_a_zero_reservation():
    report = _fleet_report.build_report({'bare': result(GI), 'kube': result(GI, current_memory='1Gi', kubelet_pid=1)})
    bare = [node for node in report['nodes'] if node['host'] == 'bare'][0]
    assert bare['status'] == 'no_kubelet' and bare['status_reason'] == 'no kubelet found: nothing to apply'
    assert bare['config_diff'] == [] and bare['decision'] is None and bare['risk'] == 'no_kubelet'
    assert [node['host'] for node in report['nodes']] == ['kube', 'bare']  # nothing to act on: last
    renderings = ((_fleet_report.render_text(report), '== bare'), (_fleet_report.render_markdown(report), '## bare'),
                  (_fleet_report.render_html(report), '<summary>bare'))
    for rendering, start in renderings:
        section = rendering[rendering.index(start):]  # the last node's section: to the end
        assert 'no kubelet found: nothing to apply' in section.lower()
        assert 'kubeReserved: 0' not in section and 'recommended kubeReserved' not in section
        assert "memory: '0'" not in section


def test_the_fleet_chart_says_why_it_is_empty_where_no_node_has_a_kubelet():
    # make report on a machine with no kubelet: the heading stood over nothing.
    page = _fleet_report.render_html(_fleet_report.build_report({'bare': result(GI)}))
    fleet = page[page.index('<h2>Fleet: memory risk per node class</h2>'):]
    assert fleet[len('<h2>Fleet: memory risk per node class</h2>'):].startswith(
        '<p class="muted">No measured node has a kubelet: no node to place on the chart.</p>')
    with_kubelet = _fleet_report.render_html(_fleet_report.build_report({'kube': result(GI, current_memory='1Gi',
                                                                                        kubelet_pid=1)}))
    assert 'No measured node has a kubelet' not in with_kubelet and 'aria-label="fleet"' in with_kubelet


def _reports():
    """One report with a node of each kind a reader meets: tight, roomy, no kubelet, failed."""
    return _fleet_report.build_report({
        'tight': result(2 * GI, current_memory='1Gi', kubelet_pid=1),
        'roomy': result(GI, current_memory='3Gi', kubelet_pid=1, mem_total_bytes=24 * GI),
        'bare': result(900 * MI),
        'broken': {'failed': True, 'msg': 'boom'},
    })


def _html_text(page):
    """What a person reads on the page: text content, without tags, attributes, the style sheet or the script."""
    page = re.sub(r'<(style|script)>.*?</\1>', '', page, flags=re.S)
    return re.sub(r'<[^>]*>', ' ', page)


@pytest.mark.parametrize('rendering', ['text', 'markdown', 'html'])
def test_no_raw_byte_counts_where_a_person_reads(rendering):
    report = _reports()
    readable = {'text': _fleet_report.render_text, 'markdown': _fleet_report.render_markdown,
                'html': lambda r: _html_text(_fleet_report.render_html(r))}[rendering](report)
    # Diff lines are what apply writes, in the config's own quantities: those are not figures to read.
    readable = '\n'.join(line for line in readable.splitlines() if not line.strip().startswith(('+', '-', '@@')))
    assert RAW_BYTES.findall(readable) == []
    assert re.search(r'\d+(\.\d+)? GiB', readable) and re.search(r'\d+ MiB', readable)
    assert re.search(r'\d+m\b', readable)  # CPU in millicores


def test_the_json_keeps_exact_machine_values_in_unit_suffixed_names():
    node = [n for n in _reports()['nodes'] if n['host'] == 'tight'][0]
    assert node['capacity_memory_bytes'] == 8 * GI and node['capacity_millicores'] == 2000
    assert node['measured']['non_pod_memory_bytes'] == 2 * GI
    assert set(node['measured']) == {'non_pod_memory_bytes', 'non_pod_swap_bytes', 'poc_non_pod_memory_bytes',
                                     'measurement_tool_bytes', 'kubepods_working_set_bytes', 'non_pod_millicores',
                                     'sample_seconds'}
    assert isinstance(node['allocatable_memory_bytes'], int) and isinstance(node['allocatable_millicores'], int)


def test_text_columns_line_up():
    """Every row of a node's figure table ends its memory and CPU cells at the same column (right-aligned)."""
    tables = 0
    for node_lines in _fleet_report.render_text(_reports()).split('== ')[1:]:
        lines = node_lines.splitlines()
        header = [i for i, line in enumerate(lines) if line.split()[:2] == ['memory', 'cpu']]
        if not header:
            continue
        tables += 1
        table = lines[header[0]:]
        table = table[:[i for i, line in enumerate(table) if line.startswith('  decision:')][0]]
        assert len(table) > 8  # the formulas' rows are in it
        memory_end = table[0].index('memory') + len('memory')
        cpu_end = table[0].index('cpu') + len('cpu')
        for line in table[1:]:
            assert line[memory_end - 1] != ' ' and line[memory_end] == ' ', line
            assert line[cpu_end - 1] != ' ' and line[cpu_end:cpu_end + 1] in (' ', ''), line
        if 'what it is' in table[0]:
            meaning_start = table[0].index('what it is')
            assert all(line[meaning_start - 1] == ' ' and line[meaning_start] != ' ' for line in table[1:])
    assert tables == 3  # tight, roomy, bare


def test_markdown_table_source_lines_up():
    """The Markdown source is read as plain text too (a terminal, a diff): its cell borders line up."""
    for section in _fleet_report.render_markdown(_reports()).split('\n## ')[1:]:
        if section.startswith('Fleet summary'):
            # Its tables (per class, the riskiest nodes), each lined up on its own.
            for block in section.split('\n\n'):
                table = [line for line in block.splitlines() if line.startswith('|')]
                borders = [[i for i, char in enumerate(line) if char == '|'] for line in table]
                assert all(positions == borders[0] for positions in borders), table
            continue
        table = [line for line in section.splitlines() if line.startswith('|')]
        if not table:
            continue
        assert len(table) > 8 and '---:' in table[1]
        borders = [[i for i, char in enumerate(line) if char == '|'] for line in table]
        assert all(positions == borders[0] for positions in borders), table


def test_html_charts_have_axes_units_capacity_and_a_legend():
    """The same properties the Chromium test reads from the DOM, on the page as rendered (no browser needed)."""
    page = _fleet_report.render_html(_reports())
    measured = 3  # tight, roomy, bare; the failed node has no charts
    memory_charts = re.findall(r'<svg[^>]*aria-label="memory">(.*?)</svg>', page, re.S)
    cpu_charts = re.findall(r'<svg[^>]*aria-label="CPU">(.*?)</svg>', page, re.S)
    history_charts = re.findall(r'<svg[^>]*aria-label="history">(.*?)</svg>', page, re.S)
    assert len(memory_charts) == len(cpu_charts) == len(history_charts) == measured
    for chart in memory_charts + cpu_charts:
        assert 'class="capl"' in chart and '>capacity ' in chart  # a capacity line, labelled with its value
        assert re.search(r'class="t">(memory \(MiB / GiB\)|CPU \(millicores)', chart)  # the axis names its unit
        assert len(re.findall(r'>(\d+(\.\d+)? (MiB|GiB)|\d+m|0)</text>', chart)) >= 4  # ticks and values in units
    formulas = sorted(_vendor_formulas.FORMULAS)
    assert len(formulas) >= 5
    for chart in history_charts:
        legend = re.search(r'<g class="legend">(.*?)</g>', chart, re.S).group(1)
        for name in formulas:
            assert re.search(r'>%s formula \d+(\.\d+)? (MiB|GiB)</text>' % name, legend)
        assert re.search(r'>(recommended|a kubelet would need) \d', legend) and re.search(r'>non-pod memory, (peak|now) ', legend)
        assert '>non-pod memory</text>' in chart  # the value axis
    assert page.count('>reserved now ') >= 2 * 2  # the two nodes with a kubelet: bar and history line
    fleet = re.search(r'<svg[^>]*aria-label="fleet">(.*?)</svg>', page, re.S).group(1)
    assert '>8gib-2cpu</text>' in fleet and '>24gib-2cpu</text>' in fleet and '>exceeded</text>' in fleet


def test_every_term_is_explained_next_to_the_line_that_first_uses_it():
    text = _fleet_report.render_text_lines(_reports())
    poc = [i for i, line in enumerate(text) if line.strip().startswith('uncorrected non-pod memory =')][0]
    following = text[poc + 1:poc + 4]
    assert any(line.strip().startswith('(uncorrected non-pod memory: ') and 'page cache' in line for line in following)
    html_page = _fleet_report.render_html(_reports())
    assert re.search(r'<li>uncorrected non-pod memory = [^<]*<div><b>uncorrected non-pod memory</b>: [^<]*page cache', html_page)
    markdown = _fleet_report.render_markdown(_reports())
    assert re.search(r'`uncorrected non-pod memory = [^`]*`\n  - \*uncorrected non-pod memory\*: [^\n]*page cache', markdown)
    # Every row of the figure table says what the figure is.
    for row in _fleet_report.rows([n for n in _reports()['nodes'] if n['host'] == 'tight'][0]):
        assert len(row) == 4 and row[3]


def test_text_and_markdown_show_pressure_as_evidence():
    facts = result(512 * 1024 * 1024)
    facts['pressure'] = {'node': {'cpu': {'some': {'avg10': 12.5, 'avg60': 3.0, 'avg300': 1.25, 'total_usec': 9}}},
                         'cgroups': {}, 'note': 'cgroup v1 has no per-cgroup pressure files'}
    report = _fleet_report.build_report({'node1': facts})
    assert 'pressure (PSI) node: cpu some 12.50% (10 s) 1.25% (5 min)' in _fleet_report.render_text(report)
    assert '- cgroup v1 has no per-cgroup pressure files' in _fleet_report.render_markdown(report)


def test_the_overcommit_audit_reaches_the_text_and_markdown(tmp_path):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _overcommit
    from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2
    root = str(tmp_path / 'cgroup')
    cgroup_v2.make_root(root)
    cgroup_v2.make_group(root, 'kubepods.slice', 0, 0, 0, memory_max=str(4 * GI))
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-pod1.slice', 0, 0, 0, memory_max=str(3 * GI))
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice', 0, 0, 0)
    cgroup_v2.make_group(root, 'kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice', 0, 0, 0,
                         memory_max=str(3 * GI))
    node = dict(result(GI), overcommit=_overcommit.audit(_cgroup.layout_from_root(root), 'kubepods.slice'))
    report = _fleet_report.build_report({'node': node})
    assert report['nodes'][0]['overcommit']['limits_to_kubepods_percent'] == 150.0
    assert 'kubepods would need 150.0 % of its limit' in _fleet_report.render_text(report)
    assert '**Overcommit:** 2 pods (0 without a memory limit)' in _fleet_report.render_markdown(report)


def test_memory_min_cost_and_the_enforcement_proposal_reach_the_text_and_markdown():
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cpu_guarantee, _memory_protection
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _cpu_enforcement
    facts = result(512 * MI, current_memory='1Gi', kubelet_pid=4242)
    protection = {'supported': True, 'problems': [], 'note': None, 'cgroups': [
        {'role': 'system-reserved', 'config_field': 'systemReservedCgroup', 'cgroup': '/system.slice', 'exists': True,
         'memory_min': 300 * MI, 'memory_low': 0, 'working_set_bytes': 100 * MI, 'cpu_weight': 100}]}
    cost = _memory_protection.cost(protection, 8 * GI, {'system-reserved': 250 * MI})
    facts['memory_protection'] = dict(protection, cost=cost)
    from ansible_collections.nodealloc.kubelet.tests.unit.fixtures.guest_v2_protection import CAPTURE
    pressure = {'node': {}, 'note': None, 'cgroups': {'/system.slice': {
        'cpu': _cpu_guarantee.parse_pressure(CAPTURE['starved']['system.slice']['cpu.pressure'])}}}
    facts['enforcement_proposal'] = _cpu_enforcement.propose(
        {}, {'system_reserved': {'cpu': '3'}}, pressure, [], 'v2', 8000, {}, None, cgroup_exists=lambda r: True)
    facts['recommendation']['explanation'].extend(_memory_protection.explain(
        protection, facts['memory_protection']['cost'], True, 'TieredReservation'))
    report = _fleet_report.build_report({'node1': facts})
    # The Markdown as a reader sees it (rendered): its source escapes what Markdown would read as markup.
    text, markdown = _fleet_report.render_text(report), html.unescape(MarkdownIt().render(_fleet_report.render_markdown(report)))
    # The explanation's exact byte counts reach a person in MiB, with memory.min explained where it first appears.
    assert not RAW_BYTES.search(text), RAW_BYTES.search(text)
    assert 'memory.min beyond use of /system.slice = memory.min - working set = 300 MiB - 100 MiB = 200 MiB' in text
    assert '(memory.min: cgroup v2 hard protection' in text
    assert report['nodes'][0]['memory_min_beyond_use_bytes'] == 200 * MI
    assert any(row[0] == 'memory.min beyond use' and row[1] == '200 MiB' for row in _fleet_report.rows(report['nodes'][0]))
    assert 'memory.min beyond use' in _fleet_report.render_html(report)
    for rendering in (text, markdown):
        assert 'memory.min protects 300 MiB on the reserved groups (/system.slice), 200 MiB beyond what they use' in rendering
        assert 'with the recommendation written, 150 MiB beyond use' in rendering
        assert '/system.slice waits for CPU 39.2 % of the last 5 min' in rendering
        assert "proposed: enforceNodeAllocatable ['pods', 'system-reserved-compressible'], systemReservedCgroup " \
               "/system.slice (validated" in rendering


def test_the_requests_fit_reaches_the_text_and_markdown_checked_refused_or_skipped():
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
    pods = [{'pod': 'data/cache-0', 'millicores': 200, 'memory_bytes': 6 * GI},
            {'pod': 'web/api-0', 'millicores': 600, 'memory_bytes': 1152 * MI}]
    refused = _requests_fit.check(pods, {'allocatable_memory_bytes': 4 * GI, 'allocatable_millicores': 1900})
    fits = _requests_fit.check(pods, {'allocatable_memory_bytes': 8 * GI, 'allocatable_millicores': 1900})
    report = _fleet_report.build_report({'refused': dict(result(GI), requests_fit=refused),
                                         'fits': dict(result(GI), requests_fit=fits),
                                         'skipped': dict(result(GI), requests_fit=_requests_fit.check(None, None))})
    text, markdown = _fleet_report.render_text(report), _fleet_report.render_markdown(report)
    assert 'requests fit: apply refuses: the 2 pods bound to the node request 7.12 GiB of memory' in text
    assert 'largest: data/cache-0 6.00 GiB, web/api-0 1.12 GiB' in text
    assert ('requests fit: the 2 pods bound to the node request 7.12 GiB and 800m, within the 8.00 GiB and 1900m '
            'allocatable this change gives') in text
    assert 'requests fit: not checked: no pod list: the role reads the pods' in text
    assert '**Requests fit:** apply refuses:' in markdown and '**Requests fit:** not checked:' in markdown
    assert not RAW_BYTES.search(text)


def test_the_requests_fit_reaches_the_html_page():
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
    fit = _requests_fit.check([{'pod': 'data/cache-0', 'millicores': 200, 'memory_bytes': 6 * GI}],
                              {'allocatable_memory_bytes': 4 * GI, 'allocatable_millicores': 1900})
    page = _fleet_report.render_html(_fleet_report.build_report({'refused': dict(result(GI), requests_fit=fit)}))
    assert '<p>Requests fit: apply refuses: the 1 pod bound to the node request 6.00 GiB of memory' in page


def test_a_markdown_paragraph_after_the_pressure_list_stands_apart_from_its_last_item():
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
    facts = dict(result(GI), requests_fit=_requests_fit.check(None, None))
    facts['pressure'] = {'node': {'cpu': {'some': {'avg10': 2.0, 'avg300': 5.0}}}, 'cgroups': {}, 'note': None}
    markdown = _fleet_report.render_markdown(_fleet_report.build_report({'node1': facts}))
    lines = markdown.split('\n')
    at = next(i for i, line in enumerate(lines) if line.startswith('**Requests fit:**'))
    assert lines[at - 2].startswith('- pressure'), lines[at - 3:at + 1]
    # CommonMark joins a paragraph that follows a list item without a blank line to that item.
    assert lines[at - 1] == ''


# Issue 36: every report says where each figure came from.
HOUR = 3600
SINCE = 1767225600.0  # 2026-01-01 00:00 UTC


def history_basis(source, span_seconds, non_pod_bytes=GI):
    return {'samples': 200, 'span_seconds': span_seconds, 'percentile': 100.0, 'non_pod_bytes': non_pod_bytes,
            'non_pod_millicores': 100, 'history_source': source, 'history_since': SINCE}


# The percent rule (50 %, 100 MiB): a short history's figure stays under GKE's, so the floor is what the report shows
# (under the jumps rule a cold node takes the 2 GiB cap, above GKE's figure for 8 GiB).
PERCENT = {'memory_headroom_rule': 'percent', 'memory_headroom_min_bytes': 100 * MI}


def _sources_report():
    return _fleet_report.build_report({
        'fresh': result(GI, current_memory='1Gi', settings=PERCENT),  # check mode without the sampler: one reading
        'observed': result(GI, current_memory='1Gi', basis=history_basis('node', 2 * HOUR), settings=PERCENT),
        'warm': result(GI, current_memory='1Gi', basis=history_basis('node', 3 * 24 * HOUR), settings=PERCENT),
        'scraped': result(GI, current_memory='1Gi', basis=history_basis('prometheus', 14 * 24 * HOUR),
                          settings=PERCENT),
        'gone': {'unreachable': True, 'msg': 'no route'},
    }, now=datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc))


def test_the_summary_counts_the_nodes_on_each_history_source_and_on_the_floor():
    summary = _sources_report()['summary']
    assert summary['history_source'] == {'node': 2, 'prometheus': 1, 'none': 1}
    # 1 GiB measured + 50 % is below GKE's figure for 8 GiB: the two short histories are raised to the floor.
    assert summary['cold_start_floor'] == 2


def test_every_rendering_opens_with_where_the_figures_came_from():
    rendered = _fleet_report.renderings(_sources_report())
    sentence = rendered['history_sentence']
    assert sentence.startswith('History: 2 node(s) on their own history file, 1 node(s) on Prometheus, '
                               '1 node(s) on no history (one reading). 2 node(s) are held at the cold-start floor')
    assert 'playbooks/observe.yml' in sentence
    assert rendered['text_lines'][0] == sentence
    assert sentence in rendered['markdown'].split('## ', maxsplit=1)[0]
    assert _fleet_report._html_page.html.escape(sentence, quote=False) in rendered['html'].split('<h2>', maxsplit=1)[0]


def _rows(report, host):
    (node,) = [n for n in report['nodes'] if n['host'] == host]
    return {label: (memory, cpu, meaning) for label, memory, cpu, meaning in _fleet_report.rows(node)}, node


def test_a_cold_start_shows_the_floor_beside_the_measured_figure_and_when_it_takes_over():
    rows, node = _rows(_sources_report(), 'observed')
    cold = node['cold_start']
    floor = rows['cold-start floor (gke)']
    assert floor[:2] == (_fleet_report.units.memory(cold['floor_memory_bytes']),
                         _fleet_report.units.cpu(cold['floor_millicores']))
    assert 'raised to it' in floor[2]
    measured_row = rows['measured recommendation']
    assert measured_row[0] == _fleet_report.units.memory(cold['measured_memory_bytes']) != floor[0]
    # The oldest sample (2026-01-01 00:00) plus 90 % of the 24 h reaction time.
    assert 'takes over from 2026-01-01 21:36 UTC' in measured_row[2]
    assert rows['history source'][2] == "the node's own history file, 200 readings over 2.0 h"


def test_a_node_with_no_history_says_nothing_records_and_how_to_leave_the_floor():
    rows, _node = _rows(_sources_report(), 'fresh')
    assert rows['history source'][2].startswith('none: ')
    assert 'the floor stays until one is: run playbooks/observe.yml' in rows['measured recommendation'][2]


def test_a_warm_or_prometheus_history_has_no_floor_row():
    for host, words in (('warm', "the node's own history file"), ('scraped', 'Prometheus, 200 samples over 336.0 h')):
        rows, node = _rows(_sources_report(), host)
        assert node['cold_start'] is None and not any(label.startswith('cold-start') for label in rows)
        assert rows['history source'][2].startswith(words)


def test_prometheus_asked_and_not_used_gives_its_reason_in_the_node_row_and_the_json():
    """A node whose Prometheus did not answer rests on its own history; its report says where it asked and why the
    answer was not used, in the JSON (history.prometheus) and in the figures every rendering shows."""
    reason = 'cannot reach http://prom:9090/api/v1/query_range: URLError: [Errno 111] Connection refused'
    down = result(GI, current_memory='1Gi', basis=history_basis('node', 3 * 24 * HOUR), settings=PERCENT)
    down['history']['prometheus'] = {'url': 'http://prom:9090', 'node': 'n1', 'query': 'q', 'step_seconds': 60,
                                     'span_seconds': 0, 'reason': reason, 'problems': [], 'samples': 0, 'used': False}
    shorter = result(GI, current_memory='1Gi', basis=history_basis('node', 3 * 24 * HOUR), settings=PERCENT)
    shorter['history']['prometheus'] = dict(down['history']['prometheus'], reason=None, samples=30, span_seconds=1800)
    used = result(GI, current_memory='1Gi', basis=history_basis('prometheus', 14 * 24 * HOUR), settings=PERCENT)
    used['history']['prometheus'] = dict(down['history']['prometheus'], reason=None, samples=20160,
                                         span_seconds=14 * 24 * HOUR, used=True)
    # A machine without a kubelet yet (measured before it joins): its figure came from somewhere too.
    bare = result(GI, basis=history_basis('node', 3 * 24 * HOUR), settings=PERCENT)
    bare['history']['prometheus'] = dict(down['history']['prometheus'])
    report = _fleet_report.build_report({'down': down, 'shorter': shorter, 'used': used, 'alone': result(GI),
                                         'bare': bare},
                                        now=datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc))
    rows, node = _rows(report, 'bare')
    assert node['status'] == 'no_kubelet' and rows['history source'][2].startswith("the node's own history file")
    assert rows['Prometheus history'][2] == 'not used (http://prom:9090, node n1): ' + reason
    rows, node = _rows(report, 'down')
    assert node['history']['prometheus'] == {'url': 'http://prom:9090', 'node': 'n1', 'used': False, 'reason': reason,
                                             'samples': 0, 'span_seconds': 0}
    assert rows['Prometheus history'][2] == 'not used (http://prom:9090, node n1): ' + reason
    assert rows['history source'][2].startswith("the node's own history file")
    rows, node = _rows(report, 'shorter')
    assert rows['Prometheus history'][2].endswith("it spans no longer than the node's own history")
    rows, node = _rows(report, 'used')
    assert node['history']['prometheus']['used'] and 'Prometheus history' not in rows
    rows, node = _rows(report, 'alone')
    assert node['history']['prometheus'] is None and 'Prometheus history' not in rows
    # The Markdown escapes the reason's brackets; the HTML has it as it is.
    rendered = _fleet_report.renderings(report)
    assert 'not used (http://prom:9090, node n1): cannot reach http://prom:9090/api/v1/query_range' in rendered['markdown']
    assert 'not used (http://prom:9090, node n1): ' + reason in rendered['html']


# Issue 35: a module result carrying its own status, or a slice report on the shared merge volume, reached the HTML
# attributes unescaped, and the Markdown escaped nothing.
HOSTILE_STATUS = '"><script>alert(1)</script><x class="'
HOSTILE_TEXT = '<img src=x onerror=alert(1)> | x\n# heading\n```'


def hostile_report():
    node = result(GI, current_memory='1Gi', kubelet_pid=1, config_path='/etc/k|<b>.yaml')
    node['not_found'] = [HOSTILE_TEXT]
    report = _fleet_report.build_report({'h<i>': {'status': HOSTILE_STATUS, 'status_reason': HOSTILE_TEXT},
                                         'm': node}, now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    report['nodes'][1]['risk'] = HOSTILE_STATUS
    return report


def test_html_status_and_risk_are_data():
    page = _fleet_report.render_html(hostile_report())
    assert page.count('<script') == 1 and '<x class' not in page and '<img' not in page and '<i>' not in page
    assert '<tr class="failed">' in page
    assert '<td class="unknown" data-v="%d">"&gt;&lt;script&gt;' % _memory_risk.rank('unknown') in page


# The headings the Markdown report writes itself: a value from a node must add none (one h2 per node after "Each node").
OUR_HEADINGS = re.compile(r'^(Kubelet reservation report|What to do, per node class|Fleet summary|Per node class, what apply would do|Not measured|'
                          r'The \d+ riskiest nodes|Each node)$')


def headings_are_ours(tokens, node_count):
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == 'heading_open']
    each = headings.index(('h1', 'Each node'))
    return (all(OUR_HEADINGS.match(text) for _tag, text in headings[:each + 1])
            and [tag for tag, _text in headings[each + 1:]] == ['h2'] * node_count)


def test_markdown_values_add_no_html_block_or_cell():
    tokens = MarkdownIt('commonmark').enable('table').parse(_fleet_report.render_markdown(hostile_report()))
    assert not [t for t in tokens if t.type == 'html_inline' or t.type == 'html_block'
                and t.content.strip() not in ('<details><summary>Explanation</summary>', '</details>')]
    assert not [c for t in tokens for c in t.children or [] if c.type == 'html_inline']
    assert headings_are_ours(tokens, 2)
    assert not [t for t in tokens if t.type == 'fence' and t.info != 'diff']


def test_text_lines_and_the_awx_summary_carry_no_control_character_or_markup():
    report = hostile_report()
    lines = _fleet_report.render_text_lines(report)
    assert not [line for line in lines if '\n' in line or '\x1b' in line] and '# heading' not in lines
    assert report['summary']['status'] == {'other': 1, 'ok': 1} and report['summary']['risk'].get('other') is None


def test_a_large_page_keeps_each_nodes_body_gzipped_until_it_opens_and_the_bodies_are_the_inline_ones(monkeypatch):
    import base64
    import gzip
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _html_page
    report = _reports()
    inline = _fleet_report.render_html(report)
    # Four nodes, as on a page of LAZY_DETAILS_FROM nodes, three bodies to a chunk: two chunks, the second with one.
    monkeypatch.setattr(_html_page, 'LAZY_DETAILS_FROM', len(report['nodes']))
    monkeypatch.setattr(_html_page, 'LAZY_CHUNK', 3)
    lazy = _fleet_report.render_html(report)
    assert '<script type="application/gzip"' not in inline and 'DecompressionStream' not in inline
    chunks = re.findall(r'<script type="application/gzip" id="z(\d+)">([A-Za-z0-9+/=]*)</script>', lazy)
    assert [number for number, _data in chunks] == ['0', '1']
    bodies = [body for _number, data in chunks for body in json.loads(gzip.decompress(base64.b64decode(data)))]
    assert [len(json.loads(gzip.decompress(base64.b64decode(data)))) for _number, data in chunks] == [3, 1]
    for index, body in enumerate(bodies):
        section = re.search(r'<details id="n%d"><summary>.*?</details>' % index, inline, re.S).group(0)
        summary = section[:section.index('</summary>') + len('</summary>')]
        # The inline section is the summary and this body; the lazy page has the summary alone, marked to unfold.
        assert section == summary + body + '</details>'
        assert summary.replace('<details ', '<details data-z ', 1) + '</details>' in lazy
    assert 'boom' in bodies[0] and any('Memory risk' in body and '<svg' in body for body in bodies)  # failed first
    # What a person reads of the page otherwise is the same.
    assert lazy.split('<h2>Each node</h2>', maxsplit=1)[0] == inline.split('<h2>Each node</h2>', maxsplit=1)[0]


def test_the_history_line_sends_to_observe_only_the_nodes_whose_verdict_is_observe():
    # Issue 46: no line may tell the operator both to observe and to restart the same node.
    counts = {'history_source': {'node': 3}, 'cold_start_floor': 3, 'cold_start_observe': 1}
    line = _fleet_report.history_sentence(counts)
    assert '1 of them read observe: run playbooks/observe.yml' in line and 'the other 2 read apply' in line
    line = _fleet_report.history_sentence(dict(counts, cold_start_observe=3))
    assert 'read apply' not in line and 'run playbooks/observe.yml' in line
    nodes = [{'host': 'a', 'status': 'ok', 'measured': {}, 'cold_start': {'raised': True}, 'verdict': {'action': 'apply'}},
             {'host': 'b', 'status': 'ok', 'measured': {}, 'cold_start': {'raised': True},
              'verdict': {'action': 'observe'}}]
    assert _fleet_report.history_counts(nodes)['cold_start_observe'] == 1
    # A node without a kubelet has nothing to observe or apply: not on the floor (make report on a machine without a
    # kubelet said "the other 1 read apply, their readings already demand an increase" beside its "keep as it is").
    lone = [{'host': 'c', 'status': 'no_kubelet', 'measured': {}, 'cold_start': {'raised': True},
             'verdict': {'action': 'keep'}}]
    assert _fleet_report.history_counts(lone)['cold_start_floor'] == 0
    assert 'cold-start floor' not in _fleet_report.history_sentence(_fleet_report.history_counts(lone))
    kept = dict(counts, cold_start_apply=1)
    line = _fleet_report.history_sentence(kept)
    assert '1 of them read observe' in line and '1 read apply' in line and '1 keep what they reserve' in line
    assert 'the other' not in line


def test_a_control_plane_node_is_grouped_in_its_own_class_in_the_fleet_view():
    worker = dict(result(512 * MI), class_record={'node_class': [8, 2], 'class_name': None, 'control_plane': False})
    control_plane = dict(result(512 * MI), class_record={'node_class': [8, 2], 'class_name': None, 'control_plane': True})
    nodes = {host: _fleet_report.build_node(host, facts, None)
             for host, facts in (('w1', worker), ('cp1', control_plane))}
    assert nodes['w1']['template_class'] == '8gib-2cpu' and nodes['w1']['control_plane'] is False
    assert nodes['cp1']['template_class'] == 'control-plane-8gib-2cpu' and nodes['cp1']['control_plane'] is True
    # An older result without the mark: a worker's class, as before.
    assert _fleet_report.build_node('old', result(512 * MI), None)['template_class'] == '8gib-2cpu'


def test_the_history_line_says_the_other_only_after_a_group_it_is_other_than():
    line = _fleet_report.history_sentence({'history_source': {'node': 2}, 'cold_start_floor': 2,
                                           'cold_start_observe': 0, 'cold_start_apply': 2})
    assert '2 read apply' in line and 'the other' not in line
