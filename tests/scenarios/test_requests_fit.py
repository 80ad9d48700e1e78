"""The requests fit on a real node (issue 30 item 4): the stand-in API server (tests/standin/apiserver.py) holds pods
bound to an nspawn node; apply.yml reads them with kubernetes.core.k8s_info (field selector spec.nodeName) and
refuses, before anything is written on the node, a change whose allocatable falls below their requests, naming the
largest; once they fit, the same run goes on and rolls the node out.

The nspawn nodes take their reservations to max_reserved_fraction (half of MemTotal: docs/testing.md, "What the test
nodes do not reproduce"), so a pod asking for three fifths of MemTotal fits the node's allocatable today (its config
reserves 200Mi) and not the one the change would give. Proofs are the files on the node and the stand-in kubelet's
log, never only what the playbook says.
"""

from __future__ import annotations

import copy
import json
import os
import time
import urllib.request

from helpers.rollout import output_tail, run_playbook, starts_since
from nodes import nodeio

from scenarios.test_safety import differences, snapshot

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'bound_pods.json')
CONFIG = '/var/lib/kubelet/config.yaml'


def _api(fleet, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(fleet['api_url'] + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _pods(node, other, big_memory_bytes):
    with open(FIXTURE, encoding='utf-8') as handle:
        pods = copy.deepcopy(json.load(handle)['pods'])
    for pod in pods:
        pod['spec']['nodeName'] = {'NODE': node['name'], 'OTHER': other['name']}[pod['spec']['nodeName']]
        if pod['metadata']['name'] == 'cache-0':
            pod['spec']['resources']['requests']['memory'] = str(big_memory_bytes)
    return pods


def _mem_total_bytes(node):
    for line in nodeio.ssh(node, 'cat /proc/meminfo').stdout.splitlines():
        if line.startswith('MemTotal:'):
            return int(line.split()[1]) * 1024
    raise AssertionError('no MemTotal on %s' % node['name'])


def _config_sha256(node):
    return nodeio.ssh(node, 'sha256sum %s' % CONFIG).stdout.split()[0]


def test_pods_whose_requests_exceed_the_new_allocatable_refuse_the_change_before_any_write_and_fitting_pods_do_not(
        fresh_fleet):
    node, other = fresh_fleet['nodes'][0], fresh_fleet['nodes'][1]
    big_memory_bytes = _mem_total_bytes(node) * 3 // 5
    pods = _pods(node, other, big_memory_bytes)
    created = []
    try:
        for pod in pods:
            _api(fresh_fleet, 'POST', '/api/v1/namespaces/%s/pods' % pod['metadata']['namespace'], pod)
            created.append((pod['metadata']['namespace'], pod['metadata']['name']))
        before, config_before = snapshot(node), _config_sha256(node)
        mark = time.time()
        refused = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'])
        after, config_after, started = snapshot(node), _config_sha256(node), starts_since(node, mark)

        # The big pod leaves; what is left (about 1.5 GiB) fits, and the same run goes on.
        _api(fresh_fleet, 'DELETE', '/api/v1/namespaces/data/pods/cache-0')
        created.remove(('data', 'cache-0'))
        mark = time.time()
        fits = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-enodealloc_hosts=%s' % node['name'])
        rolled, started_rolled = differences(before, snapshot(node)), starts_since(node, mark)
    finally:
        for namespace, name in created:
            _api(fresh_fleet, 'DELETE', '/api/v1/namespaces/%s/pods/%s' % (namespace, name))

    output = ' '.join(refused.stdout.split())  # the YAML callback wraps long lines
    print([line for line in refused.stdout.splitlines() if 'refused before writing anything' in line][:1])
    assert refused.returncode != 0, output_tail(refused)
    assert 'refused before writing anything' in output, output_tail(refused)
    # The four active pods bound to the node, the largest by memory first; the finished pod and the pod bound to
    # another node (1000Gi each) are not counted.
    assert 'the 4 pods bound to the node request' in output, output_tail(refused)
    assert 'of memory, more than the' in output and 'of CPU' not in output, output_tail(refused)
    assert 'largest: data/cache-0 ' in output and ', web/api-0 1.12 GiB, web/sandboxed-0 224 MiB)' in output, \
        output_tail(refused)
    assert 'report-28345678' not in output and 'elsewhere-0' not in output
    assert config_after == config_before
    assert differences(before, after) == []
    assert started == []

    assert fits.returncode == 0, output_tail(fits)
    # The role's default target on these nodes is a drop-in in the kubelet's --config-dir (docs/rollout.md).
    assert any(path.startswith('/etc/kubernetes/kubelet.conf.d/') for path in rolled), rolled
    assert len(started_rolled) == 1
