"""A stand-in kubelet for the multi-node tests: a real long-running process, run by systemd as kubelet.service.

No kubelet binary can be installed here, so this program does, with the same
inputs and outputs, the parts of the kubelet's start-up that nodealloc.kubelet
depends on:

Every piece of kubelet logic it needs is its own, in kubelet_logic/ beside this file (installed as
/usr/bin/kubelet_logic/ on a node), written from the kubelet's source and importing nothing from the
collection; tests/unit/test_standin_parity.py feeds the same upstream test rows to it and to the
collection's module_utils. Each module cites what it mirrors:

* Command line: ``--config``, ``--config-dir`` and ``--kubeconfig`` (cmd/kubelet/app/options/options.go);
  other flags are accepted and ignored. ``--version`` prints "Kubernetes <git version>" and exits, as
  component-base's verflag does; the version is the first line of /etc/kubelet-standin/version (a node's
  "installed kubelet": change it and the next start is that version), else kubelet_logic/version.py's default.
* kubelet_logic/version.py, what depends on that version: the failCgroupV1 default (true from 1.35, KEP-5573)
  and validation_linux.go's refusal of it on a cgroup v1 host, the compressible enforcement keys (1.32), and
  memoryReservationPolicy (1.36: None or TieredReservation, the latter only with the MemoryQoS gate; KEP-2570).
  With MemoryQoS on, an enforced system-reserved/kube-reserved group on cgroup v2 also gets memory.min = its
  memory reservation (node_container_manager_linux.go ``enforceExistingCgroup``).
* kubelet_logic/config.py, config decoding and drop-ins (pkg/kubelet/kubeletconfig/util/codec/codec.go
  ``DecodeKubeletConfiguration``; cmd/kubelet/app/server.go ``mergeKubeletConfigurations``): YAML or
  JSON; ``apiVersion: kubelet.config.k8s.io/v1beta1`` and ``kind: KubeletConfiguration`` required; an
  unknown field logs "Using lenient decoding as strict decoding failed" and start-up goes on (the known
  fields are kubelet_config_v1beta1_fields.txt, from k8s.io/kubelet config/v1beta1/types.go); a field
  of the wrong type stops it; every ``*.conf`` under ``--config-dir`` in lexical order, merged with a
  JSON merge patch (RFC 7386).
* kubelet_logic/validation.py, the refusals that stop start-up, in the kubelet's order:
  ``ValidateKubeletConfiguration`` (pkg/kubelet/apis/config/validation/validation.go: systemCgroups
  without cgroupRoot, enforceNodeAllocatable keys, duplicates, ``none`` with others, a ``*-reserved``
  key without its cgroup, cgroupsPerQOS, reservedSystemCPUs with a reserved cgroup or unparsable);
  server.go ``parseResourceList`` for kubeReserved/systemReserved.
* kubelet_logic/eviction.py: pkg/kubelet/eviction/helpers.go ``ParseThresholdConfig`` (``0%`` and
  ``100%`` disable a threshold, so a soft one needs no grace period) and api/types.go
  ``GetThresholdQuantity``; the v1beta1 default evictionHard when the config sets none;
* kubelet_logic/allocatable.py: node_container_manager_linux.go ``validateNodeAllocatable``
  (reservations above capacity stop the container manager), ``getNodeAllocatableAbsoluteImpl`` and
  ``getCgroupConfigInternal`` (the kubepods memory limit is capacity - kubeReserved - systemReserved,
  eviction not subtracted; its cpu shares helpers_linux.go ``MilliCPUToShares`` of the same for CPU;
  on v2 ``memory.max`` and ``cpu.weight``), nodestatus/setters.go ``MachineInfo`` for status.allocatable;
* Node allocatable enforcement (node_container_manager_linux.go ``enforceNodeAllocatableCgroups``):
  the kubepods cgroup (``kubepods.slice`` with the systemd driver, ``kubepods`` with cgroupfs) and its
  QoS children are created and limited; a write the kernel refuses is retried, as the kubelet retries.
  Enforcing kube-reserved/system-reserved (``enforceExistingCgroup``) with an empty reservation or on a
  cgroup that does not exist stops start-up ("Failed to start ContainerManager"); otherwise their
  memory limit and cpu shares are written to that cgroup.
* kubelet_logic/machine.py: capacity as cAdvisor reads it (MemTotal, huge pages, CPUs) and the cgroup
  hierarchies as opencontainers/cgroups finds them.
* ``/healthz`` on ``healthzBindAddress:healthzPort`` (default 127.0.0.1:10248)
  answering ``ok`` (pkg/kubelet/server/server.go, healthz.InstallHandler).
* Node status (pkg/kubelet/kubelet_node_status.go, nodestatus/setters.go): when ``--kubeconfig``
  names an API server, ``status.capacity``, ``status.allocatable`` (capacity minus reservations
  minus hard eviction minus huge pages) and the ``Ready`` condition (true once healthy) are PUT to
  ``/api/v1/nodes/<hostname>/status``, and again whenever readiness changes.

It also does what a real node's systemd would have done for the kubelet but
cannot here (the controllers are read-only when the node's systemd starts):
it moves itself into ``system.slice/kubelet.service`` in the memory, cpu and
cpuacct hierarchies.

Fault switches, read from /etc/kubelet-standin/faults.json at start-up (keys
optional): ``refuse_config_containing`` (a string: refuse a config whose merged
JSON contains it), ``refuse_config_lacking`` (a string: refuse a config whose merged
JSON does not contain it, e.g. the reservations it runs with now), ``die_after_seconds``, ``never_healthy``,
``healthy_after_seconds`` (slow to become healthy), ``hang_on_stop`` (ignore
SIGTERM, so systemd has to kill it), ``no_node_status`` (healthy on /healthz, but its Node in the API server is
never updated: the status updates of a kubelet whose client certificate expired or whose route to the API server
is cut).

Every event is appended as a JSON line to /var/log/kubelet-standin.log
(start, refused, cgroup, reserved-cgroup, healthy, node-status, stop), which the tests read to prove the
order of restarts across nodes.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request

import yaml

# The stand-in's own kubelet logic (tests/standin/kubelet_logic/), next to this file on the host and on a
# node (/usr/bin/kubelet_logic/). It shares no code with the collection.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubelet_logic import allocatable, config as kubelet_config, eviction, machine, validation  # noqa: E402
from kubelet_logic import resource_managers  # noqa: E402
from kubelet_logic import version as kubelet_version  # noqa: E402

LOG_PATH = os.environ.get('STANDIN_LOG', '/var/log/kubelet-standin.log')
FAULTS_PATH = os.environ.get('STANDIN_FAULTS', '/etc/kubelet-standin/faults.json')
VERSION_PATH = os.environ.get('STANDIN_VERSION', '/etc/kubelet-standin/version')
FIELDS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kubelet_config_v1beta1_fields.txt')
RETRY_SECONDS = 5.0


def log(event, **fields):
    record = dict(time=time.time(), pid=os.getpid(), event=event, **fields)
    line = json.dumps(record, sort_keys=True)
    with open(LOG_PATH, 'a', encoding='utf-8') as handle:
        handle.write(line + '\n')
    print(line, flush=True)


class StartupError(Exception):
    pass


def known_fields():
    with open(FIELDS_PATH, encoding='utf-8') as handle:
        return {line.strip() for line in handle if line.strip() and not line.startswith('#')}


def git_version():
    """The version this stand-in is: the node's version file, else the default."""
    try:
        with open(VERSION_PATH, encoding='utf-8') as handle:
            text = handle.readline().strip()
    except OSError:
        text = ''
    return text or kubelet_version.DEFAULT_GIT_VERSION


def flag_value(argv, name):
    """The value of ``--name=value`` or ``--name value`` (the last one wins, as with pflag)."""
    value = None
    for index, arg in enumerate(argv):
        if arg.startswith(name + '='):
            value = arg.split('=', 1)[1]
        elif arg == name:
            value = argv[index + 1] if index + 1 < len(argv) else ''
    return value


def load(argv):
    config_path = flag_value(argv, '--config')
    if not config_path:
        raise StartupError('--config is required by this stand-in')
    try:
        return kubelet_config.load(config_path, flag_value(argv, '--config-dir'), known_fields(), log)
    except kubelet_config.ConfigError as exc:
        raise StartupError(str(exc))


def start_up(config, version=None, cgroup_v1=False, numa_nodes=None, online_cpus=None):
    """The kubelet's start-up checks, in its order; returns what it derives, or raises StartupError.

    Defaulting (the version's failCgroupV1), ValidateKubeletConfiguration (validation.go, with
    validateKubeletOSConfiguration of validation_linux.go at its end), then in server.go run(): parseResourceList
    of kubeReserved/systemReserved and ParseThresholdConfig, then NewContainerManager's validateNodeAllocatable and
    its CPU and memory managers (kubelet_logic/resource_managers.py; ``numa_nodes`` and ``online_cpus`` are the
    machine's, None where unknown).
    """
    version = version or kubelet_version.parse(kubelet_version.DEFAULT_GIT_VERSION)
    gate_errors = kubelet_version.feature_gate_errors(config, version)
    if gate_errors:
        # server.go sets the feature gates before it validates the config: an unknown gate ends the start there.
        raise StartupError(gate_errors[0])
    config = kubelet_version.defaults(config, version)
    errors = validation.validate_configuration(config) + kubelet_version.legacy_enforcement_errors(config, version)
    errors += kubelet_version.memory_reservation_errors(config, version)
    errors += kubelet_version.memory_throttling_errors(config, version)
    errors += resource_managers.reserved_memory_errors(config)
    errors += kubelet_version.os_errors(config, cgroup_v1)
    if errors:
        # server.go: "failed to validate kubelet configuration, error: <aggregate>"
        raise StartupError('failed to validate kubelet configuration, error: [%s]' % ', '.join(errors))
    try:
        kube_reserved = validation.parse_resource_list(config.get('kubeReserved'))
        system_reserved = validation.parse_resource_list(config.get('systemReserved'))
        _cpus, kube_reserved, system_reserved = resource_managers.overwrite_reserved_cpus(
            config, kube_reserved, system_reserved, online_cpus, validation.parse_cpuset)
        enforce = config.get('enforceNodeAllocatable', validation.DEFAULT_ENFORCE_NODE_ALLOCATABLE)
        hard = eviction.parse_threshold_config([], eviction.effective_eviction_hard(config), None, None, None)
        eviction.parse_threshold_config(enforce, eviction.effective_eviction_hard(config), config.get('evictionSoft'),
                                        config.get('evictionSoftGracePeriod'), config.get('evictionMinimumReclaim'))
        derived = allocatable.compute(machine.meminfo_total_bytes(), (os.cpu_count() or 1) * 1000, kube_reserved,
                                      system_reserved, hard, enforce, machine.hugepages_bytes())
        resource_managers.start_managers(config, resource_managers.node_allocatable_reservation(
            kube_reserved, system_reserved, hard, machine.meminfo_total_bytes()), numa_nodes)
    except (validation.ValidationError, eviction.EvictionError, allocatable.AllocatableError,
            resource_managers.ManagerError) as exc:
        raise StartupError(str(exc))
    return derived, kube_reserved, system_reserved


def hierarchy_roots(layout):
    """The hierarchies the kubelet's cgroup manager creates its groups in (memory, cpu, cpuacct; one on v2)."""
    return sorted({layout.memory_root, layout.cpu_root, layout.cpuacct_root})


def move_self_into(layout, relative):
    for root in hierarchy_roots(layout):
        if not os.path.isdir(root):
            continue
        directory = os.path.join(root, relative)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, 'cgroup.procs'), 'w', encoding='utf-8') as handle:
            handle.write(str(os.getpid()))


def write_limits(layout, relative, memory_limit, cpu_shares):
    """cgroupManager.Update of memory and cpu (cgroup v1 files, or v2 memory.max and cpu.weight)."""
    if layout.version == 'v1':
        if memory_limit is not None:
            with open(os.path.join(layout.memory_root, relative, 'memory.limit_in_bytes'), 'w') as handle:
                handle.write(str(memory_limit))
        if cpu_shares is not None:
            with open(os.path.join(layout.cpu_root, relative, 'cpu.shares'), 'w') as handle:
                handle.write(str(cpu_shares))
    else:
        if memory_limit is not None:
            with open(os.path.join(layout.memory_root, relative, 'memory.max'), 'w') as handle:
                handle.write(str(memory_limit))
        if cpu_shares is not None:
            with open(os.path.join(layout.memory_root, relative, 'cpu.weight'), 'w') as handle:
                handle.write(str(allocatable.cpu_shares_to_weight(cpu_shares)))


def write_memory_min(layout, relative, memory_min):
    """enforceExistingCgroup's MemoryQoS part: the reserved group's memory.min (cgroup v2 only)."""
    with open(os.path.join(layout.memory_root, relative, 'memory.min'), 'w') as handle:
        handle.write(str(memory_min))


def enforce_reserved(config, layout, kube_reserved, system_reserved, memory_qos=False):
    """enforceNodeAllocatableCgroups' kube-reserved/system-reserved part; raises StartupError as the kubelet exits."""
    roots = [layout.memory_root] if layout.version == 'v2' else [layout.memory_root, layout.cpu_root]
    message = validation.enforce_reserved_cgroups(config, kube_reserved, system_reserved,
                                                  validation.cgroup_exists_under(roots))
    if message:
        raise StartupError('Failed to start ContainerManager: %s' % message)
    enforce = config.get('enforceNodeAllocatable', validation.DEFAULT_ENFORCE_NODE_ALLOCATABLE)
    driver = config.get('cgroupDriver', 'cgroupfs')
    for key, field, resources in (('system-reserved', 'systemReservedCgroup', system_reserved),
                                  ('kube-reserved', 'kubeReservedCgroup', kube_reserved),
                                  ('system-reserved-compressible', 'systemReservedCgroup', system_reserved),
                                  ('kube-reserved-compressible', 'kubeReservedCgroup', kube_reserved)):
        if key not in enforce:
            continue
        relative = validation.cgroup_path(config[field], driver)
        memory = None if key.endswith('compressible') else (
            allocatable.reserved(resources, 'memory') if 'memory' in resources else None)
        shares = allocatable.milli_cpu_to_shares(allocatable.reserved(resources, 'cpu')) if 'cpu' in resources else None
        try:
            write_limits(layout, relative, memory, shares)
            if memory is not None and memory_qos and layout.version == 'v2':
                write_memory_min(layout, relative, memory)
        except OSError as exc:
            raise StartupError('Failed to start ContainerManager: Failed to enforce %s Cgroup Limits on "%s": %s'
                               % (key, config[field], exc))
        log('reserved-cgroup', enforcement=key, cgroup=config[field], memory_limit_bytes=memory, cpu_shares=shares,
            memory_min_bytes=memory if memory is not None and memory_qos and layout.version == 'v2' else None)


def write_kubepods(layout, name, memory_limit, cpu_shares):
    """Create kubepods and its QoS children; set its limits. Returns None or the error to retry on."""
    qos = ('kubepods-burstable.slice', 'kubepods-besteffort.slice') if name.endswith('.slice') \
        else ('burstable', 'besteffort')
    # The kubelet's cgroup manager creates its groups in every mounted hierarchy it uses.
    for root in hierarchy_roots(layout):
        for child in ('',) + qos:
            os.makedirs(os.path.join(root, name, child), exist_ok=True)
    try:
        write_limits(layout, name, memory_limit, cpu_shares)
    except OSError as exc:
        return exc
    return None


class Health:
    def __init__(self, faults):
        self.started = time.monotonic()
        self.never = bool(faults.get('never_healthy'))
        self.after = float(faults.get('healthy_after_seconds') or 0)
        self.reported = False

    def ok(self):
        if self.never or time.monotonic() - self.started < self.after:
            return False
        if not self.reported:
            self.reported = True
            log('healthy')
        return True


def serve_healthz(address, port, health):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path != '/healthz':
                self.send_error(404)
                return
            healthy = health.ok()
            body = b'ok' if healthy else b'[-]standin not ready'
            self.send_response(200 if healthy else 500)
            self.send_header('Content-Type', 'text/plain; charset=utf-8')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def api_server(argv):
    """The API server URL in the kubeconfig named by --kubeconfig, or None."""
    try:
        with open(flag_value(argv, '--kubeconfig'), encoding='utf-8') as handle:
            kubeconfig = yaml.safe_load(handle)
        return kubeconfig['clusters'][0]['cluster']['server'].rstrip('/')
    except (TypeError, OSError, KeyError, IndexError, yaml.YAMLError):
        return None


def report_node_status(server, node_name, derived, ready):
    capacity, allocatable_now = allocatable.status_quantities(derived)
    node = {
        'kind': 'Node', 'apiVersion': 'v1', 'metadata': {'name': node_name},
        'status': {
            'capacity': capacity,
            'allocatable': allocatable_now,
            'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False',
                            'reason': 'KubeletReady' if ready else 'KubeletNotReady'}],
        },
    }
    request = urllib.request.Request('%s/api/v1/nodes/%s/status' % (server, node_name),
                                     data=json.dumps(node).encode('utf-8'), method='PUT',
                                     headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(request, timeout=5):
            log('node-status', ready=ready, allocatable=node['status']['allocatable'])
    except (OSError, ValueError) as exc:
        log('node-status-failed', error=str(exc))


def main(argv):
    if '--version' in argv:
        print('Kubernetes %s' % git_version(), flush=True)
        return 0
    faults = {}
    if os.path.exists(FAULTS_PATH):
        with open(FAULTS_PATH, encoding='utf-8') as handle:
            faults = json.load(handle)
    stop = threading.Event()

    def on_term(_signum, _frame):
        if faults.get('hang_on_stop'):
            log('stop-ignored')
            return
        log('stop')
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    try:
        config, sources = load(argv)
        merged_json = json.dumps(config, sort_keys=True)
        needle = faults.get('refuse_config_containing')
        if needle and needle in merged_json:
            raise StartupError('refused by fault switch: config contains %r' % needle)
        wanted = faults.get('refuse_config_lacking')
        if wanted and wanted not in merged_json:
            raise StartupError('refused by fault switch: config lacks %r' % wanted)
        try:
            layout = machine.cgroup_layout()
        except (OSError, ValueError) as exc:
            raise StartupError('failed to find the cgroup hierarchies: %s' % exc)
        try:
            version = kubelet_version.parse(git_version())
        except kubelet_version.VersionError as exc:
            raise StartupError(str(exc))
        derived, kube_reserved, system_reserved = start_up(
            config, version, layout.version == 'v1', machine.numa_node_ids(),
            machine.online_cpus(parse_cpuset=validation.parse_cpuset))
        move_self_into(layout, 'system.slice/kubelet.service')
        enforce_reserved(config, layout, kube_reserved, system_reserved, kubelet_version.memory_qos(config, version))
    except StartupError as exc:
        log('refused', error=str(exc))
        return 1

    kubepods = 'kubepods.slice' if config.get('cgroupDriver') == 'systemd' else 'kubepods'
    memory_limit, cpu_shares = derived['kubepods_memory_limit_bytes'], derived['kubepods_cpu_shares']
    api_url = api_server(argv)
    reported_ready = None
    log('start', version=git_version(), sources=sources, kube_reserved=config.get('kubeReserved') or {},
        system_reserved=config.get('systemReserved') or {}, kubepods=kubepods,
        kubepods_memory_limit_bytes=memory_limit, kubepods_cpu_shares=cpu_shares)

    health = Health(faults)
    port = int(config.get('healthzPort', 10248))
    server = serve_healthz(config.get('healthzBindAddress', '127.0.0.1'), port, health) if port else None

    die_at = time.monotonic() + float(faults['die_after_seconds']) if faults.get('die_after_seconds') else None
    pending = True
    while not stop.is_set():
        if pending:
            error = write_kubepods(layout, kubepods, memory_limit, cpu_shares)
            if error is None:
                pending = False
                log('cgroup', kubepods=kubepods, memory_limit_bytes=memory_limit, cpu_shares=cpu_shares)
            else:
                log('cgroup-retry', error=str(error))
        if api_url and not pending and not faults.get('no_node_status'):
            ready = health.ok()
            if ready != reported_ready:
                report_node_status(api_url, socket.gethostname(), derived, ready)
                reported_ready = ready
        if die_at is not None and time.monotonic() >= die_at:
            log('died', reason='die_after_seconds fault')
            os._exit(1)
        stop.wait(0.5 if not pending else RETRY_SECONDS)
    if server:
        server.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
