"""The HTML fleet report rendered by a real browser (Debian's chromium, headless)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from test_playbooks import ansible_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Closed network here: without these flags chromium keeps trying to reach Google's hosts.
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync']


def test_report_page_renders_in_chromium_and_is_self_contained(tmp_path):
    chromium = shutil.which('chromium')
    if not chromium:
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'nodealloc_sample_seconds=0.2', check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    page = tmp_path / 'reservations.html'
    text = page.read_text()
    assert 'http://' not in text.replace('http://www.w3.org/2000/svg', '')  # nothing fetched from a network
    assert '<script' not in text
    profile = tmp_path / 'profile'
    dom = subprocess.run([chromium] + CHROMIUM_FLAGS + ['--user-data-dir=%s' % profile, '--dump-dom',
                                                        page.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    report = json.loads((tmp_path / 'reservations.json').read_text())
    for node in report['nodes']:
        assert '<h2>%s</h2>' % node['host'] in dom.stdout
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
