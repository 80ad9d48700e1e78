#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: kubelet_reservations_wait
short_description: Wait on the node for a detached kubelet_reservations_apply step to end, return its result, remove its job file
version_added: 0.1.0
description:
  - The C(reservations) role starts M(nodealloc.kubelet.kubelet_reservations_apply) with C(async) on every node of a
    batch, pauses for the soak once, then runs this module on each node. It reads the step's job file (the
    C(results_file) the C(async) start returned) every O(poll) seconds, on the node, until C(async_wrapper) has
    written the step's end there, then removes the file and returns the step's result as its own.
  - One module run per node in place of C(ansible.builtin.async_status) asked again every second and once more with
    C(mode=cleanup); the nodes' steps are unchanged and still end or restore by themselves when the controller dies.
  - Fails, with the step's own message and result, when the step failed; fails without removing the file when the
    step has not ended after O(timeout) seconds.
  - The file and its directory must be this user's alone (not writable by group or others) and are never reached
    through a symbolic link; the file's name must be O(jid).
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode it waits and returns the step's result alike, and removes nothing.
  diff_mode:
    support: none
  idempotent:
    support: none
    details:
      - A second run finds no job file and fails.
options:
  jid:
    description: The job id the C(async) start returned (C(ansible_job_id)).
    type: str
    required: true
  results_file:
    description: The job file the C(async) start returned (C(results_file)), an absolute path on the node whose name is O(jid).
    type: path
    required: true
  timeout:
    description: How long to wait for the step to end, in seconds.
    type: float
    default: 600
  poll:
    description: How often the job file is read while the step runs, in seconds.
    type: float
    default: 0.25
'''

EXAMPLES = r'''
- name: Start the step on every node of the batch
  nodealloc.kubelet.kubelet_reservations_apply:
    path: /var/lib/kubelet/config.yaml
    kube_reserved: {memory: 1Gi}
  async: 600
  poll: 0
  register: step

- name: Wait for it on the node, take its result and remove its job file
  nodealloc.kubelet.kubelet_reservations_wait:
    jid: "{{ step.ansible_job_id }}"
    results_file: "{{ step.results_file }}"
    timeout: 600
  register: step_ended
'''

RETURN = r'''
ansible_job_id:
  description: The job waited for.
  returned: always
  type: str
erased:
  description: The job file removed once the step had ended.
  returned: when the step ended, not in check mode
  type: str
finished:
  description: Always V(true) on success, as C(ansible.builtin.async_status) returns it for an ended job.
  returned: when the step ended
  type: bool
waited_seconds:
  description: How long this module waited on the node for the step's end.
  returned: always
  type: float
path:
  description:
    - The rest is the step's own result, as M(nodealloc.kubelet.kubelet_reservations_apply) returns it (C(path),
      C(backup_file), C(allocatable_after), C(health) and the others).
  returned: when the step returned it
  type: str
'''

import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job


def main():
    module = NodeallocModule(argument_spec=dict(jid=dict(type='str', required=True),
                                                results_file=dict(type='path', required=True),
                                                timeout=dict(type='float', default=600),
                                                poll=dict(type='float', default=0.25)),
                             supports_check_mode=True)
    jid, timeout, poll = module.params['jid'], module.params['timeout'], module.params['poll']
    # nan or inf would wait for ever; a poll of 0 would spin a CPU of the node.
    if not 0 <= timeout < float('inf') or not 0 < poll <= 60:
        module.fail_json(msg='timeout must be a finite number of seconds >= 0 and poll in (0, 60]: got %r and %r'
                         % (timeout, poll), ansible_job_id=jid)
    start = time.monotonic()
    try:
        result = _step_job.wait(module.params['results_file'], jid, timeout, poll, remove=not module.check_mode)
    except NodeallocError as exc:
        module.fail_json(msg=str(exc), ansible_job_id=jid, waited_seconds=round(time.monotonic() - start, 1))
    result.update(ansible_job_id=jid, finished=True, waited_seconds=round(time.monotonic() - start, 1))
    if not module.check_mode:
        result['erased'] = module.params['results_file']
    if result.get('failed'):
        result.pop('failed')
        module.fail_json(msg=result.pop('msg', 'the step failed without a message'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
