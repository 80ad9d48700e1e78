"""Observing restarts nothing, on real nodes: playbooks/observe.yml, and apply.yml asked to only measure.

docs/templates.md's first step used to be ``apply.yml -e reservations_measure_only=true``, whose serial play never
read the variable: it wrote cold-start reservations and restarted every kubelet. observe.yml installs and starts the
sampler and nothing else; apply.yml refuses the removed variable before any node is touched. What is checked is read
on the nodes (the kubelet config's bytes and the drop-in directory, the kubelet unit's MainPID and NRestarts, the
stand-in kubelet's own log, the sampler timer's state), never what the playbook says about itself. The fleet's
settings (fleets.NOISE_TOLERANT) make every node's decision an increase, so a run that rolled would restart each.
"""

from __future__ import annotations

import hashlib
import time

from helpers.rollout import CONFIG, output_tail, run_playbook, starts_since
from nodes import nodeio

DROP_IN_DIR = '/etc/kubernetes/kubelet.conf.d'  # the stand-in kubelet's --config-dir (testnodes.KUBELET_UNIT)


def kubelet_state(node):
    """What a write or a restart would change: the config's and every drop-in's bytes, MainPID and NRestarts."""
    files = {CONFIG: hashlib.sha256(nodeio.read_bytes(node, CONFIG)).hexdigest()}
    for name in nodeio.listdir(node, DROP_IN_DIR):
        path = '%s/%s' % (DROP_IN_DIR, name)
        files[path] = hashlib.sha256(nodeio.read_bytes(node, path) or b'').hexdigest()
    shown = nodeio.ssh(node, 'systemctl show -p MainPID -p NRestarts kubelet.service').stdout.split()
    unit = dict(line.split('=', 1) for line in shown)
    assert int(unit['MainPID']) > 0, (node['name'], unit)  # a kubelet runs: an unchanged 0 would prove nothing
    return {'files': files, 'MainPID': unit['MainPID'], 'NRestarts': unit['NRestarts']}


def timer_active(node):
    return nodeio.ssh(node, 'systemctl is-active nodealloc-sampler.timer', check=False).stdout.strip()


def test_observe_and_apply_measure_only_leave_every_kubelet_untouched(fresh_fleet):
    nodes = fresh_fleet['nodes']
    before = {node['name']: kubelet_state(node) for node in nodes}
    assert all(timer_active(node) != 'active' for node in nodes)  # reset: no sampler yet
    mark = time.time()

    observed = run_playbook(fresh_fleet, 'playbooks/observe.yml')
    assert observed.returncode == 0, output_tail(observed)
    for node in nodes:
        assert kubelet_state(node) == before[node['name']], node['name']
        assert starts_since(node, mark) == [], node['name']  # the stand-in's own log: no start since the run began
        assert timer_active(node) == 'active', node['name']

    refused = run_playbook(fresh_fleet, 'playbooks/apply.yml', '-ereservations_measure_only=true')
    assert refused.returncode == 2, output_tail(refused)
    assert 'reservations_measure_only was removed' in refused.stdout, output_tail(refused)
    for node in nodes:
        assert kubelet_state(node) == before[node['name']], node['name']
        assert starts_since(node, mark) == [], node['name']
        assert timer_active(node) == 'active', node['name']
