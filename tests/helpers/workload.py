"""A process that really uses memory and CPU, for tests that measure cgroups.

Usage: workload.py [--alloc-mib N] [--burn] [--read-file PATH] [any other arguments, ignored]

Allocates N MiB and writes every page (so the kernel charges it to the
cgroup), prints "ready" once it has, then burns one CPU or sleeps until it
is killed. With --read-file it reads PATH three times before "ready" (the
second read moves its page cache to the active list, charged to this cgroup)
and again every 2 s, so the cache stays hot. Extra arguments are accepted so that a copy named ``kubelet`` can
carry a kubelet-like command line (``--config=...``).
"""

from __future__ import annotations

import sys
import time


def main(argv):
    alloc_mib = 0
    burn = False
    read_file = None
    index = 0
    while index < len(argv):
        if argv[index] == '--alloc-mib':
            alloc_mib = int(argv[index + 1])
            index += 1
        elif argv[index] == '--burn':
            burn = True
        elif argv[index] == '--read-file':
            read_file = argv[index + 1]
            index += 1
        index += 1
    # Multiplying a one-byte buffer writes every byte, so every page is touched and charged.
    held = bytearray(b'\x5a') * (alloc_mib * 1024 * 1024)
    for _round in range(3 if read_file else 0):
        _read_all(read_file)
    sys.stdout.write('ready %d\n' % len(held))
    sys.stdout.flush()
    if burn:
        while True:
            pass
    while True:
        if read_file:
            _read_all(read_file)
        time.sleep(2 if read_file else 3600)


def _read_all(path):
    with open(path, 'rb', buffering=0) as handle:
        while handle.read(1 << 20):
            pass


if __name__ == '__main__':
    main(sys.argv[1:])
