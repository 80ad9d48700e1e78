# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The measurement history kept on each node: a bounded JSON-lines file, read with a time window.

* Appends take an exclusive flock on the file's directory, write one whole line and fsync, so the
  module and the sampler never interleave and a crash loses at most the line being written. A line
  left without its newline by a writer killed mid-append is cut off before the next append, so the
  next sample is never glued onto it.
* When the file grows past ``max_samples`` lines it is rewritten through the one write path
  (temporary file, rename) keeping the newest ``ROTATE_KEEP_FRACTION`` of ``max_samples`` lines, so
  a full file is rewritten once every few thousand appends, not on every one. Appends count lines
  only when the file's size says it may be full: the cost of an append does not grow with the file.
* The file and its directory are root's alone (_safe_open): a symbolic link at the history's name is
  refused, never appended to or cut; a history another user owns or can write is not used, and the
  problem says why (a user's file of invented samples would otherwise set the node's reservation).
* Reading skips and reports corrupt lines and samples that cannot be true (``validate``): not
  finite, negative, from the future (a clock that jumped), more memory than the node has, more CPU
  than it has; it sorts the rest by time (a clock that stepped back leaves samples out of order).
* A line may carry ``pods``, the pod cgroups under kubepods at that reading (issue 45: the class model fits non-pod
  memory against it). Lines written before it have none and read as they did; where it is present it must be a whole
  number from 0 to MAX_PODS, else the line is refused like any other reading that cannot be true.
* A line may carry ``non_pod_pids``, the node's tasks outside the pods at that reading (issue 47,
  _node/_task_count): the pid reservation is sized on their peak (_policy/_pids). Older lines have none; where
  present it must be a whole number from 0 to _task_count.MAX_TASKS.
"""

from __future__ import annotations

import json
import math
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._overcommit import MAX_PODS, is_pod_count
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._task_count import MAX_TASKS

DEFAULT_MAX_SAMPLES = 20160  # two weeks of one sample a minute
ROTATE_KEEP_FRACTION = 0.9
FIELDS = ('t', 'non_pod_bytes', 'non_pod_millicores')
MEMORY_FIELDS = ('non_pod_bytes', 'kube_components_bytes', 'kubepods_bytes')
CPU_FIELDS = ('non_pod_millicores',)
FUTURE_TOLERANCE_SECONDS = 300
# No figure of a node reaches 2^63 (bytes, millicores, seconds since 1970): a larger JSON integer is not a reading,
# and math on it fails (float() of a 309-digit integer raises OverflowError).
MAX_FIGURE = 1 << 63


def _cut_torn_tail(fd):
    """Drop a last line that has no newline (a writer killed mid-append); return the bytes cut."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b'\n':
        return 0
    end = size
    while end > 0:
        start = max(0, end - 4096)
        chunk = os.pread(fd, end - start, start)
        newline = chunk.rfind(b'\n')
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    os.ftruncate(fd, keep)
    return size - keep


def _count_lines(fd):
    count, offset = 0, 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return count
        count += chunk.count(b'\n')
        offset += len(chunk)


def reading(memory, non_pod_millicores, source, now, pods=None, non_pod_pids=None):
    """The one history line a measurement makes (_measure.memory's ``memory``), for the module and the sampler alike.

    ``pods``: the pod cgroups under kubepods at this reading (_overcommit.audit's count); None (no kubepods cgroup:
    nothing says how many pods run) leaves the key out, as in the lines written before it was recorded.
    ``non_pod_pids``: the tasks outside the pods (_node/_task_count ``non_pod_tasks``); None (not measured) leaves it
    out.
    """
    line = {
        't': round(now, 3),
        'non_pod_bytes': max(0, memory['non_pod_bytes']),
        'non_pod_millicores': non_pod_millicores,
        'kube_components_bytes': memory['kube_components_working_set_bytes'],
        'kubepods_bytes': memory['kubepods_working_set_bytes'],
        'measurement_tool_bytes': memory['measurement_tool']['left_out_bytes'],
        'source': source,
    }
    if pods is not None:
        line['pods'] = pods
    if non_pod_pids is not None:
        line['non_pod_pids'] = non_pod_pids
    return line


def append(path, sample, max_samples=DEFAULT_MAX_SAMPLES, window_seconds=None, lock_timeout=10.0):
    """Append one sample as one whole line; rotate when the file holds more than ``max_samples`` lines.

    Returns the number of bytes of a torn last line that were cut off first (0 nearly always).
    ``window_seconds`` is accepted for compatibility; old samples are dropped when read, not here.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o755, exist_ok=True)
    line = (json.dumps(sample, sort_keys=True, separators=(',', ':')) + '\n').encode('utf-8')
    # Checked before the lock too: a directory another user can write is refused for that, not for a lock they hold.
    os.close(_safe_open.open_directory(directory))
    with _file_io.directory_lock(directory, lock_timeout):
        # Checked before a byte is cut or appended: a link there is refused, not followed (_safe_open).
        fd = _safe_open.open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            cut = _cut_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
            # Lines are all about as long as this one (within 20 %): while the size says the file is not full, no need to count.
            full = os.fstat(fd).st_size > max_samples * len(line) * 1.2 and _count_lines(fd) > max_samples
            if full:
                keep = max(1, int(max_samples * ROTATE_KEEP_FRACTION))
                size = os.fstat(fd).st_size
                newest = os.pread(fd, size, 0).splitlines(True)[-keep:]
        finally:
            os.close(fd)
        if full:
            _file_io.write_atomic(path, b''.join(newest).decode('utf-8', errors='replace'))
    return cut


def validate(sample, now, mem_total_bytes=None, capacity_millicores=None):
    """Why ``sample`` cannot be a true reading of this node, or None when it can be."""
    if not isinstance(sample, dict):
        return 'not a JSON object'
    missing = [f for f in FIELDS if isinstance(sample.get(f), bool) or not isinstance(sample.get(f), (int, float))]
    if missing:
        return 'missing or not a number: %s' % ', '.join(missing)
    for field in FIELDS + MEMORY_FIELDS:
        value = sample.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, int) and abs(value) >= MAX_FIGURE:
                return '%s is out of range (%d bits)' % (field, value.bit_length())
            if not math.isfinite(value):
                return '%s is %r' % (field, value)
            if value < 0:
                return '%s is negative (%r)' % (field, value)
    reason = pods_problem(sample) or count_problem(sample, 'non_pod_pids', MAX_TASKS)
    if reason:
        return reason
    if sample['t'] > now + FUTURE_TOLERANCE_SECONDS:
        return 'dated %.0f s in the future (clock jump?)' % (sample['t'] - now)
    if mem_total_bytes:
        for field in MEMORY_FIELDS:
            value = sample.get(field)
            if isinstance(value, (int, float)) and value > mem_total_bytes:
                return '%s %.0f is more than the node has (MemTotal %d)' % (field, value, mem_total_bytes)
    if capacity_millicores:
        for field in CPU_FIELDS:
            if sample[field] > capacity_millicores:
                return '%s %.0f is more than the node has (%d millicores)' % (field, sample[field], capacity_millicores)
    return None


def pods_problem(sample):
    """Why ``sample['pods']`` cannot be a count of pods, or None (also when the line has none: an older line)."""
    if 'pods' not in sample or is_pod_count(sample['pods']):
        return None
    pods = sample['pods']
    if isinstance(pods, bool) or not isinstance(pods, int):
        return 'pods is not a whole number (%s)' % ('null' if pods is None else type(pods).__name__)
    return 'pods %d is out of range (0 to %d)' % (pods, MAX_PODS) if abs(pods) < MAX_FIGURE else \
        'pods is out of range (%d bits)' % pods.bit_length()


def count_problem(sample, field, most):
    """Why ``sample[field]`` cannot be a count from 0 to ``most``, or None (also when the line has none)."""
    if field not in sample:
        return None
    value = sample[field]
    if isinstance(value, bool) or not isinstance(value, int):
        return '%s is not a whole number (%s)' % (field, 'null' if value is None else type(value).__name__)
    if not 0 <= value <= most:
        return '%s %d is out of range (0 to %d)' % (field, value, most) if abs(value) < MAX_FIGURE else \
            '%s is out of range (%d bits)' % (field, value.bit_length())
    return None


def parse_line(line, now, mem_total_bytes=None, capacity_millicores=None):
    """(sample, None) for a valid line, (None, reason) for one that is not."""
    try:
        sample = json.loads(line)
    except ValueError as exc:
        return None, 'not a sample (%s)' % exc
    except RecursionError:
        return None, 'not a sample (nested too deep)'

    reason = validate(sample, now, mem_total_bytes, capacity_millicores)
    return (None, reason) if reason else (sample, None)


def read(path, now, window_seconds=None, mem_total_bytes=None, capacity_millicores=None):
    """Valid samples within [now - window, now + tolerance], sorted by time, and the problems found.

    ``problems`` names each line skipped and why; a skipped line is never used. A history that is not root's alone
    (a link, another user's file, one group or others can write, or in such a directory) is not read at all: no
    samples, and the problem says why.
    """
    samples, problems = [], []
    try:
        fd = _safe_open.open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return [], []
    except _safe_open.UnsafePathError as exc:
        return [], ['%s; the history is not used' % exc]
    except OSError as exc:
        return [], ['%s: cannot read the history: %s' % (path, exc.strerror or exc)]
    try:
        with os.fdopen(fd, 'r', encoding='utf-8', errors='replace') as handle:
            lines = handle.readlines()
    except OSError as exc:
        return [], ['%s: cannot read the history: %s' % (path, exc.strerror or exc)]
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if not line.endswith('\n'):
            problems.append('%s line %d skipped: torn (no newline; a writer was killed mid-append)' % (path, number))
            continue
        sample, reason = parse_line(line, now, mem_total_bytes, capacity_millicores)
        if reason:
            problems.append('%s line %d skipped: %s' % (path, number, reason))
            continue
        if window_seconds is not None and sample['t'] < now - window_seconds:
            continue
        samples.append(sample)
    samples.sort(key=lambda s: s['t'])
    return samples, problems
