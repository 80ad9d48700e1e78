# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The measurement history kept on each node: a bounded JSON-lines file, read with a time window.

* Appends take an exclusive flock on the file's directory, write one line and fsync, so the
  module and the sampler never interleave and a crash loses at most the line being written.
* When the file grows past ``max_samples`` lines it is rewritten through the one write path
  (temporary file, rename) keeping the newest samples inside the window.
* Reading skips and reports corrupt lines and samples from the future (a clock that jumped),
  and sorts the rest by time (a clock that stepped back leaves samples out of order).
"""

from __future__ import annotations

import json
import math
import os
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils._go_duration import parse_duration

DEFAULT_PATH = '/var/lib/nodealloc/history.jsonl'
DEFAULT_MAX_SAMPLES = 20160  # two weeks of one sample a minute
FIELDS = ('t', 'non_pod_bytes', 'non_pod_millicores')
FUTURE_TOLERANCE_SECONDS = 300
_DAYS = re.compile(r'^(\d+(?:\.\d+)?)d$')


def parse_window(text):
    """Seconds in a window such as ``7d``, ``24h``, ``90m`` (Go durations, plus whole days)."""
    text = str(text).strip()
    match = _DAYS.match(text)
    if match:
        return float(match.group(1)) * 86400
    seconds = float(parse_duration(text))
    if seconds < 0:
        raise ValueError('a window cannot be negative: %r' % text)
    return seconds


def append(path, sample, max_samples=DEFAULT_MAX_SAMPLES, window_seconds=None, lock_timeout=10.0):
    """Append one sample; rewrite the file when it holds more than ``max_samples`` lines."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o755, exist_ok=True)
    line = (json.dumps(sample, sort_keys=True, separators=(',', ':')) + '\n').encode('utf-8')
    with _file_io.directory_lock(directory, lock_timeout):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        with open(path, 'rb') as handle:
            count = sum(1 for _line in handle)
        if count > max_samples:
            samples, _problems = read(path, sample['t'], window_seconds)
            keep = samples[-max_samples:]
            _file_io.write_atomic(path, ''.join(json.dumps(s, sort_keys=True, separators=(',', ':')) + '\n'
                                                for s in keep))


def read(path, now, window_seconds=None):
    """Samples within [now - window, now + tolerance], sorted by time, and the problems found."""
    samples, problems = [], []
    try:
        with open(path, 'r', encoding='utf-8', errors='replace') as handle:
            lines = handle.readlines()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], ['%s: cannot read the history: %s' % (path, exc.strerror or exc)]
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
            if not isinstance(sample, dict) or not all(isinstance(sample.get(f), (int, float)) for f in FIELDS):
                raise ValueError('missing %s' % ', '.join(FIELDS))
        except ValueError as exc:
            problems.append('%s line %d skipped: not a sample (%s)' % (path, number, exc))
            continue
        if sample['t'] > now + FUTURE_TOLERANCE_SECONDS:
            problems.append('%s line %d skipped: dated %.0f s in the future (clock jump?)'
                            % (path, number, sample['t'] - now))
            continue
        if window_seconds is not None and sample['t'] < now - window_seconds:
            continue
        samples.append(sample)
    samples.sort(key=lambda s: s['t'])
    return samples, problems


def percentile(values, percent):
    """Nearest-rank percentile (``percent`` 100 is the peak)."""
    if not values:
        raise ValueError('no values')
    ordered = sorted(values)
    rank = max(1, int(math.ceil(percent / 100.0 * len(ordered))))
    return ordered[min(rank, len(ordered)) - 1]


def summarize(samples, percent):
    """What a recommendation rests on: the percentile of non-pod memory and CPU, the count and span."""
    return {
        'samples': len(samples),
        'span_seconds': (samples[-1]['t'] - samples[0]['t']) if samples else 0,
        'percentile': percent,
        'non_pod_bytes': percentile([s['non_pod_bytes'] for s in samples], percent),
        'non_pod_millicores': percentile([s['non_pod_millicores'] for s in samples], percent),
        'peak_non_pod_bytes': max(s['non_pod_bytes'] for s in samples),
    }
