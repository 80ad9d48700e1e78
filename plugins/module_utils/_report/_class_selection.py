# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Which nodes a run may write and restart: the class selector ``nodealloc_classes`` (issue 46).

The one place playbooks/apply.yml and observe.yml decide it, from the node's facts (node_reservation_facts' result,
its plan included) and two variables: the inventory's ``nodealloc_node_class`` and ``nodealloc_classes``, a list or
a comma-separated string of class names as the report names them (``template_class``: ``_node_templates.class_name``,
the inventory's name, else the size class '<GiB>gib-<cpus>cpu'). Unset or empty: every class, and apply carries out
every node's plan as before. Set: a node of another class is measured and decided but never written or restarted;
a node of a named class rolls only where its verdict (``_verdict.node_verdict``, the report's) is apply, so the
command the report gives for a class restarts exactly the nodes the report says apply for: a young node it says to
observe is not raised to the cold-start prior by that command.
"""

from __future__ import annotations

import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _verdict


def selected_classes(value):
    """The class names ``value`` selects as a tuple, or None for every class (None, '', [])."""
    if value is None:
        return None
    if isinstance(value, str):
        names = [name.strip() for name in value.split(',')]
        names = [name for name in names if name]
    elif isinstance(value, (list, tuple)):
        names = []
        for name in value:
            if not isinstance(name, str) or not name.strip() or ',' in name:
                raise NodeallocError('nodealloc_classes: each entry must be a class name (a non-empty string without '
                                     'a comma), got %r' % (name,))
            names.append(name.strip())
    else:
        raise NodeallocError('nodealloc_classes must be a list of class names or a comma-separated string, got %s'
                             % type(value).__name__)
    return tuple(names) or None


def selection(host, facts, inventory_class, value, now_seconds=None):
    """{'class': the node's class, 'selected': its class is selected, 'action': its verdict's action,
    'rolls': whether the rollout writes and restarts it, 'names': the selection (None: every class)}; see the
    module's docstring."""
    names = selected_classes(value)
    node = _fleet_report.build_node(host, facts, inventory_class or None)
    action = _verdict.node_verdict(node, time.time() if now_seconds is None else now_seconds)['action']
    plan_rolls = bool(_fleet_report.plan_of(facts).get('rolls')) if node.get('status') == 'ok' else False
    selected = names is None or node.get('template_class') in names
    return {'class': node.get('template_class'), 'selected': selected, 'action': action,
            'rolls': plan_rolls and (names is None or (selected and action == _verdict.APPLY)),
            'names': None if names is None else list(names)}
