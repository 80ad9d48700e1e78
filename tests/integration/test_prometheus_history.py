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
import sys
import time
import urllib.request

import pytest
import yaml
from ansible.module_utils.urls import open_url

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _prometheus_class, _prometheus_history, _recommend)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _node_templates
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


# Issue 36 item 2: a class whose nodes were all replaced during the window (a Karpenter nodepool "batch"). Two nodes
# lived only in the window's first five days, with a nightly peak the node now in the inventory never showed; the
# replacement has lived for the last day. kube-state-metrics' kube_node_labels names each node's nodepool.
CLASS_LABEL = 'karpenter.sh/nodepool'
BATCH_MEM_TOTAL, BATCH_CPUS = 8 * GIB, 2
BATCH_GONE = {'batch-old-1': (0, 3), 'batch-old-2': (2, 5)}  # days after the window's start
BATCH_NEW = 'batch-new'  # the last day only, in the inventory now


def batch_non_pod_bytes(node, t):
    """The gone nodes ran a job with 1.2 GiB outside the pods at night; the new one has not yet."""
    hour = (t // 3600) % 24
    gone = node != BATCH_NEW
    return (350 + (850 if gone and hour == 3 else 0) + (t // STEP) % 23) * MIB


# The node recommend.yml measures (test_recommend_playbook_...): this machine, named in Prometheus as the playbook's
# host (reservations_prometheus_node's default, the inventory hostname). Its history must decide, not this run's
# reading of this machine (which joins either source's samples): its level is 70 % of this machine's MemTotal, well
# above what the machine uses outside pods (9.5 to 12.8 GiB of 23.5 GiB while other helpers' tests ran), with a
# nightly job and one spike whose rise (about 0.9 GiB above the nights before) lies between the memory headroom's
# bounds (768 MiB, 2 GiB), so that the headroom rests on the history's jumps, not on a bound.
PLAYBOOK_NODE = 'localhost'
PLAYBOOK_LEVEL_SHARE, PLAYBOOK_SPIKE, PLAYBOOK_APP = 0.7, 1200 * MIB, 100 * MIB


def machine_mem_total():
    with open('/proc/meminfo', encoding='ascii') as meminfo:
        for line in meminfo:
            if line.startswith('MemTotal:'):
                return int(line.split()[1]) * 1024
    raise AssertionError('no MemTotal in /proc/meminfo')


def playbook_node_bytes(mem_total, t, spike_at):
    hour = (t // 3600) % 24
    level = int(mem_total * PLAYBOOK_LEVEL_SHARE) // MIB * MIB
    return level + (250 * MIB if hour in (2, 3) else 0) + (t // STEP) % 37 * MIB + (PLAYBOOK_SPIKE if t == spike_at else 0)


def node_spans(end):
    """{node: (first, last, MemTotal, CPUs, nodepool)}: the three long-lived nodes, the batch class and this
    machine."""
    start = end - DAYS * 86400
    spans = {node: (start, end, MEM_TOTAL, 4, 'general') for node in NODES}
    spans[PLAYBOOK_NODE] = (start, end, machine_mem_total(), os.cpu_count() or 1, 'general')
    for node, (first_day, last_day) in BATCH_GONE.items():
        spans[node] = (start + first_day * 86400, start + last_day * 86400, BATCH_MEM_TOTAL, BATCH_CPUS, 'batch')
    spans[BATCH_NEW] = (end - 86400, end, BATCH_MEM_TOTAL, BATCH_CPUS, 'batch')
    return spans


def generate(now, path):
    """OpenMetrics of DAYS days for NODES and the batch class; returns {node: [(t, non_pod_bytes)]}, the truth a
    history file holds."""
    end = now // STEP * STEP - 2 * STEP
    truth, families = {}, {'node_memory_MemTotal_bytes': [], 'node_memory_MemAvailable_bytes': [],
                           'node_namespace_pod:kube_pod_info:': [], 'container_memory_working_set_bytes': [],
                           'machine_cpu_cores': [], 'kube_node_labels': []}
    for index, (node, (first, last, mem_total, cpus, pool)) in enumerate(sorted(node_spans(end).items())):
        exporter = 'job="node-exporter",namespace="monitoring",pod="node-exporter-%s",instance="10.0.0.%d:9100"' % (
            node, index + 1)
        if node in NODES:
            node_index = NODES.index(node)
            peak_at = end - (3 + node_index) * 86400 - 5 * 3600  # inside the 3-day and 14-day windows for node-a
        truth[node] = []
        for t in range(first, last + 1, STEP):
            if node in NODES:
                value = non_pod_bytes(node_index, t) + (900 * MIB if t == peak_at else 0)
                app = (2000 + (t // STEP) % 300) * MIB
            elif node == PLAYBOOK_NODE:
                # The spike in the middle of the window, far from its edges.
                value = playbook_node_bytes(mem_total, t, end - 6 * 86400 - 5 * 3600)
                app = PLAYBOOK_APP
            else:
                value = batch_non_pod_bytes(node, t)
                app = 1000 * MIB
            sidecar = 120 * MIB
            truth[node].append((t, value))
            families['node_memory_MemTotal_bytes'].append('node_memory_MemTotal_bytes{%s} %d %d' % (exporter, mem_total, t))
            families['node_memory_MemAvailable_bytes'].append('node_memory_MemAvailable_bytes{%s} %d %d' % (
                exporter, mem_total - value - app - sidecar, t))
            families['node_namespace_pod:kube_pod_info:'].append(
                'node_namespace_pod:kube_pod_info:{namespace="monitoring",pod="node-exporter-%s",node="%s"} 1 %d'
                % (node, node, t))
            for container, used in (('app', app), ('sidecar', sidecar)):
                families['container_memory_working_set_bytes'].append(
                    'container_memory_working_set_bytes{job="kubelet",metrics_path="/metrics/cadvisor",node="%s",'
                    'namespace="default",pod="web-%s",container="%s",image="example/%s:1",'
                    'id="/kubepods.slice/kubepods-burstable.slice/pod-%s/%s"} %d %d'
                    % (node, node, container, container, node, container, used, t))
            if (t - first) % 3600 == 0 or t == last:  # slow-changing series: an hourly point is enough here
                families['machine_cpu_cores'].append(
                    'machine_cpu_cores{job="kubelet",metrics_path="/metrics/cadvisor",node="%s"} %d %d' % (node, cpus, t))
                families['kube_node_labels'].append(
                    'kube_node_labels{job="kube-state-metrics",node="%s",label_karpenter_sh_nodepool="%s"} 1 %d'
                    % (node, pool, t))
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
        yield {'url': url, 'truth': truth, 'now': now, 'work': work}
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


BATCH_MEASURED = dict(mem_total_bytes=BATCH_MEM_TOTAL, mem_available_bytes=5 * GIB, kubepods_working_set_bytes=2 * GIB,
                      kube_components_working_set_bytes=200 * MIB, capacity_millicores=2000,
                      non_pod_millicores=CPU_MILLICORES, kube_components_millicores=100)


def batch_measurement():
    """batch-new as _facts_measure gives it, to the fields _gather.recommend reads."""
    m = BATCH_MEASURED
    return {'memory': {'mem_total_bytes': m['mem_total_bytes'], 'mem_available_bytes': m['mem_available_bytes'],
                       'kubepods_working_set_bytes': m['kubepods_working_set_bytes'],
                       'kube_components_working_set_bytes': m['kube_components_working_set_bytes'],
                       'non_pod_accounting': None},
            'cpu': {'capacity_millicores': m['capacity_millicores'], 'non_pod_millicores': m['non_pod_millicores'],
                    'kube_components_millicores': m['kube_components_millicores']},
            'current': None, 'hugepages_bytes': 0, 'cpu_weights': None}


def history_file(tmp_path, name, pairs):
    path = tmp_path / name
    path.write_text(''.join(json.dumps({'t': t, 'non_pod_bytes': v, 'non_pod_millicores': CPU_MILLICORES}) + '\n'
                            for t, v in pairs))
    return str(path)


@pytest.mark.parametrize('class_label, class_name', [(CLASS_LABEL, 'batch'), ('', '8gib-2cpu')])
def test_the_template_of_a_class_whose_nodes_were_all_replaced_comes_from_their_history(prometheus, tmp_path,
                                                                                        class_label, class_name):
    now, truth = prometheus['now'], prometheus['truth']
    options = _gather.with_defaults({'history_window': '%dd' % DAYS})
    read = _prometheus_class.fetch_classes(open_url, dict(settings(prometheus, '', DAYS), class_label=class_label),
                                           now, [BATCH_NEW, 'node-a'])
    assert read['reason'] is None, read['reason']
    assert read['node_classes'][BATCH_NEW] == class_name
    class_history = read['classes'][class_name]
    assert class_history['reason'] is None, class_history['reason']
    assert class_history['members'] == sorted(list(BATCH_GONE) + [BATCH_NEW]) and class_history['nodes'] == 3
    assert 'node-a' not in class_history['members']

    # batch-new, measured now: its own file holds its one day.
    own, problems = _history_store.read(history_file(tmp_path, 'own.jsonl', truth[BATCH_NEW]), now, DAYS * 86400,
                                        BATCH_MEM_TOTAL, 2000)
    assert problems == []
    measurement = batch_measurement()
    reading = {'t': now, 'non_pod_bytes': 300 * MIB, 'non_pod_millicores': CPU_MILLICORES}
    history = {'problems': []}
    _gather.history_basis(options, history, own, reading, now)
    own_recommendation = _gather.recommend(options, measurement, history)[1]
    template = _gather.class_template(dict(options, class_history=class_history), measurement, history, reading, now)
    assert template['used'] and template['reason'] is None

    # The replay of the class's nodes as one history file (each minute the largest of the nodes then running).
    merged = {}
    for node in list(BATCH_GONE) + [BATCH_NEW]:
        for t, value in truth[node]:
            merged[t] = max(merged.get(t, 0), value)
    replayed, problems = _history_store.read(history_file(tmp_path, 'class.jsonl', sorted(merged.items())), now,
                                             DAYS * 86400, BATCH_MEM_TOTAL, 2000)
    assert problems == []
    replay = {'problems': []}
    _gather.history_basis(options, replay, replayed, reading, now)
    from_replay = _gather.recommend(options, measurement, replay)[1]
    assert template['non_pod_bytes'] == replay['basis']['non_pod_bytes'] > history['basis']['non_pod_bytes']
    for key in ('reserved_memory_bytes', 'reserved_millicores', 'kube_reserved', 'system_reserved'):
        assert template['recommendation'][key] == from_replay[key], key
    assert template['recommendation']['reserved_memory_bytes'] > own_recommendation['reserved_memory_bytes']

    # The templates: the class's figures from that history, and the header says how many nodes and days.
    facts = {'recommendation': own_recommendation, 'kubelet': {'found': True}, 'components': [True],
             'class_record': {'node_class': [8, 2]}, 'current': {}, 'memory': {'mem_total_bytes': BATCH_MEM_TOTAL},
             'class_template': template}
    rendered = _node_templates.render({BATCH_NEW: {'facts': facts, 'node_class': None}})
    drop_in = [item for item in rendered if item['path'].endswith('50-nodealloc.conf')][0]
    assert drop_in['class'] == class_name
    written = yaml.safe_load(drop_in['content'])
    for field, key in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
        assert written[key] == {'cpu': from_replay[field]['cpu'], 'memory': from_replay[field]['memory']}, \
            drop_in['content']
    span_days = (max(merged) - min(merged)) / 86400.0
    header = drop_in['content'].splitlines()[1]
    assert header.startswith('# History: Prometheus, 3 nodes of %s over %.1f days (6.0 days with a reading' % (
        'label_karpenter_sh_nodepool="batch"' if class_label else 'size class 8gib-2cpu', span_days)), header


def test_a_node_prometheus_does_not_know_has_no_class_and_a_missing_label_no_classes(prometheus):
    now = prometheus['now']
    read = _prometheus_class.fetch_classes(open_url, dict(settings(prometheus, '', DAYS), class_label=CLASS_LABEL),
                                           now, ['node-new-unknown'])
    assert read['reason'] is None and read['node_classes'] == {} and read['classes'] == {}
    read = _prometheus_class.fetch_classes(open_url, dict(settings(prometheus, '', DAYS), class_label='no.such/label'),
                                           now, [BATCH_NEW])
    assert read['node_classes'] == {} and read['classes'] == {}


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def recommend_playbook(inventory, *extra):
    """recommend.yml --check as tests/integration/test_playbooks.py runs it, with an inventory of local hosts."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'), ANSIBLE_NOCOLOR='1')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory), '--check',
               '-e', 'ansible_python_interpreter=%s' % sys.executable, 'playbooks/recommend.yml'] + list(extra)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300)


def test_recommend_playbook_on_day_one_rests_on_the_history_in_prometheus(prometheus, tmp_path):
    """Issue 36's first "Done when", through the role's wiring (tasks/measure.yml: the prometheus_history action, then
    node_reservation_facts' prometheus_history): recommend.yml --check with reservations_prometheus_url and the
    default query, on a node with no history file of its own, recommends from the 14 days in Prometheus, equal to
    the same samples as the node's history file; Prometheus not answering leaves the node on its own history, with
    the reason, and fails nothing.

    One run, three hosts on this machine (each measured by the module, as a node is): ``localhost`` (named so in
    Prometheus) reads Prometheus and has no history file; ``from-file`` has no Prometheus URL and the same samples
    as its history file; ``prometheus-down`` has that file and a closed port as its URL. Pooling by class is off:
    each node decides alone, as one node in its own run would.
    """
    mem_total = machine_mem_total()
    if mem_total < 13 * GIB:
        pytest.skip('needs 13 GiB: the backfilled history lies at 70 %% of MemTotal plus 1.5 GiB, and its '
                    'reservation below 90 %% of MemTotal (this machine has %d MiB)' % (mem_total // MIB))
    truth = prometheus['truth'][PLAYBOOK_NODE]
    history = history_file(tmp_path, 'history.jsonl', truth)
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('\n'.join([
        'localhost ansible_connection=local reservations_prometheus_url=%s reservations_history_path=%s'
        % (prometheus['url'], tmp_path / 'none.jsonl'),
        'from-file ansible_connection=local reservations_history_path=%s' % history,
        'prometheus-down ansible_connection=local reservations_prometheus_url=http://127.0.0.1:%d '
        'reservations_history_path=%s' % (free_port(), history)]) + '\n')
    reports = tmp_path / 'reports'
    started = time.time()
    result = recommend_playbook(inventory, '-e', 'nodealloc_report_dir=%s' % reports,
                                '-e', 'reservations_sample_seconds=0.5', '-e', 'reservations_history_window=%dd' % DAYS,
                                '-e', 'reservations_max_reserved_fraction=0.9', '-e', 'reservations_pool_class=false')
    run_seconds = time.time() - started
    # Prometheus not reached is no failure (docs/awx.md): the run's exit status is 0.
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    nodes = {node['host']: node for node in json.loads((reports / 'reservations.json').read_text())['nodes']}
    assert sorted(nodes) == ['from-file', 'localhost', 'prometheus-down']
    peak = max(value for _t, value in truth)
    for host, node in nodes.items():
        assert node['status'] in ('ok', 'no_kubelet'), (host, node['status'])
        # This run's reading of the machine joins the history; below the history's peak it decides nothing.
        assert node['measured']['non_pod_memory_bytes'] < peak, (
            'this machine uses more outside pods than the backfilled peak (%d MiB): the test rests on the reading'
            % (peak // MIB))

    localhost = nodes['localhost']
    assert localhost['history']['source'] == 'prometheus', localhost['explanation']
    # What Prometheus returned spans the window; the history then runs on to this run's reading, which the module takes
    # after the controller's query (7 s later under load in CI), so its span exceeds the window by at most the run.
    assert DAYS * 86400 - 600 <= localhost['history']['prometheus']['span_seconds'] <= DAYS * 86400, localhost['history']
    assert DAYS * 86400 - 600 <= localhost['history']['span_seconds'] <= DAYS * 86400 + run_seconds, (
        run_seconds, localhost['history'])
    assert localhost['cold_start'] is None
    recommended = localhost['recommended_reserved_memory_bytes']
    assert recommended != localhost['formulas']['gke']['reserved_memory_bytes']
    assert recommended < 0.9 * mem_total  # not the cap either: the history's figure
    assert any(line.startswith('history read from Prometheus (%s, node localhost' % prometheus['url'])
               for line in localhost['explanation']), localhost['explanation']
    read = localhost['history']['prometheus']
    assert read['used'] and read['reason'] is None and read['node'] == 'localhost', read

    from_file = nodes['from-file']
    assert from_file['history']['source'] == 'node'
    # Within a step, and the seconds between the controller's query and the modules' readings (the file's window ends
    # at its own reading, Prometheus's at the query: 62.8 s apart under load in CI).
    assert abs(from_file['history']['span_seconds'] - localhost['history']['span_seconds']) <= STEP + run_seconds
    # The same samples, from Prometheus and from the file, give the same memory reservation: P (the window's
    # largest, the spike) is the same, and so are the nightly jumps the headroom rests on, each Prometheus step being
    # the larger of the two readings it covers.
    assert recommended == from_file['recommended_reserved_memory_bytes'] > peak

    assert from_file['history']['prometheus'] is None

    down = nodes['prometheus-down']
    assert down['history']['source'] == 'node'
    assert down['recommended_reserved_memory_bytes'] == from_file['recommended_reserved_memory_bytes']
    # The node's reason, in the report's JSON, its figures (Markdown) and the explanation.
    read = down['history']['prometheus']
    assert not read['used'] and read['reason'].startswith('cannot reach http://127.0.0.1:') \
        and 'Connection refused' in read['reason'], read
    assert 'not used (%s, node prometheus-down): cannot reach' % read['url'] in (reports / 'reservations.md').read_text()
    assert any('gave no usable history: ' + read['reason'] in line for line in down['explanation'])
