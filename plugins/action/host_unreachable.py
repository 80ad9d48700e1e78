# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Return an unreachable result for the host, on the controller, without connecting to it.

    recommend.yml measures with ignore_unreachable so that a node it cannot reach stays in the play until the report
    is written (a play whose every host is unreachable ends, and ansible-playbook runs none of its later plays:
    PlaybookExecutor.run breaks when a whole batch failed). This task then gives the node back the outcome Ansible
    gives an unreachable node: the strategy counts a result with ``unreachable`` as unreachable
    (StrategyBase._process_pending_results, TaskResult.is_unreachable), removes the node from the play, and
    ansible-playbook exits 4.
    """

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('msg',))
    _requires_connection = False  # the point: the node was not reachable

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        dummy, args = self.validate_argument_spec(argument_spec={'msg': {'type': 'str', 'required': True}})
        result.update(changed=False, unreachable=True, msg=args['msg'])
        return result
