# Private to nodealloc.kubelet: not a public API, may change without notice.
"""One sampler run: measure, record, write the node_exporter textfile. No policy, no kubelet config.

Cost stays flat as the history grows: the run never re-reads the history. A small state file
keeps what the metrics need from the past:

* the CPU counters of the previous run (``_measure.cpu_snapshot``), so CPU is measured over the
  whole timer period without sleeping (the first run, or one after a reboot, samples
  ``sample_seconds`` instead), and the previous run's own CPU time at its snapshot and at its end,
  so that the sampler's own CPU is left out of non-pod CPU (``own_cpu_ns`` says why);
* a per-hour histogram of non-pod memory (1 MiB buckets) and CPU (1 millicore buckets) over the
  history window and their running totals (an hour leaving the window is subtracted), for the
  policy's percentile (nearest rank over buckets, so at most 1 MiB above
  the exact figure from the samples). Each hour is kept packed in one string
  (``"bucket:count,...;bucket:count,..."``, memory then CPU) and unpacked only when a run adds to
  it or prunes it: a run then parses one hour, not the whole window (held as nested JSON, the
  week's 168 hours were parsed and written back by every run, a cost that grew with the history
  up to the window);
* the inode and size of the history already counted: lines other writers appended since (the
  module with ``record``) are read from there, each validated as the module validates it. Without
  a state file (first run, or deleted by hand) the history is read once, in full.
"""

from __future__ import annotations

import json
import math
import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _option_specs, _safe_open, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _cpu_guarantee, _kubelet_process, _measure, _overcommit, _pipeline, _probe, _procfs, _swap, _task_count)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _history_store, _metrics
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

STATE_VERSION = 2  # 2: hours packed in strings
MIB = 1 << 20
# The sampler's options when neither the role (sampler.json) nor a flag gives one: _option_specs.SAMPLER_OPTIONS, their
# one home (the role's own defaults, the paths from _state_dir). The script's flags and run() both read this table.
# An option given as None counts as not given.
DEFAULTS = _option_specs.sampler_defaults()
# Beside the decision (_state_dir.APPLIED_FILE).
RESERVATION_FILE = _state_dir.APPLIED_FILE
_PRESSURE_FILES = (('cpu', 'cpu.pressure'), ('memory', 'memory.pressure'), ('io', 'io.pressure'))


def load_json(path):
    """The JSON object in ``path``; None when absent, unreadable, not an object, or not root's alone (_safe_open)."""
    try:
        return _json_object(_safe_open.read_bytes(path))
    except (OSError, NodeallocError):
        return None


def _json_object(data):
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _counts_problem(counts):
    if not isinstance(counts, dict):
        return 'not a mapping'
    for bucket, count in counts.items():
        if not (bucket.isdigit() and bucket.isascii() and len(bucket) < 19) or isinstance(count, bool) \
                or not isinstance(count, int) or not 0 < count < 1 << 62:
            return 'bucket %r: %r' % (bucket[:20], count)
    return None


def state_problem(state):
    """What in a saved state of this version is not as ``run`` writes it (None when all is); its ``cpu`` snapshot is
    checked where it is used (an unusable one is sampled again)."""
    for key in ('offset', 'inode', 'rejected'):
        value = state.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63):
            return '%s is %r' % (key, value)
    if not state.get('hours_valid'):
        return None  # rebuilt from the history by this run anyway
    hours, totals = state.get('hours'), state.get('totals')
    if not isinstance(hours, dict) or not isinstance(totals, dict) or set(totals) != {'m', 'c'}:
        return 'hours or totals are not what a run writes'
    for key in ('m', 'c'):
        problem = _counts_problem(totals[key])
        if problem:
            return 'totals %s: %s' % (key, problem)
    for name, hour in hours.items():
        # Hours stay packed until a run touches one (a run parses one hour, not the window): a packed hour that does
        # not unpack fails where it is unpacked, and update_history rebuilds the sketch.
        if not (name.isdigit() and name.isascii() and len(name) < 19) or not isinstance(hour, str):
            return 'hour %r is not what a run writes' % name[:20]
    return None


def load_state(path):
    """(state, problem): the saved state, or a new one; a file that is not a state of this version's shape is moved
    aside (``.unusable``) and named in ``problem``, so that the sampler rebuilds from the history instead of failing
    on every later run (issue 35: a shape a run did not write stopped it for good)."""
    fresh = {'version': STATE_VERSION}
    try:
        state = _json_object(_safe_open.read_bytes(path))
    except (FileNotFoundError, NotADirectoryError):
        return fresh, None
    except _safe_open.UnsafePathError as exc:
        # Not moved aside either: nothing is renamed in a directory another user can write.
        return fresh, '%s; the sampler state is not used, rebuilt from the history' % exc
    except OSError:
        state = None
    if state is not None and state.get('version') != STATE_VERSION:
        return fresh, None  # another version's: replaced when this run saves
    problem = 'not a JSON object' if state is None else state_problem(state)
    if problem is None:
        return state, None
    aside = path + '.unusable'
    try:
        os.replace(path, aside)
    except OSError as exc:
        aside = 'left in place (%s)' % (exc.strerror or exc)
    return fresh, '%s: the sampler state could not be used (%s); moved to %s, rebuilt from the history' % (
        path, problem, aside)


def _unpack_hour(text):
    """``{'m': {bucket: count}, 'c': {...}}`` from an hour packed by ``_pack_hour``."""
    memory, _sep, cpu = text.partition(';')
    return {key: {bucket: int(count) for bucket, _colon, count in (item.partition(':') for item in part.split(',') if item)}
            for key, part in (('m', memory), ('c', cpu))}


def _pack_hour(hour):
    return ';'.join(','.join('%s:%d' % item for item in hour[key].items()) for key in ('m', 'c'))


def _packed(state):
    """``state`` as it is saved: every hour packed (those a run touched are unpacked in memory)."""
    hours = {name: hour if isinstance(hour, str) else _pack_hour(hour) for name, hour in state.get('hours', {}).items()}
    return dict(state, hours=hours)


def _hour(hours, name):
    hour = hours.get(name)
    if hour is None:
        hour = hours[name] = {'m': {}, 'c': {}}
    elif isinstance(hour, str):
        hour = hours[name] = _unpack_hour(hour)
    return hour


def _add(state, sample):
    """Count ``sample`` in its hour and in the window's running totals (so a percentile needs no merge)."""
    hours, totals = state['hours'], state['totals']
    hour = _hour(hours, str(int(sample['t'] // 3600)))
    for key, bucket in (('m', str(int(math.ceil(sample['non_pod_bytes'] / float(MIB))))),
                        ('c', str(int(math.ceil(sample['non_pod_millicores']))))):
        hour[key][bucket] = hour[key].get(bucket, 0) + 1
        totals[key][bucket] = totals[key].get(bucket, 0) + 1


def _prune(state, now, window_seconds):
    oldest = int((now - window_seconds) // 3600)
    for name in [k for k in state['hours'] if int(k) < oldest]:
        hour = state['hours'].pop(name)
        for key, buckets in (_unpack_hour(hour) if isinstance(hour, str) else hour).items():
            for bucket, count in buckets.items():
                left = state['totals'][key].get(bucket, 0) - count
                if left > 0:
                    state['totals'][key][bucket] = left
                else:
                    state['totals'][key].pop(bucket, None)


def sketch_percentile(totals, percent):
    """Nearest-rank percentile over bucket counts (bucket upper edges); None when empty."""
    counts = sorted((int(bucket), count) for bucket, count in totals.items())
    total = sum(count for _bucket, count in counts)
    if not total:
        return None
    rank = max(1, int(math.ceil(percent / 100.0 * total)))
    seen = 0
    for bucket, count in counts:
        seen += count
        if seen >= rank:
            return bucket
    return counts[-1][0]


def _ingest(path, state, now, limits, start):
    """Add the valid lines of ``path`` from byte ``start`` to the sketch; returns the end offset.

    A history that is not root's alone raises ``_safe_open.UnsafePathError`` (update_history reports it).
    """
    try:
        fd = _safe_open.open_file(path, os.O_RDONLY)
    except OSError:
        return start
    try:
        with os.fdopen(fd, 'rb') as handle:
            handle.seek(start)
            data = handle.read()
    except OSError:
        return start
    end = data.rfind(b'\n') + 1  # a torn tail is counted once it is whole (or cut)
    for line in data[:end].decode('utf-8', 'replace').splitlines():
        if not line.strip():
            continue
        sample, reason = _history_store.parse_line(line, now, *limits)
        if reason:
            state['rejected'] = state.get('rejected', 0) + 1
        else:
            _add(state, sample)
    return start + end


def _file_id(path):
    try:
        stat = os.stat(path)
    except OSError:
        return None, 0
    return stat.st_ino, stat.st_size


def _catch_up(history_path, state, now, window_seconds, limits, inode, size):
    """Bring the sketch up to the file's end and the window's start, and unpack the current hour.

    Returns whether the file was read up to ``state['offset']`` (False: rotated, read nothing).
    """
    ingested = True
    if not state.get('hours_valid'):
        state.update(hours={}, totals={'m': {}, 'c': {}}, rejected=0, hours_valid=True)
        state['offset'] = _ingest(history_path, state, now, limits, 0)
    elif inode == state.get('inode') and size >= state.get('offset', 0):
        state['offset'] = _ingest(history_path, state, now, limits, state.get('offset', 0))
    else:
        ingested = False  # rotated by another writer; it only dropped old lines, the sketch still holds.
    _prune(state, now, window_seconds)
    _hour(state['hours'], str(int(now // 3600)))
    for key in ('m', 'c'):
        sketch_percentile(state['totals'][key], 100)
    return ingested


def update_history(history_path, state, reading, now, window_seconds, limits, record=True):
    """Bring the sketch up to date and record ``reading`` (unless ``record`` is false); returns the problems met."""
    problems = []
    inode, size = _file_id(history_path)
    try:
        ingested = _catch_up(history_path, state, now, window_seconds, limits, inode, size)
    except _safe_open.UnsafePathError as exc:
        # Neither read nor appended to: its samples are not the node's (_history_store.read says the same). The
        # sketch is rebuilt from the history once it is root's again.
        state.update(recorded=False, hours_valid=False)
        state.setdefault('totals', {'m': {}, 'c': {}})
        return problems + ['%s; the history is not used, this reading was not recorded' % exc]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as exc:
        # The state is a cache of the history: one a hand edit or another version left unusable is
        # rebuilt from the file instead of stopping every run until someone deletes it.
        problems.append('the sampler state could not be used (%s: %s); rebuilt from %s'
                        % (type(exc).__name__, exc, history_path))
        state.clear()
        state['version'] = STATE_VERSION
        ingested = _catch_up(history_path, state, now, window_seconds, limits, inode, size)
    if not record:
        # Nothing appended: keep the offset the catch-up read to (a line another writer is still appending stays
        # to be read whole by the next run); after a rotation, go on from the file's end as an append would.
        state['recorded'] = False
        state['inode'] = inode
        if not ingested:
            state['offset'] = size
        return problems
    try:
        cut = _history_store.append(history_path, reading)
        if cut:
            problems.append('%s: cut a torn last line (%d bytes) before appending' % (history_path, cut))
        _add(state, reading)
        state['recorded'] = True
    except (OSError, NodeallocError) as exc:
        problems.append('%s: this reading was not recorded: %s' % (history_path, exc))
        state['recorded'] = False
    state['inode'], state['offset'] = _file_id(history_path)
    return problems


def read_pressure(directory):
    """PSI totals of a cgroup v2 group: {(resource, kind): seconds} (Documentation/accounting/psi.rst)."""
    totals = {}
    for resource, name in _PRESSURE_FILES:
        for kind, values in (_cpu_guarantee.read_pressure(os.path.join(directory, name)) or {}).items():
            if 'total_usec' in values:
                totals[(resource, kind)] = values['total_usec'] / 1e6
    return totals


def in_session_group(layout, sessions, proc_root='/proc'):
    """Whether this process runs inside one of the SSH sessions' groups (the sampler started by hand).

    Its memory cgroup's path: systemd puts a unit at the same path in every hierarchy, the CPU one included.
    """
    own = _cgroup.process_memory_cgroup(layout, _procfs.read_process_cgroups(os.getpid(), proc_root))
    return own is not None and any(own == g or own.startswith(g + '/') for g in sessions)


def own_cpu_ns(previous, snapshot):
    """The sampler's own CPU time between the previous run's snapshot and this run's.

    A run's CPU falls between two snapshots (the end of one run, the start-up of the next), so it would
    be counted as non-pod CPU and reserved for: on a real node a few millicores, but under software
    emulation a run costs a second of CPU, 20m of a one-minute period, and more when the host is busy.
    The measuring tool is not what the node needs reserved (as for the role's own SSH tasks,
    _measure.SESSION_CGROUPS). A run inside a session group is left out with the sessions already: 0 for it.
    """
    if not isinstance(previous, dict):
        return 0
    earlier = 0
    if not previous.get('own_in_session') and isinstance(previous.get('own_end_ns'), int) \
            and isinstance(previous.get('own_ns'), int):
        earlier = max(0, previous['own_end_ns'] - previous['own_ns'])
    return earlier + (0 if snapshot['own_in_session'] else snapshot['own_ns'])


def leave_out_own_cpu(cpu, own_ns):
    """``cpu`` with the sampler's own CPU (at most the non-pod figure) moved out of non-pod CPU."""
    own_m = int(round(1000 * own_ns / max(1e-9, cpu['sample_seconds'] * 1e9)))
    own_m = min(cpu['non_pod_millicores'], own_m)
    return dict(cpu, non_pod_millicores=cpu['non_pod_millicores'] - own_m, sampler_millicores=own_m)


def run(options, proc_root='/proc', sleep=time.sleep, now=None, process_cpu_ns=time.process_time_ns):
    """One sampler run; returns (figures, problems). Writes the history, the state and the textfile.

    ``process_cpu_ns``: this process's CPU time since it started, the run's own when the sampler is its own
    process (the script the timer starts).
    """
    now = time.time() if now is None else now
    options = _option_specs.with_defaults(options, DEFAULTS)
    state_path = options['state_path']
    state, state_problem_found = load_state(state_path)
    window_seconds = _duration.parse_window(options['history_window'])
    percent = float(options['percentile'])

    # A reading taken while a nodealloc step changes the node (it holds the node lock from before the write until
    # after the soak) measures the change: the step's own interpreter and its watcher (or async_wrapper) are resident, the
    # kubelet restarts. Recorded, it would become the node's peak for the whole history window and raise the next
    # run's reservation by what the rollout itself cost (seen on 1-GiB test guests: +51 MiB, one restart too many).
    step_dir = options['step_dir']
    mid_change = bool(step_dir) and _file_io.held_exclusively(step_dir)
    # The driver the kubelet's config names (the role passes it) picks kubepods where both layouts' groups exist,
    # as the facts module picks it.
    # The facts module's order and readers (_pipeline): the processes, the node, the memory, then CPU.
    cmdlines, found = _pipeline.scan_processes(_kubelet_process.DEFAULT_KUBELET_NAMES
                                               + _kubelet_process.DEFAULT_RUNTIME_NAMES, proc_root,
                                               need_executable=False)  # it runs nothing, reads no config path
    node = _probe.read_node(options['cgroup_root'], options['kubepods_cgroup'], options['cgroup_driver'], proc_root)
    meminfo, capacity_millicores, layout, kubepods = node.meminfo, node.capacity_millicores, node.layout, node.kubepods
    # The sampler is the measuring tool too: its own interpreter is left out with Ansible's (_tool_processes).
    components, memory = _pipeline.read_memory(node, cmdlines, found, proc_root, own_pids=(os.getpid(),))
    mid_change = mid_change or (bool(step_dir) and _file_io.held_exclusively(step_dir))

    snapshot = _pipeline.cpu_snapshot(node, components, proc_root)
    own_in_session = in_session_group(layout, snapshot['session_cgroups'], proc_root)
    snapshot.update(components=sorted(components.cgroups) + sorted(components.pids), own_ns=process_cpu_ns(),
                    own_in_session=own_in_session)
    cpu = _cpu_since_previous_run(state.get('cpu'), snapshot, capacity_millicores)
    if cpu is None:
        # The sampler sleeps through this sample: its own CPU in it is nil.
        cpu = dict(_pipeline.sample_cpu(node, components, float(options['sample_seconds']), proc_root, sleep),
                   sampler_millicores=0)
        snapshot = dict(_pipeline.cpu_snapshot(node, components, proc_root),
                        components=snapshot['components'], own_ns=process_cpu_ns(), own_in_session=own_in_session)
    state['cpu'] = snapshot
    if mid_change:
        # Nor is the step's CPU carried into the next period: the next run samples its own.
        del state['cpu']

    # The pod groups the audit lists are the reading's pods (issue 45): one listing for both, at this reading.
    audit = _overcommit.audit(layout, kubepods) if kubepods else None
    # The tasks outside the pods (issue 47, _node/_task_count), the sampler's own threads left out.
    pids = _task_count.measure(layout, kubepods, proc_root, own_pids=(os.getpid(),))
    reading = _history_store.reading(memory, cpu['non_pod_millicores'], 'sampler', now,
                                     pods=audit['pods'] if audit else None, non_pod_pids=pids['non_pod_tasks'])
    history_path = options['history_path']
    problems = ([state_problem_found] if state_problem_found else []) + update_history(
        history_path, state, reading, now, window_seconds, (meminfo['MemTotal'], capacity_millicores),
        record=not mid_change)

    figures = {
        'time': now,
        'percentile': percent,
        'memory': memory,
        'cpu': dict(cpu, capacity_millicores=capacity_millicores),
        'window_non_pod_bytes': (sketch_percentile(state['totals']['m'], percent) or 0) * MIB,
        'window_non_pod_millicores': sketch_percentile(state['totals']['c'], percent) or 0,
        'window_samples': sum(state['totals']['m'].values()),
        'rejected_samples': state.get('rejected', 0),
        'recorded': state['recorded'],
        'mid_change': mid_change,
        'kubepods_memory_limit_bytes': None,
        'kubepods_cpu_allocatable_millicores': None,
        'overcommit': None,
        'pressure': {},
        'decision': load_json(options['decision_path']),
        'reservation': load_json(_state_dir.beside(options['decision_path'], RESERVATION_FILE)),
        'near_reservation': None,
        # Whether system.slice may swap, as the facts say it (_swap.may_swap): the memory.swap.max files _measure.memory
        # read already and /proc/swaps, no process.
        'swap_control': _swap.may_swap(layout, memory['swap']['groups'], _swap.read_swaps(proc_root)),
    }
    figures['near_reservation'] = _near_reservation(reading, figures['reservation'])
    if audit:
        figures['overcommit'] = audit
        figures['kubepods_memory_limit_bytes'] = audit['kubepods_memory_limit_bytes']
        figures['kubepods_cpu_allocatable_millicores'] = _overcommit.group_cpu_millicores(layout, kubepods)
    if layout.version == 'v2':
        figures['pressure'] = _pressure_seconds(layout, kubepods)

    problems.extend(_write_textfile(options['textfile_path'], figures))
    # What this run used after its snapshot belongs to the next run's period (own_cpu_ns).
    snapshot['own_end_ns'] = process_cpu_ns()
    problems.extend(_save_state(state_path, state))
    return figures, problems


def _cpu_since_previous_run(previous, snapshot, capacity_millicores):
    """The period's CPU from the previous run's saved snapshot to this one, the sampler's own left out; None when
    there is no usable snapshot of the same components at least a second old (the run then samples)."""
    if not (isinstance(previous, dict) and previous.get('components') == snapshot['components']):
        return None
    try:
        if snapshot['time'] - previous['time'] >= 1:
            cpu = _measure.cpu_between(previous, snapshot, capacity_millicores)
            if cpu is not None:
                return leave_out_own_cpu(cpu, own_cpu_ns(previous, snapshot))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError, ZeroDivisionError):
        pass  # an unusable saved snapshot: sample instead
    return None


def _near_reservation(reading, applied):
    """_headroom.near_reservation against the reservation the role last applied, None when there is none."""
    applied = applied or {}
    if isinstance(applied.get('reserved_memory_bytes'), int) and isinstance(applied.get('memory_headroom_bytes'), int):
        return _headroom.near_reservation(
            reading['non_pod_bytes'], applied['reserved_memory_bytes'], applied['memory_headroom_bytes'])
    return None


def _pressure_seconds(layout, kubepods):
    """{(group, resource, kind): seconds} of kubepods and system.slice (cgroup v2)."""
    pressure = {}
    for relative in ([kubepods] if kubepods else []) + ['system.slice']:
        for (resource, kind), seconds in read_pressure(os.path.join(layout.memory_root, relative)).items():
            pressure[('/' + relative, resource, kind)] = seconds
    return pressure


def _write_textfile(textfile, figures):
    """Write the node_exporter textfile (when a path is given); the problems met."""
    if not textfile:
        return []
    try:
        os.makedirs(os.path.dirname(os.path.abspath(textfile)), mode=0o755, exist_ok=True)
        _file_io.write_atomic(textfile, _metrics.render_sampler(figures), mode=0o644)
    except (OSError, NodeallocError) as exc:
        return ['%s: metrics not written: %s' % (textfile, exc)]
    return []


def _save_state(state_path, state):
    """Save the sampler's state (its sketch and CPU snapshot); the problems met."""
    try:
        _file_io.write_atomic(state_path, json.dumps(_packed(state), separators=(',', ':')), mode=0o644)
    except (OSError, NodeallocError) as exc:
        return ['%s: state not saved (the next run reads the history in full): %s' % (state_path, exc)]
    return []
