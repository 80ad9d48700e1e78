"""A process that really uses memory and CPU, for tests that measure cgroups.

Usage: workload.py [--alloc-mib N] [--burn] [any other arguments, ignored]

Allocates N MiB and writes every page (so the kernel charges it to the
cgroup), prints "ready" once it has, then burns one CPU or sleeps until it
is killed. Extra arguments are accepted so that a copy named ``kubelet`` can
carry a kubelet-like command line (``--config=...``).
"""

from __future__ import annotations

import sys
import time


def main(argv):
    alloc_mib = 0
    burn = False
    index = 0
    while index < len(argv):
        if argv[index] == '--alloc-mib':
            alloc_mib = int(argv[index + 1])
            index += 1
        elif argv[index] == '--burn':
            burn = True
        index += 1
    # Multiplying a one-byte buffer writes every byte, so every page is touched and charged.
    held = bytearray(b'\x5a') * (alloc_mib * 1024 * 1024)
    sys.stdout.write('ready %d\n' % len(held))
    sys.stdout.flush()
    if burn:
        while True:
            pass
    while True:
        time.sleep(3600)


if __name__ == '__main__':
    main(sys.argv[1:])
