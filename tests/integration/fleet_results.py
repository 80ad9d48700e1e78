"""A fleet of node_reservation_facts results made from results recorded on a real machine.

``fixtures/node_reservation_facts_results.json`` holds three results of the module recorded here (no kubelet
config; a KubeletConfiguration with reservations and five history readings; an unparseable config, the failed
result). Each host gets a copy of one of them whose measured memory, CPU, current reservations and history are
varied deterministically from its index, and whose recommendation and decision are computed again from the
varied inputs with the module's own code (``_history_stats.summarize``, ``_recommend.recommend``,
``_decision.decide``, ``_vendor_formulas.all_formulas``), so every result keeps the module's shape and is
self-consistent. Hosts come in three node classes (the recorded 24 GiB / 2 CPUs, a third of it, and 8/3 of it
with 8 CPUs). One host in 50 failed (the recorded failure), one in 50 is unreachable (no registered result, as
``recommend.yml`` passes it) and one in 50 runs no kubelet (the recording made without one); the other hosts
without reservations run a kubelet whose config sets none.
"""

from __future__ import annotations

import copy
import json
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity, _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (
    _decision, _headroom, _history_stats, _recommend)

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024
RESERVATIONS = [None, ('100m', '256Mi', '256Mi'), ('200m', '512Mi', '512Mi'), ('500m', '1Gi', '1Gi'),
                ('80m', '900Mi', '100Mi')]
HISTORY_STEP_SECONDS = 300
# (memory as a fraction of the recorded MemTotal, CPUs): the node classes of the fleet, by host index.
NODE_CLASSES = ((1.0, 2), (1 / 3.0, 2), (8 / 3.0, 8))


def recorded():
    with open(os.path.join(HERE, 'fixtures', 'node_reservation_facts_results.json')) as handle:
        return json.load(handle)


def _current(template, choice):
    if template is None:
        return None
    current = copy.deepcopy(template)
    if choice is None:
        # A kubelet whose config reserves nothing.
        current['kube_reserved'], current['system_reserved'] = {}, {}
        return current
    cpu, kube_memory, system_memory = choice
    current['kube_reserved'] = {'cpu': cpu, 'memory': kube_memory}
    current['system_reserved'] = {'memory': system_memory}
    return current


def node_result(index, base):
    """Host ``index``'s result: the recorded ``base`` with index-derived usage, reservations and history."""
    result = copy.deepcopy(base)
    memory, cpu = result['memory'], result['cpu']
    fraction, cpus = NODE_CLASSES[index % len(NODE_CLASSES)]
    memory['mem_total_bytes'] = int(memory['mem_total_bytes'] * fraction)
    cpu['capacity_millicores'] = cpus * 1000
    result['capacity'] = {'memory': _quantity.format_memory(memory['mem_total_bytes']), 'cpu': str(cpus)}
    result['formulas'] = _vendor_formulas.all_formulas(memory['mem_total_bytes'], cpus)
    non_pod = int(base['memory']['non_pod_bytes'] * (0.4 + (index * 37 % 100) / 40.0))
    pods = int(memory['mem_total_bytes'] * (index * 13 % 50) / 100.0)
    memory.update(kubepods_working_set_bytes=pods, non_pod_bytes=non_pod,
                  mem_available_bytes=memory['mem_total_bytes'] - non_pod - pods)
    cpu['non_pod_millicores'] = min(cpu['capacity_millicores'], 20 + index * 53 % 700)
    choice = RESERVATIONS[index % len(RESERVATIONS)]
    result['current'] = _current(base.get('current'), choice)
    if result['current'] is not None:
        result['kubelet']['config_path'] = '/var/lib/kubelet/config.yaml'
        result['current']['sources'] = ['/var/lib/kubelet/config.yaml']
    # Up to 120 readings (what the module's chart series is downsampled to), five minutes apart.
    readings = 2 + index * 7 % 119
    start = base['history']['series'][-1][0] - readings * HISTORY_STEP_SECONDS
    # The shape over time of the recorded five-reading history, scaled to this host's usage.
    recorded_values = [value for _t, value in recorded()['kubelet_config_and_history']['history']['series']]
    samples = [{'t': start + n * HISTORY_STEP_SECONDS,
                'non_pod_bytes': int(recorded_values[n % len(recorded_values)] * non_pod / max(1, recorded_values[-1])),
                'non_pod_millicores': cpu['non_pod_millicores']} for n in range(readings)]
    samples[-1]['non_pod_bytes'] = non_pod
    basis = _history_stats.summarize(samples, 100.0)
    result['history'].update(samples=len(samples), span_seconds=basis['span_seconds'],
                             series=[[s['t'], s['non_pod_bytes']] for s in samples])
    measured = dict(mem_total_bytes=memory['mem_total_bytes'], mem_available_bytes=memory['mem_available_bytes'],
                    kubepods_working_set_bytes=pods,
                    kube_components_working_set_bytes=memory['kube_components_working_set_bytes'],
                    capacity_millicores=cpu['capacity_millicores'], non_pod_millicores=cpu['non_pod_millicores'],
                    kube_components_millicores=cpu['kube_components_millicores'])
    result['recommendation'] = _recommend.recommend(measured, None, result['current'], basis, result['formulas'])
    result['decision'] = _decision.decide(result['current'], result['recommendation'], None, basis)
    # What the module tells the node's class (its size class), as _gather returns it.
    result['class_record'] = _headroom.class_record(memory['mem_total_bytes'], cpus, _headroom.window_peaks(
        basis, basis['span_seconds'], 86400), result['recommendation'])
    return result


def fleet(count):
    """{host: registered result} for ``count`` hosts."""
    results = recorded()
    fleet_results = {}
    for index in range(count):
        host = 'node%03d.example.net' % index
        if index % 50 == 7:
            fleet_results[host] = copy.deepcopy(results['unparseable_kubelet_config'])
        elif index % 50 == 23:
            fleet_results[host] = {}
        else:
            # The recording made without a kubelet for one host in 50, the one with a kubelet config for the rest.
            fleet_results[host] = node_result(index, results['no_kubelet_config' if index % 50 == 41
                                                             else 'kubelet_config_and_history'])
    return fleet_results
