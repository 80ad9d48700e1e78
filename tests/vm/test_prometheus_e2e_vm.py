"""End to end on a VM guest (issue 36 item 3): sampler -> node_exporter -> Prometheus -> ``recommend.yml --check``.

One bookworm guest of its own (as test_oom_outcomes_vm.py boots its own, so the session's guests stay untouched),
booted with its node_exporter port 9100 forwarded to a free port of the host's 127.0.0.1 (vmnodes' ``forwards``):

1. Debian's ``prometheus-node-exporter`` goes into the guest from a .deb the host fetches (``apt-get download``, or
   the host's apt cache; the guest has no network of its own), installed with ``dpkg -i``: its unit starts it, with
   the textfile collector on /var/lib/prometheus/node-exporter (Debian's /etc/default/prometheus-node-exporter), the
   only collector left on (EXPORTER_ARGS).
2. ``playbooks/observe.yml`` installs the collection's sampler (every 10 s here, its textfile in that directory).
3. The host's Debian ``prometheus`` (make test installs it) scrapes the guest every 5 s through the forwarded port,
   the target relabelled ``instance="<guest>:9100"``, as a plain node_exporter scrape names a node.
4. After a few minutes, ``recommend.yml --check`` with ``reservations_prometheus_url`` on that server and the
   collection's own metric in the documented plain-scrape form
   (``nodealloc_memory_non_pod_bytes{instance="$node:9100"}``, docs/arithmetic.md). The node's own history file is
   not given to it (``reservations_history_path`` names a file that does not exist, as on a node replaced since, or
   a check-mode run on a node without the sampler): its recommendation must rest on Prometheus.

Checked: the report's history source is ``prometheus``; and parity: the Prometheus history (read with the action's
own code over the same window) and a replay of the guest's real history file (the readings the sampler wrote at the
very times it wrote the textfile) give the same P and the same recommendation (percentile 100: each Prometheus step
is the largest reading it saw within the step, and every reading persists in the textfile for at least one sampler
interval, twice the scrape interval, so each is scraped).

Short settings keep it to about 8 minutes on the 2-core machine (boot, image, 4.5 minutes of samples): a 4-minute
history window, a 2-minute reaction time (so the history is warm, not the cold-start prior) and 10-second sampling.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
from ansible.module_utils.urls import open_url

from helpers.rollout import BIN, COLLECTIONS_PATH, ROOT, output_tail
from nodes import vmnodes

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_specs, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _prometheus_history, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store

# Watches a guest in real time (a sampler every 10 s, a scrape every 5 s): among the tests on guests of their own it
# runs first, before oom_outcomes' guests load the machine (tests/conftest.py).
RUN_FIRST = True
GUEST = 'promvm'
EXPORTER_PORT = 9100
TEXTFILE_DIR = '/var/lib/prometheus/node-exporter'  # Debian's default --collector.textfile.directory
EXPORTER_ARGS = '--collector.disable-defaults --collector.textfile --collector.textfile.directory=' + TEXTFILE_DIR
QUERY = 'nodealloc_memory_non_pod_bytes{instance="$node:%d"}' % EXPORTER_PORT
STEP_SECONDS = 10
WINDOW = '4m'
SETTINGS = {
    'reservations_sampler_interval': '%ds' % STEP_SECONDS,
    'reservations_sampler_sample_seconds': 2,
    'reservations_sampler_textfile_path': TEXTFILE_DIR + '/nodealloc.prom',
    'reservations_history_window': WINDOW,
    'reservations_reaction_time': '2m',
    'reservations_stabilization_window': '1m',
    'reservations_sample_seconds': 1,
}
# Samples the sampler must have written before recommend runs: the window's 4 minutes and half a minute more.
OBSERVE_SECONDS = 270
# A process outside the pods holding HOG_MIB for HOG_SECONDS, started HOG_AT_SECONDS into the observation.
# Held for 90 s: on a loaded host the guest's sampler timer ran every 15-45 s instead of 10 (ci9, 2026-11-27: 12
# readings in five minutes), and a shorter hog could fall between two readings.
HOG_AT_SECONDS, HOG_SECONDS, HOG_MIB = 115, 90, 200
MIB = 1 << 20


def node_exporter_deb(directory):
    """A prometheus-node-exporter .deb for the guest's release (bookworm, as the host), or None."""
    fetched = subprocess.run(['apt-get', 'download', 'prometheus-node-exporter'], cwd=directory, capture_output=True,
                             text=True, check=False, timeout=300)
    found = glob.glob(os.path.join(directory, 'prometheus-node-exporter_*.deb')) if fetched.returncode == 0 else []
    found = found or sorted(glob.glob('/var/cache/apt/archives/prometheus-node-exporter_*.deb'))
    return found[-1] if found else None


def push(node, state_dir, local, remote):
    with open(local, 'rb') as handle:
        subprocess.run(vmnodes.ssh_command(node, state_dir) + ['cat > %s' % remote], input=handle.read(), check=True,
                       capture_output=True, timeout=120)


def wait_for(url, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError('%s did not answer within %d s' % (url, timeout))


def guest_clock_offset(node, state_dir):
    """The guest's clock minus the host's, in seconds (the SSH round trip halved).

    vmnodes sets the guest's clock at boot, but an emulated guest has no time sync and its clock can drift on a busy
    host (seen in CI: the history file's readings, stamped by the guest, no longer lined up with Prometheus's scrape
    times, stamped by the host, after eight minutes of emulation).
    """
    before = time.time()
    guest = float(vmnodes.ssh(node, state_dir, 'date +%s.%N').stdout)
    after = time.time()
    return guest - (before + after) / 2


def playbook(inventory, name, *extra, cwd):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR='1', ANSIBLE_HOST_KEY_CHECKING='False', PWD=cwd)
    command = [os.path.join(BIN, 'ansible-playbook'), '-i', inventory, os.path.join(ROOT, name)] + \
        ['-e%s=%s' % item for item in sorted(SETTINGS.items())] + list(extra)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900)


@pytest.fixture(scope='module')
def observed(tmp_path_factory):
    """The guest observed for OBSERVE_SECONDS by the sampler, node_exporter and a Prometheus on the host."""
    reason = vmnodes.missing()
    if reason:
        pytest.skip(reason)
    if not (shutil.which('prometheus') and shutil.which('apt-get')):
        pytest.skip("needs Debian's prometheus package on the host (make test installs it)")
    work = tmp_path_factory.mktemp('prometheus-e2e')
    deb = node_exporter_deb(str(work))
    if deb is None:
        pytest.skip('no prometheus-node-exporter .deb: apt-get download failed and none is in the apt cache')
    state_dir = str(work / 'vm')
    inventory, nodes = vmnodes.up([{'name': GUEST, 'memory_mib': 1024, 'forwards': [EXPORTER_PORT]}], state_dir)
    node = nodes[0]
    server = None
    try:
        push(node, state_dir, deb, '/tmp/prometheus-node-exporter.deb')
        # Only the textfile collector (Debian's unit reads ARGS from this file): a scrape of the default collectors
        # took the emulated guest longer than the 5-s scrape timeout on a loaded host (make test runs the guests beside
        # each other), and the missed scrapes left Prometheus under the 90 % of steps the history must cover.
        vmnodes.ssh(node, state_dir, 'dpkg -i /tmp/prometheus-node-exporter.deb && '
                    'echo \'ARGS="%s"\' > /etc/default/prometheus-node-exporter && '
                    'systemctl restart prometheus-node-exporter.service && '
                    'systemctl is-active prometheus-node-exporter.service' % EXPORTER_ARGS, timeout=300)
        exporter = 'http://127.0.0.1:%d/metrics' % node['forwards'][str(EXPORTER_PORT)]
        wait_for(exporter)

        observe = playbook(inventory, 'playbooks/observe.yml', cwd=str(work))
        assert observe.returncode == 0, output_tail(observe)

        (work / 'prometheus.yml').write_text(json.dumps({  # JSON is YAML
            'global': {'scrape_interval': '5s', 'evaluation_interval': '5s'},
            'scrape_configs': [{'job_name': 'node', 'static_configs': [
                {'targets': ['127.0.0.1:%d' % node['forwards'][str(EXPORTER_PORT)]]}],
                'relabel_configs': [{'target_label': 'instance', 'replacement': '%s:%d' % (GUEST, EXPORTER_PORT)}]}]}))
        port = vmnodes.free_port()
        url = 'http://127.0.0.1:%d' % port
        log = open(work / 'prometheus.log', 'w')
        server = subprocess.Popen(['prometheus', '--config.file=%s' % (work / 'prometheus.yml'),
                                   '--storage.tsdb.path=%s' % (work / 'data'),
                                   '--web.listen-address=127.0.0.1:%d' % port], stdout=log, stderr=log)
        wait_for(url + '/-/ready')
        scraping_since = time.time()
        # A peak outside the pods, in the middle of the window recommend reads: the largest reading in both sources,
        # far from the window's edges (where a step also sees the reading carried over from before it).
        time.sleep(HOG_AT_SECONDS)
        vmnodes.ssh(node, state_dir, 'systemd-run --unit=nodealloc-test-hog --slice=system.slice /usr/bin/python3 -c '
                    '"import time; b = b\\"\\x01\\" * (%d << 20); time.sleep(%d)"' % (HOG_MIB, HOG_SECONDS))
        time.sleep(OBSERVE_SECONDS - HOG_AT_SECONDS)

        reports = work / 'reports'
        recommend = playbook(inventory, 'playbooks/recommend.yml', '--check', '-ereservations_prometheus_url=' + url,
                             '-ereservations_prometheus_query=' + QUERY,
                             '-ereservations_history_path=/var/lib/nodealloc/not-this-nodes-history.jsonl',
                             '-enodealloc_report_dir=%s' % reports, cwd=str(work))
        assert recommend.returncode == 0, output_tail(recommend)
        now = time.time()
        with open(reports / 'reservations.json', encoding='utf-8') as handle:
            report = json.load(handle)
        history_file = work / 'history.jsonl'
        history_file.write_text(vmnodes.ssh(node, state_dir, 'cat %s' % _state_dir.HISTORY_PATH).stdout)
        meminfo = vmnodes.ssh(node, state_dir, "awk '/^MemTotal:/ {print $2 * 1024}' /proc/meminfo; nproc").stdout
        mem_total, cpus = (int(value) for value in meminfo.split())
        clock_offset = guest_clock_offset(node, state_dir)
        # The whole observation, however long recommend took under load (the hog must be inside), from two steps after
        # the first scrape (before it Prometheus has no value, and the coverage rule would count the gap).
        window = max(240, int(now - scraping_since - 2 * STEP_SECONDS) // STEP_SECONDS * STEP_SECONDS)
        fetched = _prometheus_history.fetch(open_url, {
            'url': url, 'query': QUERY, 'node': GUEST, 'window_seconds': window, 'step_seconds': STEP_SECONDS,
            'timeout_seconds': 20, 'validate_certs': True, 'ca_file': '', 'bearer_token': '', 'username': '',
            'password': ''}, now)
        yield {'report': report, 'history_file': str(history_file), 'now': now, 'fetched': fetched,
               'mem_total': mem_total, 'cpus': cpus, 'clock_offset': clock_offset}
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        vmnodes.down(state_dir)


def test_recommend_rests_on_the_history_prometheus_scraped_from_the_guest(observed):
    (node,) = [n for n in observed['report']['nodes'] if n['host'] == GUEST]
    assert node['status'] == 'ok', node
    assert node['history']['source'] == 'prometheus', node['history']
    # Warm at the 2-minute reaction time: the figure is the history's, not the cold-start prior's.
    assert node['history']['span_seconds'] >= 0.9 * 120, node['history']
    assert not node['cold_start'], node['cold_start']


def test_prometheus_and_the_node_history_file_give_the_same_recommendation(observed):
    fetched, now, offset = observed['fetched'], observed['now'], observed['clock_offset']
    assert fetched['reason'] is None, fetched['reason']
    last = fetched['samples'][-1][0]
    # The history file's times are the guest's clock, Prometheus's the host's: readings are put on the host's clock.
    # The whole file is read: Prometheus's first step can hold a reading from before the window (below).
    own, problems = _history_store.read(observed['history_file'], now + offset, None,
                                        observed['mem_total'], observed['cpus'] * 1000)
    assert problems == [], problems
    own = [dict(sample, t=sample['t'] - offset) for sample in own]
    # The readings Prometheus can have had a step for: each step holds the largest reading scraped within it, and the
    # textfile keeps a reading until the sampler's next run has written the next one, so the first step can hold one
    # from well before it (ci9: 44 s, the guest's timer running every 15-45 s and each run writing the textfile seconds
    # after its reading): every reading up to the last step, none cut at the front.
    own = [sample for sample in own if sample['t'] <= last]
    # At least six readings: the sampler timer runs late under emulation on a busy host (14 of the 15 planned seen on a
    # quiet one; 12 in five minutes while make test's six lines ran, ci9).
    assert len(own) >= 6, own
    cpu = max(sample['non_pod_millicores'] for sample in own)
    from_prometheus, source = _prometheus_history.choose([], fetched, cpu)
    assert source == 'prometheus'
    # The same numbers: every step's value is one the sampler wrote to its history file.
    written = {sample['non_pod_bytes'] for sample in own}
    unmatched = [[t, value] for t, value in fetched['samples'] if value not in written]
    assert not unmatched, ('guest clock offset %.1f s' % offset, 'steps with no such reading:', unmatched,
                           'readings:', [(s['t'], s['non_pod_bytes']) for s in own])
    # The peak the test made is the largest in both, and is the hog's.
    peak = max(sample['non_pod_bytes'] for sample in own)
    assert max(value for _t, value in fetched['samples']) == peak
    assert peak - min(sample['non_pod_bytes'] for sample in own) > HOG_MIB * MIB // 2, own
    options = _gather.with_defaults({key[len('reservations_'):]: value for key, value in SETTINGS.items()
                                     if key[len('reservations_'):] in _option_specs.OPTIONS})
    reading = {'t': now, 'non_pod_bytes': 0, 'non_pod_millicores': cpu}
    measured = dict(mem_total_bytes=observed['mem_total'], mem_available_bytes=observed['mem_total'] // 2,
                    kubepods_working_set_bytes=0, kube_components_working_set_bytes=0,
                    capacity_millicores=observed['cpus'] * 1000, non_pod_millicores=cpu, kube_components_millicores=0)
    formulas = _vendor_formulas.all_formulas(observed['mem_total'], observed['cpus'], 110, 2)
    results = []
    for samples in (from_prometheus, [dict(s, non_pod_millicores=cpu) for s in own]):
        history = {'problems': []}
        _gather.history_basis(options, history, samples, reading, now)
        results.append(_recommend.recommend(measured, options, None, history['basis'], formulas))
    assert results[0]['reserved_memory_bytes'] == results[1]['reserved_memory_bytes']
    assert (results[0]['kube_reserved'], results[0]['system_reserved']) == (results[1]['kube_reserved'],
                                                                            results[1]['system_reserved'])
