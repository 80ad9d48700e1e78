"""A fleet of node_reservation_facts results: what the module's own code returns for generated nodes.

Each host is a generated node: its inputs (memory, CPU, the kubelet's configuration with or without reservations,
whether a kubelet and a container runtime run, and a history file of readings) vary deterministically with its index.
Its result is the module's, not recomputed here: ``_gather.gather``, the function node_reservation_facts runs, reads
the host's history file, chooses and summarizes it, recommends, decides and plans; then, as
roles/reservations/tasks/measure.yml does, every node's ``class_record`` is gathered, and each node with peers
(the ``class_peers`` filter) decides again from its own ``basis`` with them (``gather`` with ``basis`` and
``class_peers``). tests/integration/test_fleet_results.py runs the module itself on that basis and compares.

Where the inputs come from. The measurement is what the module's ``measure`` read of a node laid out as files (a
cgroup v2 tree built as tests/unit/fixtures/cgroup_v2.py does, the kubelet config at /var/lib/kubelet/config.yaml),
one per kind of kubelet config, with the directory it was laid out in cut from its paths. What a file tree cannot
hold is then set per host, as a node would show it: its memory (MemTotal, MemAvailable, the pods' working set; the
non-pod figure is the module's own accounting of them, ``_memory_accounting.non_pod_memory``), its CPU, and, on a
node with a kubelet, the kubelet and containerd processes (pid, command line, unit: what ``measure`` finds in /proc
and cannot find in a test). A measurement of the machine the tests run on (pressure, huge pages, the test process
itself) is replaced by fixed values, so the fleet is the same on any machine.

The fleet: three node classes (24 GiB / 2 CPUs as the recording in fixtures/node_reservation_facts_results.json, a
third of it, and 8/3 of it with 8 CPUs); one host in 50 failed (an unparseable kubelet config: the module's own
error), one in 50 unreachable (no registered result, as recommend.yml passes it), one in 50 runs no kubelet (no
process, no config). Of the others, a sixth reserve nothing; two in five are young (a history shorter than the
reaction time, 24 h: held at the cold-start floor) and the rest warm (one to seven days of readings).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import os
import tempfile
import time

from ansible_collections.nodealloc.kubelet.plugins.filter.class_peers import class_peers
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _memory_accounting
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom
from ansible_collections.nodealloc.kubelet.tests.unit.fixtures import cgroup_v2

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024
HOUR_SECONDS = 3600
# (cpu, kubeReserved memory, systemReserved memory) a host's kubelet config sets, by index; None: it sets none.
RESERVATIONS = [None, ('200m', '512Mi', '512Mi'), ('500m', '1Gi', '1Gi'), ('80m', '900Mi', '100Mi'),
                ('250m', '1536Mi', '1Gi'), ('500m', '1536Mi', '1536Mi')]
# (memory as a fraction of the recorded MemTotal, CPUs): the node classes of the fleet, by host index.
NODE_CLASSES = ((1.0, 2), (1 / 3.0, 2), (8 / 3.0, 8))
CONFIG_PATH = '/var/lib/kubelet/config.yaml'
HISTORY_PATH = _option_specs.OPTIONS['history_path']['default']
CGROUP_ROOT = '/sys/fs/cgroup'
# The readings of a generated history: one an hour (the sampler takes one a minute; a coarser history keeps 500
# nodes' worth quick to read, and the policy's daily peaks and percentile are the same kind of figure).
HISTORY_STEP_SECONDS = 3600
# What a pod adds to a node's non-pod memory in the generated histories (the runtime's shim, the kubelet's caches).
PER_POD_BYTES = 12 * MIB
# The options recommend.yml passes at the role's defaults: every other option is the module's default.
OPTIONS = {'kubelet_config_path': CONFIG_PATH, 'sample_seconds': 0, '_check_mode': True,
           'kubelet_process_names': ['no/kubelet'], 'runtime_process_names': ['no/runtime']}
# The low watermark a 24 GiB node's /proc/zoneinfo gives (its sum of zones' "low" pages), for the accounting.
WMARK_LOW_BYTES = 86626304
# Fixed in place of what measure reads of the machine the tests run on.
MACHINE_FREE = {'hugepages_bytes': 0, 'pressure': {'node': {}, 'cgroups': {}, 'note': None}}


def recorded():
    with open(os.path.join(HERE, 'fixtures', 'node_reservation_facts_results.json')) as handle:
        return json.load(handle)


def config_text(choice):
    """The kubelet config a host of reservation ``choice`` has: kubeadm's, with or without reservations."""
    lines = ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'cgroupDriver: systemd']
    if choice is not None:
        cpu, kube_memory, system_memory = choice
        lines += ['kubeReserved:', '  cpu: %s' % cpu, '  memory: %s' % kube_memory,
                  'systemReserved:', '  memory: %s' % system_memory]
    return '\n'.join(lines) + '\n'


UNPARSEABLE_CONFIG = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: [\n'


def _lay_out(root, config):
    """A node as files under ``root``: the cgroup v2 tree (kubepods, system.slice) and the kubelet config (or none)."""
    cgroups = root + CGROUP_ROOT
    cgroup_v2.make_root(cgroups)
    cgroup_v2.make_group(cgroups, 'kubepods.slice', 600 * MIB, 50 * MIB, 300 * MIB)
    cgroup_v2.make_group(cgroups, 'kubepods.slice/kubepods-burstable.slice', 600 * MIB, 50 * MIB, 300 * MIB)
    cgroup_v2.make_group(cgroups, 'system.slice', 200 * MIB, 10 * MIB, 90 * MIB)
    if config is not None:
        cgroup_v2.write(root + CONFIG_PATH, config)
    return dict(OPTIONS, cgroup_root=cgroups, kubelet_config_path=root + CONFIG_PATH,
                drop_in_dir=root + '/etc/kubernetes/kubelet.conf.d', history=False)


@functools.lru_cache(maxsize=None)
def measured_layout(choice, kubelet_config=True):
    """(measurement as JSON text, or the module's error) of a node of config ``choice``, measured by the module's
    ``measure``; the directory the node was laid out in cut from every path in it."""
    with tempfile.TemporaryDirectory() as root:
        if choice == 'unparseable':
            options = _lay_out(root, UNPARSEABLE_CONFIG)
        else:
            options = _lay_out(root, config_text(choice) if kubelet_config else None)
        try:
            measurement = _gather.measure(_gather.with_defaults(options), sleep=lambda _seconds: None)
        except (NodeallocError, ValueError) as exc:  # what node_reservation_facts fails with
            return None, str(exc).replace(root, '')
        measurement.update(copy.deepcopy(MACHINE_FREE))
        return json.dumps(measurement).replace(root, ''), None


def _processes(index):
    """The kubelet and containerd a node with a kubelet runs: what measure finds in /proc."""
    return {'kubelet': {'pid': 1000 + index, 'argv': ['/usr/bin/kubelet', '--config=%s' % CONFIG_PATH],
                        'config_path': CONFIG_PATH, 'config_found_by': 'running kubelet command line',
                        'unit': 'kubelet.service'},
            'components': [{'pid': 900 + index, 'program': 'containerd'}, {'pid': 1000 + index, 'program': 'kubelet'}]}


def node_inputs(index):
    """Host ``index``'s generated inputs: {kind, choice, mem_total_bytes, cpus, pods_bytes, pods, non_pod_bytes,
    non_pod_millicores, kube_components_bytes, kube_components_millicores, history_hours}."""
    base = recorded()['kubelet_config_and_history']['memory']
    fraction, cpus = NODE_CLASSES[index % len(NODE_CLASSES)]
    mem_total = int(base['mem_total_bytes'] * fraction)
    kind = {7: 'failed', 23: 'unreachable', 41: 'no_kubelet'}.get(index % 50, 'kubelet')
    # Larger nodes run more of their own (more CPUs, more daemons' caches): the recorded figure, somewhat by size.
    non_pod = int(base['non_pod_bytes'] * (0.6 + 0.4 * fraction ** 0.5) * (0.4 + (index * 37 % 100) / 40.0))
    non_pod_millicores = min(cpus * 1000, 20 + index * 53 % 700)
    # Two in five young (1 to 23 h of history: below the reaction time), the others warm (25 h to 7 days).
    young = index * 7 % 5 < 2
    history_hours = 1 + index * 11 % 23 if young else 25 + index * 13 % 143
    return {'kind': kind, 'choice': RESERVATIONS[index % len(RESERVATIONS)], 'mem_total_bytes': mem_total,
            'cpus': cpus, 'pods_bytes': int(mem_total * (index * 13 % 50) / 100.0), 'non_pod_bytes': non_pod,
            # Pods now (the pod cgroups the module counts): 4 to 53, by index; the history varies about it.
            'pods': 4 + index * 13 % 50,
            'non_pod_millicores': non_pod_millicores,
            'kube_components_bytes': int(non_pod * 0.3) if kind == 'kubelet' else 0,
            'kube_components_millicores': non_pod_millicores // 3 if kind == 'kubelet' else 0,
            'history_hours': history_hours}


def node_measurement(index, inputs):
    """What ``measure`` returns on host ``index``: its layout's measurement with the host's own readings."""
    text, _error = measured_layout(inputs['choice'], inputs['kind'] == 'kubelet')
    measurement = json.loads(text)
    memory, cpu = measurement['memory'], measurement['cpu']
    total, pods, non_pod = inputs['mem_total_bytes'], inputs['pods_bytes'], inputs['non_pod_bytes']
    kubepods = dict(memory['kubepods'], working_set_bytes=pods, usage_bytes=pods + memory['kubepods']['inactive_file_bytes'],
                    active_file_bytes=0, slab_reclaimable_bytes=0)
    meminfo = {'MemTotal': total, 'MemAvailable': total - non_pod - pods}
    accounting = _memory_accounting.non_pod_memory(meminfo, kubepods, WMARK_LOW_BYTES)
    memory.update(mem_total_bytes=total, mem_available_bytes=meminfo['MemAvailable'], kubepods_working_set_bytes=pods,
                  kubepods=kubepods, non_pod_bytes=accounting['bytes'], non_pod_poc_bytes=accounting['poc_bytes'],
                  non_pod_accounting=accounting, kube_components_working_set_bytes=inputs['kube_components_bytes'],
                  measurement_tool={'bytes': 0, 'processes': [], 'note': None, 'left_out_bytes': 0})
    cpu.update(capacity_millicores=inputs['cpus'] * 1000, non_pod_millicores=inputs['non_pod_millicores'],
               node_busy_millicores=inputs['non_pod_millicores'],
               kube_components_millicores=inputs['kube_components_millicores'], sample_seconds=5.0)
    measurement['capacity'] = {'memory': _quantity.format_memory(total), 'cpu': _quantity.format_cpu(inputs['cpus'] * 1000)}
    measurement['pods'] = inputs['pods']
    if inputs['kind'] == 'kubelet':
        processes = _processes(index)
        measurement['kubelet'].update(processes['kubelet'])
        measurement['components'] = processes['components']
        measurement['memory']['kube_components']['rss_bytes'] = inputs['kube_components_bytes']
        # What measure says it did not find, less the processes a node with a kubelet runs.
        measurement['not_found'] = [line for line in measurement['not_found'] if not line.startswith(
            ('no running kubelet process', 'no kubelet or container runtime processes', 'no kubelet binary'))]
    return measurement


def history_lines(index, inputs, now):
    """The host's history file: one JSON reading per line as the sampler writes them, oldest first, ending before
    ``now`` (the module's own reading is the newest). Warm nodes' non-pod memory rises once a day (a daily job).
    Each line carries ``pods``: a third above and below the node's pods now over the day, its non-pod memory
    ``PER_POD_BYTES`` a pod above or below the shape's (issue 45: the class model fits that slope)."""
    shape = [value for _t, value in recorded()['kubelet_config_and_history']['history']['series']]
    readings = int(inputs['history_hours'] * HOUR_SECONDS / HISTORY_STEP_SECONDS)
    lines = []
    for n in range(readings):
        t = now - (readings - n) * HISTORY_STEP_SECONDS
        value = shape[(n + index) % len(shape)] * inputs['non_pod_bytes'] / shape[-1]
        if (n * HISTORY_STEP_SECONDS) % 86400 < HISTORY_STEP_SECONDS and n:  # the daily job
            value *= 1.0 + (index % 9) / 20.0
        pods = max(0, int(round(inputs['pods'] * (1 + math.sin(2 * math.pi * (n * HISTORY_STEP_SECONDS % 86400) / 86400.0) / 3.0))))
        value += PER_POD_BYTES * (pods - inputs['pods'])
        value = max(0, min(int(value), inputs['mem_total_bytes'] - inputs['pods_bytes']))
        lines.append(json.dumps({'t': t, 'non_pod_bytes': value, 'non_pod_millicores': inputs['non_pod_millicores'],
                                 'pods': pods, 'source': 'sampler'}) + '\n')
    return ''.join(lines)


def host_name(index):
    return 'node%03d.example.net' % index


@contextlib.contextmanager
def _measured_as(measurement):
    """``_gather.measure`` answering ``measurement``: the one step of the module a test cannot run on a generated
    node; everything after it is the module's."""
    measure = _gather.measure
    _gather.measure = lambda options, proc_root='/proc', sleep=None: measurement
    try:
        yield
    finally:
        _gather.measure = measure


def first_call(options):
    """node_reservation_facts' result (or its failure) for ``options``, as the module's main() makes it in check mode."""
    try:
        facts = _gather.gather(options)
    except (NodeallocError, ValueError) as exc:
        return {'failed': True, 'msg': str(exc)}
    return dict(facts, changed=False)


def _build(count):
    """({host: result}, {host: the class peers its result was decided with, or None})."""
    results, host_options, peers_used = {}, {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        # Each host's history file in turn, read by its call: the module's default name, in a directory of ours.
        path = os.path.join(scratch, os.path.basename(HISTORY_PATH))
        now = time.time()
        for index in range(count):
            host, inputs = host_name(index), node_inputs(index)
            if inputs['kind'] == 'unreachable':
                results[host] = {}
                continue
            if inputs['kind'] == 'failed':
                results[host] = {'failed': True, 'msg': measured_layout('unparseable')[1]}
                continue
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(history_lines(index, inputs, now))
            host_options[host] = dict(OPTIONS, history_path=path)
            with _measured_as(node_measurement(index, inputs)):
                results[host] = _on_node(first_call(host_options[host]), scratch)
    # Pooling over the class, as measure.yml: the records of every node measured, then a second call from the basis.
    records = {host: result['class_record'] for host, result in results.items() if result.get('class_record')}
    # The filter keeps the records of the host's own class: given only those, the same peers in the same order, in a
    # third of the time (each host's call reads every record).
    by_class = {}
    for host, record in records.items():
        by_class.setdefault(_headroom.class_key(record), {})[host] = record
    for host, options in host_options.items():
        peers = class_peers(by_class.get(_headroom.class_key(records.get(host)), {}), host)
        if peers:
            results[host] = first_call(pooled_options(options, results[host], peers))  # from the basis: no file read
            peers_used[host] = peers
    return results, peers_used


def _on_node(result, scratch):
    """``result`` with the directory the host's history was read from put where the module reads it (the plan's state
    files sit beside the history): the paths as on the node. Only the history and the plan name it."""
    def moved(value):
        if isinstance(value, str):
            return value.replace(scratch, os.path.dirname(HISTORY_PATH))
        if isinstance(value, dict):
            return {key: moved(item) for key, item in value.items()}
        if isinstance(value, list):
            return [moved(item) for item in value]
        return value
    if result.get('basis'):
        result['basis']['history'] = moved(result['basis']['history'])
    result.update({key: moved(result[key]) for key in ('history', 'plan') if key in result})
    return result


def pooled_options(options, first, peers):
    """The options of measure.yml's second call ("Decide again with the node's class"): the first call's basis."""
    return dict(options, history_path=HISTORY_PATH, basis=first['basis'], class_peers=peers)


@functools.lru_cache(maxsize=4)
def _fleet_text(count):
    results, peers_used = _build(count)
    return json.dumps(results), json.dumps(peers_used)


def fleet(count):
    """{host: registered result} for ``count`` hosts (built once per process and size; each call a fresh copy)."""
    return json.loads(_fleet_text(count)[0])


def module_args(count):
    """{host: node_reservation_facts' arguments that return its result}, for each measured host: the options, its
    basis (what its first call measured and read) and, where its class changed its decision, the class peers."""
    results, peers_used = fleet(count), json.loads(_fleet_text(count)[1])
    args = {}
    for host, result in results.items():
        if result.get('basis'):
            args[host] = {key: value for key, value in OPTIONS.items() if not key.startswith('_')}
            args[host].update(basis=result['basis'], class_peers=peers_used.get(host) or [])
    return args


def fleet_inputs(count):
    """{host: node_inputs} for ``count`` hosts: what each generated node was made of."""
    return {host_name(index): node_inputs(index) for index in range(count)}
