"""nodealloc sampler: record one measurement in the node's history, then exit.

Installed by the nodealloc.kubelet.reservations role (reservations_install_sampler) with the
collection's module_utils beside it, and run every minute by nodealloc-sampler.timer, so that
peaks between playbook runs reach the history the recommendation uses. Needs only python3
(PyYAML when the kubelet config is YAML). Usage: nodealloc-sampler.py [history_path] [sample_seconds]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _facts  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError  # noqa: E402


def main(argv):
    options = {
        'history_path': argv[0] if argv else '/var/lib/nodealloc/history.jsonl',
        'sample_seconds': float(argv[1]) if len(argv) > 1 else 10.0,
        'history_source': 'sampler',
        'record': True,
    }
    try:
        facts = _facts.gather(options)
    except (NodeallocError, ValueError) as exc:
        sys.stderr.write('nodealloc-sampler: %s\n' % exc)
        return 1
    for problem in facts['history']['problems']:
        sys.stderr.write('nodealloc-sampler: %s\n' % problem)
    return 0 if facts['history']['recorded'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
