"""The figures of docs/arithmetic.md's "Worked example": the node of
tests/integration/test_facts_real_cgroups_v1.py's test_systemd_driver_layout, measured once by the facts module's
code at the module's defaults (sample_seconds 5, a history file of its own that this run starts), printed as JSON:
the readings, the recommendation with its explanation lines, the decision. Needs root and cgroup v1, and no kubelet.

Usage: bash hack/stage-collection.sh && PYTHONPATH=.build .venv/bin/python hack/worked-example.py
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather  # noqa: E402
from helpers import cgroups_v1  # noqa: E402
from test_facts_real_cgroups_v1 import systemd_driver_layout  # noqa: E402


def main():
    if not cgroups_v1.v1_available():
        sys.exit('needs root and cgroup v1 memory, cpu and cpuacct controllers under /sys/fs/cgroup')
    tree = cgroups_v1.CgroupTree()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            systemd_driver_layout(tree, pathlib.Path(scratch))
            facts = _gather.gather({'history_path': os.path.join(scratch, 'history.jsonl')})
    finally:
        tree.cleanup()
    memory, cpu, recommendation = facts['memory'], facts['cpu'], facts['recommendation']
    print(json.dumps({
        'memory': {k: memory[k] for k in ('mem_total_bytes', 'mem_available_bytes', 'kubepods_working_set_bytes',
                                          'non_pod_poc_bytes', 'non_pod_bytes', 'kube_components_working_set_bytes')},
        'kubepods': memory['kubepods'],
        'kube_components': [(c['cgroup'], c['working_set_bytes']) for c in memory['kube_components']['cgroups']],
        'accounting': memory['non_pod_accounting'],
        'cpu': cpu,
        'current': facts['current'],
        'recommendation': {k: v for k, v in recommendation.items() if k != 'explanation'},
        'explanation': recommendation['explanation'],
        'decision': facts['decision'],
    }, indent=1, sort_keys=True))


if __name__ == '__main__':
    main()
