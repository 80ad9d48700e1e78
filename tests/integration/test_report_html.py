"""The HTML fleet report rendered by a real browser (Debian's chromium, headless)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from chromium_views import Page, png_facts
from fleet_results import fleet
from test_playbooks import ansible_playbook

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _html_page

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A byte count as the module prints it, a bare integer of a MiB or more, or a Ki quantity: not for a person.
RAW_BYTES = re.compile(r'\d+ B\b|(?<![\w.])\d{7,}(?![\w.])|\d+Ki\b')
# Closed network here: without these flags chromium keeps trying to reach Google's hosts.
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync']


def test_report_page_renders_in_chromium_and_is_self_contained(tmp_path):
    chromium = shutil.which('chromium')
    if not chromium:
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'reservations_sample_seconds=0.2', check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    page = tmp_path / 'reservations.html'
    text = page.read_text()
    assert 'http://' not in text.replace('http://www.w3.org/2000/svg', '')  # nothing fetched from a network
    assert ' src=' not in text and '<link' not in text
    profile = tmp_path / 'profile'
    dom = subprocess.run([chromium] + CHROMIUM_FLAGS + ['--user-data-dir=%s' % profile, '--dump-dom',
                                                        page.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    report = json.loads((tmp_path / 'reservations.json').read_text())
    for node in report['nodes']:
        assert '>%s</a>' % node['host'] in dom.stdout
    assert dom.stdout.count('<svg') >= len(report['nodes'])
    _assert_readable(dom.stdout, report)
    if not any(node.get('kubelet_config') for node in report['nodes']):
        # This machine runs no kubelet: the page says so instead of proposing a zero reservation.
        assert 'no kubelet found: nothing to apply' in _text(dom.stdout) and 'kubeReserved: 0' not in dom.stdout
    artifacts = os.path.join(ROOT, 'tests', 'output')
    os.makedirs(artifacts, exist_ok=True)
    screenshot = os.path.join(artifacts, 'reservation-report.png')
    shot = subprocess.run([chromium] + CHROMIUM_FLAGS + ['--user-data-dir=%s' % profile, '--window-size=1100,1400',
                                                         '--screenshot=%s' % screenshot, page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    assert shot.returncode == 0, shot.stderr[-2000:]
    with open(screenshot, 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    assert os.path.getsize(screenshot) > 10000  # a rendered page, not a blank image


def _text(dom):
    """What a person reads: the text content of the DOM, without tags, attributes, style sheet or script."""
    dom = re.sub(r'<(style|script)>.*?</\1>', '', dom, flags=re.S)
    return re.sub(r'<[^>]*>', ' ', dom)


def _svgs(dom, label):
    return re.findall(r'<svg[^>]*aria-label="%s">(.*?)</svg>' % label, dom, re.S)


def _assert_readable(dom, report):
    """The properties a reader relies on, read from the DOM the browser built."""
    readable = '\n'.join(line for line in _text(dom).splitlines()
                         if not line.strip().startswith(('+', '-', '@@')))  # the diff is in config quantities
    assert RAW_BYTES.findall(readable) == []
    measured = [node for node in report['nodes'] if 'measured' in node]
    memory_charts, cpu_charts, history_charts = _svgs(dom, 'memory'), _svgs(dom, 'CPU'), _svgs(dom, 'history')
    assert len(memory_charts) == len(cpu_charts) == len(history_charts) == len(measured)
    for chart in memory_charts:
        assert 'memory (MiB / GiB)' in chart  # the axis says its unit
        assert re.search(r'>\d+(\.\d+)? (MiB|GiB)</text>', chart)  # ticks and values in those units
        assert 'class="capl"' in chart and '>capacity ' in chart  # the capacity line, labelled
    for chart in cpu_charts:
        assert 'CPU (millicores' in chart and re.search(r'>\d+m</text>', chart)
        assert 'class="capl"' in chart and '>capacity ' in chart
    for chart, node in zip(history_charts, measured):
        legend = re.search(r'<g class="legend">(.*?)</g>', chart, re.S).group(1)
        assert re.search(r'>non-pod memory, (peak|now) ', legend) and ('>recommended ' in legend or '>a kubelet would need ' in legend)
        if node['status'] == 'ok':
            assert '>reserved now ' in legend
        assert node['formulas']
        for name in node['formulas']:
            assert '>%s formula ' % name in legend  # each vendor formula's line is named, with its value
        assert chart.count('<line class="f ') == 2 * len(node['formulas'])  # each drawn, and its legend sample
        assert '>non-pod memory</text>' in chart  # the value axis is named
        assert 'time (UTC)' in chart or 'one reading' in chart  # and so is the time axis


def _chromium(chromium, profile, *args):
    run = subprocess.run([chromium] + CHROMIUM_FLAGS + ['--user-data-dir=%s' % profile] + list(args),
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def _fleet_rows(dom):
    """(status, host, (risk rank, spare share)) of each shown fleet-table row, in the order the browser shows them."""
    body = re.search(r'<table id="fleet".*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    rows = []
    for row in re.findall(r'<tr class="(\w+)">(.*?)</tr>', body, re.S):
        host = re.search(r'<a href="#n\d+">([^<]+)</a>', row[1]).group(1)
        values = re.findall(r'data-v="([^"]+)"', row[1])
        rows.append((row[0], host, (float(values[3]), float(values[4]))))  # class, memory, CPU, risk, spare
    return rows


def _failed_rows(dom):
    """(status, host) of each row of the table of nodes not measured, in the page's order."""
    body = re.search(r'<table id="failed".*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return [(status, re.search(r'<a href="#n\d+">([^<]+)</a>', row).group(1))
            for status, row in re.findall(r'<tr class="(\w+)"[^>]*>(.*?)</tr>', body, re.S)]


@pytest.fixture(scope='module')
def chromium():
    path = shutil.which('chromium')
    if not path:
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    return path


@pytest.fixture(scope='module')
def fleet_500_page(tmp_path_factory):
    """(results, report, page path) of the 500-node fleet, made once for the tests that open it."""
    results = fleet(500)
    report = _fleet_report.build_report(results)
    page = tmp_path_factory.mktemp('fleet-500') / 'reservations.html'
    page.write_text(_fleet_report.render_html(report))
    return results, report, page


def test_500_node_report_reads_in_chromium(tmp_path, chromium, fleet_500_page):
    results, report, page = fleet_500_page
    size = page.stat().st_size
    print('500-node report: %d bytes (%.2f MiB)' % (size, size / 1048576.0))
    # Measured 6.63 MiB with charts, legends, each figure's meaning, the explained arithmetic, the memory risk's
    # reason, the history's source, the cold-start floor, and the disk and PIDs table with their arithmetic per node
    # (about 13.9 KB a node; 5.64 MiB before disk and PIDs, issue 47: their table 452 bytes a node, their lines about
    # 900; 4.96 MiB before the reason, source and floor; 2.40 MiB before the explained arithmetic, same fleet); a
    # regression to a page per node would be far above.
    assert size < 7.5 * 1048576
    not_measured = {host for host, result in results.items() if not result.get('recommendation')}
    profile = tmp_path / 'profile'

    first = _chromium(chromium, profile, '--dump-dom', page.as_uri())
    rows, failed = _fleet_rows(first), _failed_rows(first)
    # The nodes not measured in a table of their own (issue 46), the measured ones in the fleet table.
    assert {host for _s, host in failed} == not_measured and {status for status, _h in failed} == {'failed', 'unreachable'}
    assert len(rows) == 500 - len(not_measured) and {host for _s, host, _v in rows} == set(results) - not_measured
    measured_risk = [value for _s, _h, value in rows]
    assert measured_risk == sorted(measured_risk)  # the worst memory risk first, the least to spare first
    no_kubelet = [host for status, host, _v in rows if status == 'no_kubelet']
    assert no_kubelet and [host for _s, host, _v in rows[-len(no_kubelet):]] == no_kubelet  # nothing to act on: last

    # The page's own sort, asked for in the address as a click on the header would: by host, and by
    # spare over the peak descending (a number, not text).
    by_host = _fleet_rows(_chromium(chromium, profile, '--dump-dom', page.as_uri() + '#sort=host'))
    assert [host for _s, host, _v in by_host] == sorted(set(results) - not_measured)
    by_spare = _fleet_rows(_chromium(chromium, profile, '--dump-dom', page.as_uri() + '#sort=-spare'))
    assert [value[1] for _s, _h, value in by_spare] == sorted((value[1] for _s, _h, value in rows), reverse=True)
    # The filter, asked for in the address as typing would: only the rows that contain the text stay shown.
    filtered = _chromium(chromium, profile, '--dump-dom', page.as_uri() + '#filter=unreachable')
    bodies = ''.join(re.findall(r'<table id="(?:fleet|failed)".*?<tbody>(.*?)</tbody>', filtered, re.S))
    shown = re.findall(r'<tr class="(\w+)">', bodies)
    assert shown and set(shown) == {'unreachable'} and bodies.count(' hidden=""') == 500 - len(shown)
    # A link to a node (a dot of the fleet chart) opens its folded section.
    opened = _chromium(chromium, profile, '--dump-dom', page.as_uri() + '#n30')
    assert re.search(r'<details id="n30" open=""', opened) and opened.count('<details open') == 0

    dom = _chromium(chromium, profile, '--dump-dom', page.as_uri())
    assert dom.count('<details id="n') == 500 and '<details open' not in dom  # every node folded
    assert dom.count('aria-label="CPU"') == 500 - len(not_measured)
    assert '<ins>+kubeReserved:</ins>' in dom  # a node without reservations gets them added
    _assert_readable(dom, report)
    # The fleet view: one band per node class, named as the What to do table names it, and a legend of the risk colours.
    fleet_chart = _svgs(dom, 'fleet')[0]
    classes = {tuple(node['node_class']) for node in report['nodes'] if node['status'] == 'ok'}
    assert len(classes) == 3
    for node_class in classes:
        assert '>%dgib-%dcpu</text>' % node_class in fleet_chart
    assert fleet_chart.count('<circle') == len([n for n in report['nodes'] if n['status'] == 'ok']) + 5  # + legend
    assert 'as a share of the node\'s memory' in fleet_chart and '>exceeded</text>' in fleet_chart
    assert '<table id="classes">' in dom

    artifacts = os.path.join(ROOT, 'tests', 'output')
    os.makedirs(artifacts, exist_ok=True)
    screenshot = os.path.join(artifacts, 'reservation-report-500.png')
    _chromium(chromium, profile, '--window-size=1200,1600', '--screenshot=%s' % screenshot, page.as_uri())
    with open(screenshot, 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    assert os.path.getsize(screenshot) > 10000  # a rendered page, not a blank image
    _view_screenshots(chromium, profile, page, report, artifacts)


# One screenshot per view of the page, each cut out by its elements (docs/reading-the-report.md shows them):
# name -> (CSS selectors whose boxes it holds, most pixels high).
VIEWS = {
    'report-fleet-chart': (['figure:has(svg[aria-label="fleet"])'], 1000),
    'report-verdicts': (['h2:has(+ #verdicts)', '#verdicts'], 1000),
    'report-classes': (['h2:has(+ .scroll)', '#classes', '.scroll + p'], 1000),
    'report-failed': (['h2:has(+ p + #failed)', '#failed'], 1000),
    'report-table': (['p:has(#filter)', '#fleet'], 900),
    'report-node': (['details[open]'], 4000),
}


def _view_screenshots(chromium, profile, page, report, artifacts):
    """tests/output/report-*.png, one per view; the node is the first one with a change to write (the worst)."""
    index = next(number for number, node in enumerate(report['nodes']) if node.get('config_diff'))
    with Page(chromium, str(profile) + '-views', page.as_uri() + '#n%d' % index) as view:
        for name, (selectors, max_height) in VIEWS.items():
            path = os.path.join(artifacts, name + '.png')
            clip = view.shoot(path, selectors, max_height)
            width, height, byte_values = png_facts(path)
            assert (width, height) == (round(clip['width']), round(clip['height'])), name
            assert width > 300 and height > 100 and byte_values > 16, (name, width, height, byte_values)  # not blank


# Read in the browser: the classes' table and the fleet table, each row its cells' text, data-v and class.
CLASSES_DOM = ("[].map.call(document.querySelectorAll('#classes tbody tr'),function(r){"
               "return [].map.call(r.cells,function(c){return c.textContent})})")
ROWS_DOM = ("[].map.call(document.querySelectorAll('#failed tbody tr,#fleet tbody tr'),function(r){return {status:r.className,"
            "hidden:r.hidden,cells:[].map.call(r.cells,function(c){return [c.textContent,c.dataset.v===undefined?null:"
            "Number(c.dataset.v),c.className]})}})")
# The classes' table's columns (_html_page.CLASS_COLUMNS) read here, by position, and the JSON class entry's key.
CLASS_CELLS = ((1, 'nodes'), (3, 'increase'), (4, 'decrease'), (5, 'keep'), (6, 'kubelet_restarts'),
               (9, 'on_cold_start_prior'), (14, 'not_measured'), (15, 'no_kubelet'))
RISK_CELLS = ((10, 'exceeded'), (11, 'thin'), (12, 'not_configured'), (13, 'ok'))


def _row_class(row):
    """A fleet-table row's node class as the classes' table names it, from the class cell's sort value (memory in
    GiB * 1000 + CPUs; -1 for a node not measured). The fixture sets no inventory class: the size class is the name."""
    value = row['cells'][2][1]
    return 'not measured' if value < 0 else '%dgib-%dcpu' % divmod(int(value), 1000)


def _class_counts_from_rows(rows):
    """Per class, what the rendered fleet table's rows add up to: the counts the classes' table must show."""
    classes = {}
    for row in rows:
        entry = classes.setdefault(_row_class(row), {
            'nodes': 0, 'increase': 0, 'decrease': 0, 'keep': 0, 'kubelet_restarts': 0, 'not_measured': 0,
            'no_kubelet': 0, 'memory_taken_bytes': 0, 'memory_given_back_bytes': 0,
            'risk': dict.fromkeys([name for _i, name in RISK_CELLS], 0)})
        entry['nodes'] += 1
        if row['status'] in ('failed', 'unreachable'):  # a row of the table of nodes not measured: no figures
            entry['not_measured'] += 1
            continue
        status, decision, memory, risk = row['status'], row['cells'][3][0], row['cells'][4], row['cells'][6][2]
        if risk in entry['risk']:
            entry['risk'][risk] += 1
        if status == 'no_kubelet':
            entry['no_kubelet'] += 1
        elif decision in ('increase', 'decrease', 'keep'):
            entry[decision] += 1
            # A restart where the row shows what the node reserves now (its memory cell sorts by the change).
            if decision != 'keep' and not memory[0].startswith('?'):
                entry['kubelet_restarts'] += 1
                entry['memory_taken_bytes' if memory[1] > 0 else 'memory_given_back_bytes'] += abs(int(memory[1]))
    return classes


def test_500_node_fleet_view_numbers_match_the_json_and_the_rows_in_chromium(tmp_path, chromium, fleet_500_page):
    """Per node class, each figure of the classes' table the browser shows equals the report's JSON ``classes`` and
    what the page's own per-node rows add up to (test_report_fleet.py counts the JSON from the module's results)."""
    _results, report, page = fleet_500_page
    report = json.loads(_fleet_report.render_json(report))  # the JSON as written, not the object the page came from
    with Page(chromium, str(tmp_path / 'profile'), page.as_uri()) as view:
        shown, rows = view.evaluate(CLASSES_DOM), view.evaluate(ROWS_DOM)
    assert len(rows) == 500
    from_rows = _class_counts_from_rows(rows)
    from_json = {entry['name']: entry for entry in report['classes']}
    assert [cells[0] for cells in shown] == [entry['name'] for entry in report['classes']]  # the JSON's order
    assert set(from_json) == set(from_rows) and len(from_json) == 4  # three size classes and the not measured
    checked = 0
    for cells in shown:
        name = cells[0]
        entry, counted = from_json[name], from_rows[name]
        for column, key in CLASS_CELLS:
            assert int(cells[column]) == entry[key], (name, key)
            if key in counted:
                assert entry[key] == counted[key], (name, key)
        for column, risk in RISK_CELLS:
            assert int(cells[column]) == entry['risk'].get(risk, 0) == counted['risk'][risk], (name, risk)
        # Memory moved: exact bytes in the JSON and in the rows' sort values, GiB to one decimal in the table.
        for column, key in ((7, 'memory_given_back_bytes'), (8, 'memory_taken_bytes')):
            assert entry[key] == counted[key], (name, key)
            assert cells[column] == '%.1f GiB' % (entry[key] / 1073741824.0), (name, key)
        assert entry['increase'] + entry['decrease'] == entry['kubelet_restarts']
        checked += entry['kubelet_restarts'] + entry['keep']
    # The comparisons above compared something: the fixture has restarts, memory taken, nodes not measured and nodes
    # without a kubelet. (Under the shipped policy every measured node of fleet_results increases: decrease, keep and
    # the memory given back are 0 in the table, the JSON and the rows alike.)
    totals = {key: sum(entry[key] for entry in from_json.values()) for key in (
        'increase', 'kubelet_restarts', 'memory_taken_bytes', 'not_measured', 'no_kubelet')}
    assert all(totals.values()), totals
    assert checked == sum(1 for row in rows if row['status'] == 'ok')


# The sort and filter at a size where the 500-node page's figures do not reach, in the browser, as a person uses them.
# Not timed here (a busy machine would make it flaky): benchmarks/report_render.py times the 5,000-node page.
# 1,000 and not 5,000 nodes: making the 5,000-node fleet, its report and its page takes 20-33 s of Python here
# (fleet_results 3.5-8 s, build_report 4.5-10 s, render_html 10-16 s, at a load average of 7-12 on two cores) and
# chromium 10-45 s more to load its 57 MiB; at 1,000 the whole test takes about 15 s.
LARGE_FLEET = 1000
# Once a node's section is open and its body in place: whether it is open, and its text (the summary's left out).
OPENED = ("new Promise(function(done){var d=document.getElementById('n%d');(function w(){if(d.children.length>1)"
          "done([d.open,[].slice.call(d.childNodes,1).map(function(c){return c.textContent}).join('')]);"
          "else setTimeout(w,20)})()})")
CLICK = "document.getElementById('c-%s').click()"
HOSTS = "[].map.call(document.querySelectorAll('#fleet tbody tr:not([hidden]) td:first-child'),function(c){" \
        "return c.textContent})"
# The hosts shown in both tables, the nodes not measured (a table of their own, above) first.
ALL_HOSTS = HOSTS.replace("'#fleet tbody tr:not([hidden]) td:first-child'",
                          "'#failed tbody tr:not([hidden]) td:first-child,#fleet tbody tr:not([hidden]) td:first-child'")
SPARES = ("[].map.call(document.querySelectorAll('#fleet tbody tr td:last-child'),function(c){"
          "return Number(c.dataset.v)})")
TYPE = ("(function(){var i=document.getElementById('filter');i.value=%s;"
        "i.dispatchEvent(new Event('input'))})()")


def _inline_sections(report):
    """Each node's section body as a page below LAZY_DETAILS_FROM nodes holds it inline, by node index."""
    saved, _html_page.LAZY_DETAILS_FROM = _html_page.LAZY_DETAILS_FROM, len(report['nodes']) + 1
    try:
        page = _fleet_report.render_html(report)
    finally:
        _html_page.LAZY_DETAILS_FROM = saved
    return {int(index): body for index, body in
            re.findall(r'<details id="n(\d+)"><summary>.*?</summary>(.*?)</details>', page, re.S)}


def test_large_fleet_page_shows_every_row_and_sorts_and_filters_in_chromium(tmp_path, chromium):
    results = fleet(LARGE_FLEET)
    report = _fleet_report.build_report(results)
    page = tmp_path / 'reservations.html'
    page.write_text(_fleet_report.render_html(report))
    unreachable = sorted(host for host, result in results.items() if not result)
    with Page(chromium, str(tmp_path / 'profile'), page.as_uri()) as view:
        assert view.evaluate(ALL_HOSTS) == [node['host'] for node in report['nodes']]  # every row, the report's order
        measured = sorted(node['host'] for node in report['nodes'] if 'measured' in node)
        view.evaluate(CLICK % 'host')
        assert view.evaluate(HOSTS) == measured
        view.evaluate(CLICK % 'spare')
        view.evaluate(CLICK % 'spare')  # a second click: descending
        spares = view.evaluate(SPARES)
        assert len(spares) == len(measured) and spares == sorted(spares, reverse=True) and spares[0] > spares[-1]
        view.evaluate(TYPE % json.dumps('UNREACHABLE'))  # any case
        assert sorted(view.evaluate(ALL_HOSTS)) == unreachable and len(unreachable) == LARGE_FLEET // 50
        view.evaluate(TYPE % json.dumps(''))
        assert len(view.evaluate(ALL_HOSTS)) == LARGE_FLEET
        # Each node's section unfolds its body on opening (a page this large keeps the bodies gzipped: _html_page,
        # LAZY_DETAILS_FROM): a link to a node of the first chunk and one of a later chunk, each showing what the
        # section of a small page shows; a section not opened stays a summary.
        inline = _inline_sections(report)
        for index in (7, 2 * 100 + 31):
            view.evaluate("location.hash='#n%d'" % index)
            shown = view.evaluate(OPENED % index, await_promise=True)
            assert shown == [True, html.unescape(re.sub(r'<[^>]+>', '', inline[index]))], index
        assert view.evaluate("document.getElementById('n8').children.length") == 1  # the summary alone


# Issue 46 item 5, read in the browser at 1,280 x 800: the classes' table against its box, each verdict's box, the
# nodes not measured. Widths of the page, not of any element of this machine's chromium: the table is one of layout.
FIRST_SCREEN = (1280, 800)
CLASSES_FIT = ("(function(){var t=document.getElementById('classes'),b=t.parentNode,r=t.getBoundingClientRect();"
               "return {scroll:b.scrollWidth,client:b.clientWidth,right:r.right,table:r.width}})()")
VERDICTS_DOM = ("[].map.call(document.querySelectorAll('#verdicts tr.verdict'),function(r){var b=r.getBoundingClientRect();"
                "return {id:r.id,bottom:b.bottom+scrollY,right:b.right,text:r.textContent,"
                "command:(r.querySelector('code.cmd')||{}).textContent||null}})")
FAILED_DOM = ("[].map.call(document.querySelectorAll('#failed tbody tr'),function(r){var w=r.cells[3],"
              "s=w.querySelector('summary'),p=w.querySelector('pre');return {host:r.cells[0].textContent,"
              "status:r.className,shown:(s||w).textContent,folded:p?p.textContent:null,open:!!w.querySelector('details[open]')}})")


def test_500_node_page_first_screen_shows_every_verdict_and_fits_1280_px(tmp_path, chromium, fleet_500_page):
    """At 1,280 x 800 on the 500-node fleet: every class's verdict (class, action, reason, command) on the first
    screen, the classes' table inside its box (it was 1,369 px in a 1,150 px box, columns cut), and the nodes not
    measured in a table of their own, each with a one-line reason and the whole message folded."""
    _results, report, page = fleet_500_page
    width, height = FIRST_SCREEN
    artifacts = os.path.join(ROOT, 'tests', 'output')
    os.makedirs(artifacts, exist_ok=True)
    with Page(chromium, str(tmp_path / 'profile'), page.as_uri(), width, height) as view:
        fit = view.evaluate(CLASSES_FIT)
        verdicts = view.evaluate(VERDICTS_DOM)
        failed = view.evaluate(FAILED_DOM)
        fleet_statuses = view.evaluate("[].map.call(document.querySelectorAll('#fleet tbody tr'),function(r){"
                                       "return r.className})")
        screen = os.path.join(artifacts, 'report-first-screen-1280.png')
        view.shoot(screen, ['body'], height)
    print('classes table: %(table).0f px, box scroll %(scroll)d / client %(client)d px' % fit)
    assert fit['scroll'] <= fit['client'] and fit['right'] <= width, fit
    # One verdict row per class, in the JSON's order, each wholly within the first 800 px, with what it says.
    assert [row['id'] for row in verdicts] == ['v-%d' % index for index in range(len(report['classes']))]
    for row, entry in zip(verdicts, report['classes']):
        verdict = entry['verdict']
        assert row['bottom'] <= height and row['right'] <= width, (entry['name'], row['bottom'])
        text = ' '.join(row['text'].split())
        assert entry['name'] in text and ' '.join(verdict['reason'].split()) in text, entry['name']
        assert _html_page.ACTION_WORDS[verdict['action']] in text
        assert row['command'] == verdict['command']
    # The nodes not measured, apart: none in the fleet table, each here with a reason on one line and, where the
    # message is longer, the whole of it folded under it.
    missed = [node for node in report['nodes'] if 'measured' not in node]
    assert [row['host'] for row in failed] == [node['host'] for node in missed] and missed
    assert not {'failed', 'unreachable'} & set(fleet_statuses)
    for row, node in zip(failed, missed):
        assert '\n' not in row['shown'] and len(row['shown'].strip()) <= _html_page.REASON_SHOWN, row
        assert row['folded'] in (None, node['status_reason']) and not row['open']
        assert row['folded'] or row['shown'].strip() == node['status_reason']
    assert any(row['folded'] for row in failed)  # the fixture's parse errors are folded
    width_px, height_px, byte_values = png_facts(screen)
    assert width_px <= width and height_px == height and byte_values > 16
