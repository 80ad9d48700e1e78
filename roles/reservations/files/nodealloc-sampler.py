"""nodealloc sampler: measure once, record the reading in the node's history, write the metrics, exit.

Installed by the nodealloc.kubelet.reservations role (reservations_install_sampler, on by default)
with the collection's module_utils beside it, and run by nodealloc-sampler.timer. It only measures
and records (no policy, no kubelet config): see plugins/module_utils/_sampler.py. Needs python3 only.
Usage: nodealloc-sampler.py [--history PATH] [--state PATH] [--textfile PATH|''] [--decision PATH]
                            [--percentile P] [--window 7d] [--sample-seconds S]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _sampler  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(prog='nodealloc-sampler')
    parser.add_argument('--history', default='/var/lib/nodealloc/history.jsonl')
    parser.add_argument('--state', default=_sampler.DEFAULT_STATE_PATH)
    parser.add_argument('--textfile', default=_sampler.DEFAULT_TEXTFILE_PATH, help="'' to write no metrics")
    parser.add_argument('--decision', default=_sampler.DEFAULT_DECISION_PATH)
    parser.add_argument('--percentile', type=float, default=100.0)
    parser.add_argument('--window', default='7d')
    parser.add_argument('--sample-seconds', type=float, default=10.0, help='CPU sample when no previous run is known')
    args = parser.parse_args(argv)
    options = {'history_path': args.history, 'state_path': args.state, 'textfile_path': args.textfile,
               'decision_path': args.decision, 'percentile': args.percentile, 'history_window': args.window,
               'sample_seconds': args.sample_seconds}
    try:
        figures, problems = _sampler.run(options)
    except (NodeallocError, ValueError) as exc:
        sys.stderr.write('nodealloc-sampler: %s\n' % exc)
        return 1
    for problem in problems:
        sys.stderr.write('nodealloc-sampler: %s\n' % problem)
    return 0 if figures['recorded'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
