"""How long headless Chromium takes to load the HTML fleet report at N nodes, against a smaller page in the same run.

Usage: python benchmarks/report_render.py [--json] [--nodes 5000] [--baseline 500] [--runs 3]

For each size (the baseline first), makes a generated fleet (tests/integration/fleet_results.py: what the module's own
code returns for generated nodes), builds the report and renders the page as the ``reservation_report`` filter does
(``_fleet_report``), then opens the page ``--runs`` times in Debian's headless chromium over its DevTools pipe
(tests/integration/chromium_views.py), a fresh browser each time. The times are the page's own, read inside the
browser from the Navigation Timing API (``performance.getEntriesByType('navigation')``), from navigation start:
``rows_ms`` to the end of parsing (``domInteractive``: every row of the fleet table is in the DOM), ``load_ms`` to the
end of the load event (the page's script has run: its sort, filter and links are live), ``painted_ms`` to the first
frame painted after it (an upper bound: it holds the DevTools round trip that asks for it); and ``main_thread_ms``,
the time the page's main thread spent running tasks by then (DevTools ``Performance.getMetrics``' ``TaskDuration``):
a wall time too (it grows when other processes hold the CPU); and ``chromium_cpu_ms``, the CPU time (user + system)
of the browser's processes from their start until then, which does not (it also holds the browser's start-up, the
same at every size: compare it with the baseline's). Then, in the loaded page,
the time of a sort of the fleet table by host and of a filter that hides every row but the unreachable ones, each
with the layout it forces. Reports the median of each, the ratios of the big page's median load and CPU to the
baseline's, and the time Python took to make the fleet, build the report and render the page (not the browser's).
Target (issue 37): the 5,000-node page loads in under 10 s. Measures, asserts nothing about time (the figures
depend on the machine and its load); it fails only when the page does not show every row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, '.build'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))

from chromium_views import Page  # noqa: E402
from fleet_results import fleet  # noqa: E402

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report  # noqa: E402

# Every node has one row: the measured ones in the fleet table, the others in the not-measured table (#failed).
ROWS = "document.querySelectorAll('#fleet tbody tr, #failed tbody tr')"
# From navigation start, in ms: the end of parsing (every row in the DOM) and the end of the load event.
TIMING = ("(function(){var n=performance.getEntriesByType('navigation')[0];"
          "return {rows_ms:n.domInteractive-n.startTime,load_ms:n.loadEventEnd-n.startTime,"
          "rows:" + ROWS + ".length}})()")
# The first frame painted after the load event (two animation frames: the second starts once the first is on screen),
# from navigation start: an upper bound, as it also holds the DevTools round trip that asked for it after the load.
PAINTED = ("new Promise(function(done){requestAnimationFrame(function(){requestAnimationFrame(function(){"
           "done(performance.now())})})})")
# The page's own sort (s) and filter (f) functions, each followed by a forced layout (offsetHeight), in ms.
INTERACTIONS = ("(function(){var t0=performance.now();s('host',false);document.body.offsetHeight;"
                "var t1=performance.now();f('unreachable');document.body.offsetHeight;var t2=performance.now();"
                "var shown=[].filter.call(" + ROWS + ",function(r){return !r.hidden})"
                ".length;f('');return {sort_ms:t1-t0,filter_ms:t2-t1,shown:shown}})()")


def cpu_seconds(root_pid):
    """User + system CPU seconds of ``root_pid`` and its live descendants (chromium's browser, renderer, GPU and
    utility processes): what the page cost, whatever else held the CPU meanwhile."""
    parents, ticks = {}, {}
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open('/proc/%s/stat' % name) as handle:
                    fields = handle.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            parents[int(name)], ticks[int(name)] = int(fields[1]), int(fields[11]) + int(fields[12])
    tree, total = {root_pid}, 0
    for pid in sorted(parents):  # children have higher ids here (no wrap-around within a run)
        if pid in tree or parents[pid] in tree:
            tree.add(pid)
            total += ticks[pid]
    return total / float(os.sysconf('SC_CLK_TCK'))


def page_for(nodes, directory):
    """The report page for a ``nodes``-host fleet, and the seconds Python spent on each step."""
    started = time.monotonic()
    results = fleet(nodes)
    made = time.monotonic()
    report = _fleet_report.build_report(results)
    built = time.monotonic()
    text = _fleet_report.render_html(report)
    rendered = time.monotonic()
    path = os.path.join(directory, 'reservations-%d.html' % nodes)
    with open(path, 'w') as handle:
        handle.write(text)
    unreachable = sum(1 for node in report['nodes'] if node['status'] == 'unreachable')
    return path, unreachable, {'fleet_s': round(made - started, 2), 'build_report_s': round(built - made, 2),
                               'render_html_s': round(rendered - built, 2)}


def measure(chromium, nodes, runs, directory):
    path, unreachable, python = page_for(nodes, directory)
    samples = []
    for run in range(runs):
        with Page(chromium, os.path.join(directory, 'profile-%d-%d' % (nodes, run)), 'file://' + path,
                  domains=('Performance',)) as page:
            sample = page.evaluate(TIMING)
            sample['painted_ms'] = page.evaluate(PAINTED, await_promise=True)
            sample['main_thread_ms'] = page.metrics()['TaskDuration'] * 1000
            sample['chromium_cpu_ms'] = cpu_seconds(page.pid) * 1000
            sample.update(page.evaluate(INTERACTIONS))
        if sample['rows'] != nodes or sample['shown'] != unreachable:
            raise SystemExit('the %d-node page showed %d rows (%d after the filter, %d expected)'
                             % (nodes, sample['rows'], sample['shown'], unreachable))
        samples.append(sample)
    medians = {key: round(statistics.median(sample[key] for sample in samples))
               for key in ('rows_ms', 'load_ms', 'painted_ms', 'main_thread_ms', 'chromium_cpu_ms', 'sort_ms',
                           'filter_ms')}
    return dict(nodes=nodes, page_mib=round(os.path.getsize(path) / 1048576.0, 1), runs=runs,
                load_ms_each=[round(sample['load_ms']) for sample in samples], python=python, **medians)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--nodes', type=int, default=5000)
    parser.add_argument('--baseline', type=int, default=500)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which('chromium')
    if not chromium:
        print(json.dumps({'name': 'report_render', 'skipped': "Debian's chromium is not installed"}))
        return
    directory = tempfile.mkdtemp(prefix='report-render-')
    try:
        baseline = measure(chromium, args.baseline, args.runs, directory)
        page = measure(chromium, args.nodes, args.runs, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    result = {'name': 'report_render', 'baseline': baseline, 'page': page,
              'load_ratio': round(page['load_ms'] / float(max(1, baseline['load_ms'])), 2),
              'cpu_ratio': round(page['chromium_cpu_ms'] / float(max(1, baseline['chromium_cpu_ms'])), 2),
              'target_load_ms': 10000}
    if args.json:
        print(json.dumps(result))
        return
    for entry in (baseline, page):
        print('%5d nodes, %5.1f MiB: rows in the DOM %6d ms, loaded %6d ms (runs: %s), painted %6d ms, main thread '
              'busy %6d ms, chromium CPU %6d ms, sort %5d ms, filter %5d ms; Python: %s'
              % (entry['nodes'], entry['page_mib'], entry['rows_ms'], entry['load_ms'], entry['load_ms_each'],
                 entry['painted_ms'], entry['main_thread_ms'], entry['chromium_cpu_ms'], entry['sort_ms'],
                 entry['filter_ms'], entry['python']))
    print('%d nodes / %d nodes: load %.2f, chromium CPU %.2f (target: loaded in under %d ms at 5,000 nodes)'
          % (args.nodes, args.baseline, result['load_ratio'], result['cpu_ratio'], result['target_load_ms']))


if __name__ == '__main__':
    main()
