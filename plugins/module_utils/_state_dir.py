# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The one home of every path nodealloc keeps on a node.

Two kinds, on purpose:

* The run's state directory (``STATE_DIR`` by default, else the directory of the history file the role is
  given): the history, and beside it the sampler's state, the decision and the applied reservation. A run with
  another ``history_path`` keeps its own set; the sampler finds the applied reservation beside its decision file.
* The node lock directory (``NODE_LOCK_DIR``): the on-node step's lock and journal, and what the sampler checks
  for a change in progress. It does not follow ``history_path``: it guards the node's one kubelet, so two runs
  with different history files must still take the same lock, and a journal left by a killed step must be found
  by the next step whatever history the next run uses.

The role builds no path: node_reservation_facts' plan returns them (_node_plan.state_paths, ``plan.paths``).
"""

from __future__ import annotations

import os

STATE_DIR = '/var/lib/nodealloc'

HISTORY_FILE = 'history.jsonl'
SAMPLER_STATE_FILE = 'sampler-state.json'
DECISION_FILE = 'decision.json'
# The reservation the role last applied and the headroom it was sized with (written only when a change is applied,
# so a run that keeps the reservations rewrites nothing).
APPLIED_FILE = 'reservation.json'
NODE_LOCK_SUBDIR = 'step'

NODE_LOCK_DIR = os.path.join(STATE_DIR, NODE_LOCK_SUBDIR)


def path(name, state_dir=STATE_DIR):
    """The path of state file ``name`` in ``state_dir``."""
    return os.path.join(state_dir, name)


HISTORY_PATH = path(HISTORY_FILE)
SAMPLER_STATE_PATH = path(SAMPLER_STATE_FILE)
DECISION_PATH = path(DECISION_FILE)


def beside(file_path, name):
    """State file ``name`` in the directory of ``file_path`` (the history or the decision file of a run)."""
    return os.path.join(os.path.dirname(file_path), name)
