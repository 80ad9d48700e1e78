"""The history from a real Prometheus (Debian's prometheus 2.42 server on the loopback) recommends as the node's file.

Fourteen days at one sample a minute for three nodes, in kube-prometheus-stack's names and labels (node_exporter's
series named by their node through node_namespace_pod:kube_pod_info:, cAdvisor's containers with ``node``), are
written as OpenMetrics and backfilled with ``promtool tsdb create-blocks-from openmetrics``; a server is started on a
free port of 127.0.0.1 over that storage, read through the prometheus_history action's code
(_prometheus_history.fetch with ansible's open_url) and stopped at the end. Parity: the same samples as a node's
history file and from Prometheus give the same recommendation, the Prometheus samples being each step's largest
(a step's value is the larger of its two readings, the one at its end and the one before: the step's resolution).
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest
from ansible.module_utils.urls import open_url

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_history, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store

pytestmark = pytest.mark.skipif(not (shutil.which('prometheus') and shutil.which('promtool')),
                                reason="needs Debian's prometheus package (prometheus and promtool)")

MIB, GIB = 1 << 20, 1 << 30
STEP, DAYS = 60, 14
MEM_TOTAL = 16 * GIB
NODES = ('node-a', 'node-b', 'node-c')
CPU_MILLICORES = 180  # Prometheus gives memory; CPU rests on the node's own readings, the same in both runs


def non_pod_bytes(node_index, t):
    """A day's cycle (a nightly job), a node-specific level and one peak, not at an edge of any window."""
    hour = (t // 3600) % 24
    level = (400 + 60 * node_index + (250 if hour in (2, 3) else 0) + (t // STEP) % 37) * MIB
    return level


def generate(now, path):
    """OpenMetrics of DAYS days for NODES; returns {node: [(t, non_pod_bytes)]}, the truth the file will hold."""
    end = now // STEP * STEP - 2 * STEP
    times = range(end - DAYS * 86400, end + 1, STEP)
    truth, families = {}, {'node_memory_MemTotal_bytes': [], 'node_memory_MemAvailable_bytes': [],
                           'node_namespace_pod:kube_pod_info:': [], 'container_memory_working_set_bytes': []}
    for index, node in enumerate(NODES):
        exporter = 'job="node-exporter",namespace="monitoring",pod="node-exporter-%s",instance="10.0.0.%d:9100"' % (
            node, index + 1)
        peak_at = end - (3 + index) * 86400 - 5 * 3600  # inside the 3-day and 14-day windows alike for node-a
        truth[node] = []
        for t in times:
            value = non_pod_bytes(index, t) + (900 * MIB if t == peak_at else 0)
            app = (2000 + (t // STEP) % 300) * MIB
            sidecar = 120 * MIB
            truth[node].append((t, value))
            families['node_memory_MemTotal_bytes'].append('node_memory_MemTotal_bytes{%s} %d %d' % (exporter, MEM_TOTAL, t))
            families['node_memory_MemAvailable_bytes'].append('node_memory_MemAvailable_bytes{%s} %d %d' % (
                exporter, MEM_TOTAL - value - app - sidecar, t))
            families['node_namespace_pod:kube_pod_info:'].append(
                'node_namespace_pod:kube_pod_info:{namespace="monitoring",pod="node-exporter-%s",node="%s"} 1 %d'
                % (node, node, t))
            for container, used in (('app', app), ('sidecar', sidecar)):
                families['container_memory_working_set_bytes'].append(
                    'container_memory_working_set_bytes{job="kubelet",metrics_path="/metrics/cadvisor",node="%s",'
                    'namespace="default",pod="web-%s",container="%s",image="example/%s:1",'
                    'id="/kubepods.slice/kubepods-burstable.slice/pod-%s/%s"} %d %d'
                    % (node, node, container, container, node, container, used, t))
    with open(path, 'w') as out:
        for name, lines in families.items():
            out.write('# TYPE %s gauge\n' % name)
            # One family's series one after the other, each in time order, as OpenMetrics wants.
            lines.sort(key=lambda line: line.rsplit(' ', 2)[0].split('}')[0])
            out.write('\n'.join(lines) + '\n')
        out.write('# EOF\n')
    return truth


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture(scope='module')
def prometheus(tmp_path_factory):
    work = tmp_path_factory.mktemp('prometheus')
    now = int(time.time())
    started = time.monotonic()
    truth = generate(now, str(work / 'series.om'))
    # Blocks of the whole span: at the default 2 h, promtool writes 168 blocks and takes minutes.
    subprocess.run(['promtool', 'tsdb', 'create-blocks-from', 'openmetrics', '--max-block-duration=400h', str(work / 'series.om'),
                    str(work / 'data')], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    (work / 'prometheus.yml').write_text('global:\n  scrape_interval: 1m\nscrape_configs: []\n')
    port = free_port()
    url = 'http://127.0.0.1:%d' % port
    with open(work / 'prometheus.log', 'w') as log:
        server = subprocess.Popen(['prometheus', '--config.file=%s' % (work / 'prometheus.yml'),
                                   '--storage.tsdb.path=%s' % (work / 'data'), '--storage.tsdb.retention.time=30d',
                                   '--web.listen-address=127.0.0.1:%d' % port], stdout=log, stderr=log)
    try:
        for _attempt in range(150):
            try:
                with urllib.request.urlopen(url + '/-/ready', timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail('prometheus did not become ready: %s' % (work / 'prometheus.log').read_text()[-2000:])
        yield {'url': url, 'truth': truth, 'now': now, 'work': work, 'setup_seconds': time.monotonic() - started}
    finally:
        server.terminate()
        server.wait(timeout=30)


def settings(server, node, window_days, query=_option_forms.DEFAULT_QUERY, url=None):
    return {'url': url or server['url'], 'query': query, 'node': node, 'window_seconds': window_days * 86400,
            'step_seconds': STEP, 'timeout_seconds': 20, 'validate_certs': True, 'ca_file': '', 'bearer_token': '',
            'username': '', 'password': ''}


OPTIONS = {'history_window': '14d'}
MEASURED = dict(mem_total_bytes=MEM_TOTAL, mem_available_bytes=10 * GIB, kubepods_working_set_bytes=5 * GIB,
                kube_components_working_set_bytes=300 * MIB, capacity_millicores=4000, non_pod_millicores=CPU_MILLICORES,
                kube_components_millicores=100)


def recommend(samples, now, options):
    """The one path after the source: the window's basis with this run's reading, then the recommendation."""
    reading = {'t': now, 'non_pod_bytes': 300 * MIB, 'non_pod_millicores': CPU_MILLICORES}
    history = {}
    _gather.history_basis(_gather.with_defaults(options), history, samples, reading, now)
    formulas = _vendor_formulas.all_formulas(MEM_TOTAL, 4, 110, 2)
    settings_ = _option_specs.with_defaults(options, _gather._DEFAULT)
    return history['basis'], _recommend.recommend(MEASURED, settings_, None, history['basis'], formulas)


@pytest.mark.parametrize('window_days', [14, 3])
@pytest.mark.parametrize('node', NODES)
def test_prometheus_and_the_node_file_give_the_same_recommendation(prometheus, tmp_path, node, window_days):
    now = prometheus['now']
    options = {'history_window': '%dd' % window_days}
    path = tmp_path / 'history.jsonl'
    path.write_text(''.join(json.dumps({'t': t, 'non_pod_bytes': v, 'non_pod_millicores': CPU_MILLICORES}) + '\n'
                            for t, v in prometheus['truth'][node]))
    own, problems = _history_store.read(str(path), now, window_days * 86400, MEM_TOTAL, 4000)
    assert problems == []
    from_file, source = _prometheus_history.choose(own, None, CPU_MILLICORES)
    assert source == 'node'

    fetched = _prometheus_history.fetch(open_url, settings(prometheus, node, window_days), now)
    assert fetched['reason'] is None, fetched['reason']
    # Every step is the larger of the two readings it covers (each as Prometheus sees it at that instant: the latest
    # within its 5 min lookback, which also carries the last reading up to 5 min past the end): each peak is kept.
    times = [t for t, _v in prometheus['truth'][node]]
    values = dict(prometheus['truth'][node])

    def seen_at(instant):
        index = bisect.bisect_right(times, instant) - 1
        return values[times[index]] if index >= 0 and instant - times[index] <= 300 else 0
    for t, value in fetched['samples']:
        assert value == max(seen_at(t), seen_at(t - STEP)), t
    from_prometheus, source = _prometheus_history.choose([], fetched, CPU_MILLICORES)
    assert source == 'prometheus'

    file_basis, file_rec = recommend(from_file, now, options)
    prom_basis, prom_rec = recommend(from_prometheus, now, options)
    assert abs(prom_basis['span_seconds'] - file_basis['span_seconds']) <= STEP
    assert prom_basis['non_pod_bytes'] == file_basis['non_pod_bytes'] > 300 * MIB  # the history's P, not the reading
    assert prom_rec['reserved_memory_bytes'] == file_rec['reserved_memory_bytes']
    assert prom_rec['reserved_millicores'] == file_rec['reserved_millicores']
    assert (prom_rec['kube_reserved'], prom_rec['system_reserved']) == (file_rec['kube_reserved'],
                                                                        file_rec['system_reserved'])


@pytest.mark.parametrize('query, node, words', [
    (_option_forms.DEFAULT_QUERY, 'node-gone', 'no series for node node-gone'),
    ('container_memory_working_set_bytes{node="$node"}', 'node-a', '2 series for node node-a'),
    ('no_such_function(node_memory_MemTotal_bytes{node="$node"})', 'node-a', 'the query failed (HTTP 400): bad_data'),
    ('-1 * container_memory_working_set_bytes{node="$node", container="app"}', 'node-a', 'NaN, infinite or negative'),
])
def test_a_real_server_answer_that_is_no_history_gives_a_reason(prometheus, query, node, words):
    fetched = _prometheus_history.fetch(open_url, settings(prometheus, node, 3, query), prometheus['now'])
    assert words in (fetched['reason'] or ''), fetched['reason']
    assert fetched['samples'] == []


def test_a_server_that_is_not_there_gives_a_reason(prometheus):
    closed = 'http://127.0.0.1:%d' % free_port()
    fetched = _prometheus_history.fetch(open_url, settings(prometheus, 'node-a', 3, url=closed), prometheus['now'])
    assert 'cannot reach' in fetched['reason'] and fetched['samples'] == []


def test_the_server_starts_fast_enough_for_the_suite(prometheus):
    # Generating, backfilling and starting: the whole module stays within the suite's budget (docs/testing.md).
    assert prometheus['setup_seconds'] < 45, prometheus['setup_seconds']
