"""The shipped alert rules and dashboard: promtool's rule tests, and every metric name is one the sampler writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils.test__sampler import make_node, options, run

MONITORING = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'monitoring')
NAME = re.compile(r'\bnodealloc_[a-z_]+\b')


@pytest.fixture
def written_names(tmp_path):
    opts = options(make_node(tmp_path), tmp_path)
    (tmp_path / 'decision.json').write_text(json.dumps({'action': 'keep', 'eviction_hard_memory_bytes': 1,
                                                        'recommended_kubepods_memory_limit_bytes': 2}))
    (tmp_path / 'reservation.json').write_text(json.dumps({'reserved_memory_bytes': 3, 'memory_headroom_bytes': 1}))
    run(opts, sleep=lambda _s: None)
    text = (tmp_path / 'nodealloc.prom').read_text()
    return {line.split()[2] for line in text.splitlines() if line.startswith('# TYPE ')}


def test_alert_rules_pass_their_promtool_tests():
    if not shutil.which('promtool'):
        pytest.skip("promtool is in Debian's prometheus package (make test installs it)")
    result = subprocess.run(['promtool', 'test', 'rules', 'nodealloc-rules.test.yml'], cwd=MONITORING,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_dashboard_query_uses_metrics_the_sampler_writes(written_names):
    with open(os.path.join(MONITORING, 'nodealloc-dashboard.json')) as handle:
        dashboard = json.load(handle)
    used = set()
    for panel in dashboard['panels']:
        for target in panel['targets']:
            used.update(NAME.findall(target['expr']))
    for variable in dashboard['templating']['list']:
        used.update(NAME.findall(variable.get('query', '')))
    assert used and used <= written_names, sorted(used - written_names)


def test_every_alert_rule_uses_metrics_the_sampler_writes(written_names):
    with open(os.path.join(MONITORING, 'nodealloc-rules.yml')) as handle:
        used = set(NAME.findall(''.join(line for line in handle if 'expr:' in line)))
    assert len(used) >= 6 and used <= written_names, sorted(used - written_names)
