"""One metrics schema (_metrics.FAMILIES): both writers, the alert rules, the dashboard and the docs use it; promtool's rule tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _metrics
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._sampler.test__sample_once import make_node, options, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MONITORING = os.path.join(ROOT, 'monitoring')
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


def families(text):
    """``{name: (type, help, {label names of each sample})}`` of a textfile."""
    found = {}
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name, help_text = line[len('# HELP '):].split(' ', 1)
            found[name] = [None, help_text, set()]
        elif line.startswith('# TYPE '):
            name, kind = line[len('# TYPE '):].split()
            found[name][0] = kind
        else:
            name = re.match(r'[a-z_]+', line).group(0)
            found[name][2].add(tuple(sorted(re.findall(r'([a-z_]+)="', line))))
    return found


@pytest.fixture
def both_textfiles(tmp_path):
    """The sampler's textfile and the module's (from _gather.gather, as node_reservation_facts renders it) on one node."""
    node = make_node(tmp_path)
    opts = options(node, tmp_path)
    (tmp_path / 'decision.json').write_text(json.dumps({'action': 'increase', 'time': 1700000000, 'eviction_hard_memory_bytes': 1,
                                                        'recommended_kubepods_memory_limit_bytes': 2}))
    (tmp_path / 'reservation.json').write_text(json.dumps({'reserved_memory_bytes': 3, 'memory_headroom_bytes': 1}))
    run(opts, sleep=lambda _s: None)
    config = tmp_path / 'config.json'
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", '
                      '"kubeReserved": {"memory": "1Gi", "cpu": "100m"}}')
    facts = _gather.gather({'cgroup_root': node, 'sample_seconds': 0, 'history': False, 'kubelet_config_path': str(config)},
                           proc_root=str(tmp_path / 'proc'), sleep=lambda _s: None)
    facts['decision'] = {'action': 'keep'}
    return (tmp_path / 'nodealloc.prom').read_text(), _metrics.render(facts, 1700000000)


def test_both_writers_write_the_tables_families_with_its_type_help_and_labels(both_textfiles):
    for text in both_textfiles:
        for name, (kind, help_text, label_sets) in families(text).items():
            assert name in _metrics.FAMILIES, name
            table_kind, labels, table_help = _metrics.FAMILIES[name]
            assert (kind, help_text, label_sets) == (table_kind, table_help, {labels}), name


def test_a_family_both_write_has_one_meaning(both_textfiles):
    sampler, module = (families(text) for text in both_textfiles)
    shared = set(sampler) & set(module)
    # What the sampler and the module both measure: memory, CPU and its period, the decision, the time, swap.
    assert {'nodealloc_memory_non_pod_bytes', 'nodealloc_cpu_non_pod_cores', 'nodealloc_cpu_period_seconds',
            'nodealloc_memory_recommended_reserved_bytes', 'nodealloc_decision', 'nodealloc_sample_timestamp_seconds',
            'nodealloc_memory_non_pod_swap_bytes', 'nodealloc_swap_system_slice_may_swap'} <= shared
    assert all(sampler[name][:2] == module[name][:2] for name in shared)


def test_a_sample_with_other_labels_than_the_tables_is_refused():
    with pytest.raises(ValueError, match='nodealloc_decision'):
        _metrics._family([], 'nodealloc_decision', [({'verdict': 'keep'}, 1)])


def test_every_name_the_docs_rules_and_dashboard_use_is_in_the_table_and_the_docs_list_them_all():
    sources = {path: open(os.path.join(ROOT, path)).read() for path in (
        'docs/monitoring.md', 'monitoring/nodealloc-rules.yml', 'monitoring/nodealloc-rules.test.yml',
        'monitoring/nodealloc-dashboard.json', 'plugins/modules/node_reservation_facts.py', 'README.md')}
    # Family names only: the playbooks' own variables (nodealloc_hosts, nodealloc_serial, nodealloc_previous_report,
    # the inventory's nodealloc_node_class: every nodealloc_ name the playbooks hold) are not metrics, and no metric may
    # share a name with one (it would pass unchecked here).
    playbooks = os.path.join(ROOT, 'playbooks')
    variables = set()
    for name in os.listdir(playbooks):
        if name.endswith('.yml'):
            with open(os.path.join(playbooks, name)) as handle:
                variables.update(NAME.findall(handle.read()))
    assert {'nodealloc_serial', 'nodealloc_previous_report'} <= variables
    assert not variables & set(_metrics.FAMILIES), sorted(variables & set(_metrics.FAMILIES))
    for path, text in sources.items():
        used = {name for name in NAME.findall(text) if name not in variables}
        assert used <= set(_metrics.FAMILIES), (path, sorted(used - set(_metrics.FAMILIES)))
    assert set(_metrics.FAMILIES) <= set(NAME.findall(sources['docs/monitoring.md']))
