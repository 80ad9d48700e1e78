"""The HTML fleet report rendered by a real browser (Debian's chromium, headless)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from fleet_results import fleet
from test_playbooks import ansible_playbook

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def _chromium(chromium, profile, *args):
    run = subprocess.run([chromium] + CHROMIUM_FLAGS + ['--user-data-dir=%s' % profile] + list(args),
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def _fleet_rows(dom):
    """(status, host, headroom data-v) of each fleet-table row, in the order the browser shows them."""
    body = re.search(r'<table id="fleet".*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    rows = []
    for row in re.findall(r'<tr class="(\w+)">(.*?)</tr>', body, re.S):
        host = re.search(r'<a href="#n\d+">([^<]+)</a>', row[1]).group(1)
        values = re.findall(r'data-v="([^"]+)"', row[1])
        rows.append((row[0], host, float(values[2])))
    return rows


def test_500_node_report_reads_in_chromium(tmp_path):
    chromium = shutil.which('chromium')
    if not chromium:
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    results = fleet(500)
    page = tmp_path / 'reservations.html'
    page.write_text(_report.render_html(_report.build_report(results)))
    size = page.stat().st_size
    print('500-node report: %d bytes (%.2f MiB)' % (size, size / 1048576.0))
    assert size < 2.5 * 1048576  # measured 2.35 MiB; a regression to a page per node would be far above
    not_measured = {host for host, result in results.items() if not result.get('recommendation')}
    profile = tmp_path / 'profile'

    rows = _fleet_rows(_chromium(chromium, profile, '--dump-dom', page.as_uri()))
    assert len(rows) == 500 and {host for _s, host, _v in rows} == set(results)
    assert {host for _s, host, _v in rows[:len(not_measured)]} == not_measured  # failed and unreachable first
    assert {status for status, _h, _v in rows[:len(not_measured)]} == {'failed', 'unreachable'}
    measured_headroom = [value for _s, _h, value in rows[len(not_measured):]]
    assert measured_headroom == sorted(measured_headroom)  # then the smallest margin, closest to a global OOM

    # The page's own sort, asked for in the address as a click on the header would: by host, and by
    # headroom descending.
    by_host = _fleet_rows(_chromium(chromium, profile, '--dump-dom', page.as_uri() + '#sort=host'))
    assert [host for _s, host, _v in by_host] == sorted(results)
    by_headroom = _fleet_rows(_chromium(chromium, profile, '--dump-dom', page.as_uri() + '#sort=-headroom'))
    assert [value for _s, _h, value in by_headroom] == sorted((value for _s, _h, value in rows), reverse=True)

    dom = _chromium(chromium, profile, '--dump-dom', page.as_uri())
    assert dom.count('<details') == 500 and '<details open' not in dom  # every node folded
    assert dom.count('aria-label="CPU"') == 500 - len(not_measured)
    assert '<ins>+kubeReserved:</ins>' in dom  # a node without reservations gets them added

    artifacts = os.path.join(ROOT, 'tests', 'output')
    os.makedirs(artifacts, exist_ok=True)
    screenshot = os.path.join(artifacts, 'reservation-report-500.png')
    _chromium(chromium, profile, '--window-size=1200,1600', '--screenshot=%s' % screenshot, page.as_uri())
    with open(screenshot, 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    assert os.path.getsize(screenshot) > 10000  # a rendered page, not a blank image
