"""Where the suite's CPU goes: sums and ranks what NODEALLOC_TEST_COST logged (tests/helpers/cost_log.py).

Usage: NODEALLOC_TEST_COST=/tmp/costs.jsonl make test; python3 hack/test-costs.py /tmp/costs.jsonl [--top 20]
Prints a Markdown table per test file (tests, wall seconds, the CPU seconds of each test's process tree) and the
tests that cost the most CPU. docs/testing.md, "Where the CPU goes".
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('log')
    parser.add_argument('--top', type=int, default=20)
    args = parser.parse_args(argv)
    with open(args.log, encoding='utf-8') as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    files = {}
    for line in lines:
        path = line['test'].split('::')[0]
        entry = files.setdefault(path, [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += line['wall_seconds']
        entry[2] += line['tree_cpu_seconds']
    total = sum(entry[2] for entry in files.values())
    print('| test file | tests | wall s | CPU s (tree) | share |')
    print('|---|---:|---:|---:|---:|')
    for path, (count, wall, cpu) in sorted(files.items(), key=lambda item: -item[1][2]):
        print('| `%s` | %d | %.0f | %.0f | %.0f %% |' % (path, count, wall, cpu, 100.0 * cpu / total if total else 0))
    print('| all | %d | %.0f | %.0f | |' % (len(lines), sum(e[1] for e in files.values()), total))
    print()
    print('| test | wall s | CPU s (tree) |')
    print('|---|---:|---:|')
    for line in sorted(lines, key=lambda line: -line['tree_cpu_seconds'])[:args.top]:
        print('| `%s` | %.0f | %.0f |' % (line['test'], line['wall_seconds'], line['tree_cpu_seconds']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
