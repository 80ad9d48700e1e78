#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: kubelet_reservations_wait
short_description: Wait on the node for a detached kubelet_reservations_apply step to end, return its result, remove its job file
version_added: 0.1.0
description:
  - The C(reservations) role starts M(nodealloc.kubelet.kubelet_reservations_apply) detached (its C(detach), or
    C(async)) on every node of a batch, then runs this module on each node. It reads the step's job file (the
    C(results_file) the start returned) every O(poll) seconds, on the node, until the step's watcher (or
    C(async_wrapper)) has written the step's end there, then removes the file and returns the step's result as its
    own, with C(finished=true).
  - When the step has not ended after O(timeout) seconds it returns C(finished=false) and leaves the file, as
    C(ansible.builtin.async_status) does for a job still running; the role runs it again C(until) it is finished, so
    that no SSH session stays silent for longer than O(timeout) (a load balancer's idle timeout can cut one).
  - One module run per node, for most steps, in place of C(async_status) asked every second and once more with
    C(mode=cleanup); the nodes' steps are unchanged and still end or restore by themselves when the controller dies.
  - Fails, with the step's own message and result, when the step failed (or its watcher or C(async_wrapper) failed
    it, for example past its budget).
  - The file and its directory must be this user's alone (not writable by group or others) and are never reached
    through a symbolic link; the file's name must be O(jid), of C(async_wrapper)'s form. A job file still missing 30
    seconds into the wait (C(async_wrapper) may answer before its daemon has written it) is an error.
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
      - Once the step has ended, a second run finds no job file and fails.
options:
  jid:
    description: The job id the detached start returned (C(ansible_job_id)), C(j<digits>.<pid>).
    type: str
    required: true
  results_file:
    description: The job file the detached start returned (C(results_file)), an absolute path on the node whose name is O(jid).
    type: path
    required: true
  timeout:
    description: How long this run waits for the step to end before it returns C(finished=false), in seconds.
    type: float
    default: 60
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

- name: Wait for it on the node, a minute per run, take its result and remove its job file
  nodealloc.kubelet.kubelet_reservations_wait:
    jid: "{{ step.ansible_job_id }}"
    results_file: "{{ step.results_file }}"
  register: step_ended
  until: step_ended is finished
  retries: 11  # past the async budget, so that async_wrapper's own timeout is what the last run reads
  delay: 0
'''

RETURN = r'''
ansible_job_id:
  description: The job waited for.
  returned: always
  type: str
finished:
  description:
    - Whether the step has ended (its result is then returned, or the module failed with it).
    - Also true when the module fails for its own reason (bad options, no job file, a file it refuses), so that an
      C(until) loop stops there.
  returned: always
  type: bool
erased:
  description: The job file removed once the step had ended.
  returned: when the step ended, not in check mode
  type: str
waited_seconds:
  description: How long this run waited on the node.
  returned: when the options were valid
  type: float
changed:
  description: The step's own C(changed) (false while it runs).
  returned: always
  type: bool
path:
  description: The file the step changed, as M(nodealloc.kubelet.kubelet_reservations_apply) returns it.
  returned: when the step ended and returned it
  type: str
backup_file:
  description: The step's backup (its C(backup_file)).
  returned: when the step ended and returned it
  type: str
created:
  description: The step's C(created).
  returned: when the step ended and returned it
  type: bool
written_sha256:
  description: The step's C(written_sha256).
  returned: when the step ended and returned it
  type: str
allocatable_after:
  description: The step's C(allocatable_after); the step's other keys (C(health), C(step_seconds), ...) come back too.
  returned: when the step ended and returned it
  type: dict
'''

import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_job


def main():
    module = NodeallocModule(argument_spec=dict(jid=dict(type='str', required=True),
                                                results_file=dict(type='path', required=True),
                                                timeout=dict(type='float', default=60),
                                                poll=dict(type='float', default=0.25)),
                             supports_check_mode=True)
    jid, timeout, poll = module.params['jid'], module.params['timeout'], module.params['poll']
    # nan or inf would wait for ever; a poll of 0 would spin a CPU of the node.
    if not 0 <= timeout < float('inf') or not 0 < poll <= 60:
        # finished, as async_status says of a job it cannot find: an until loop stops at the failure.
        module.fail_json(msg='timeout must be a finite number of seconds >= 0 and poll in (0, 60]: got %r and %r'
                         % (timeout, poll), ansible_job_id=jid, finished=True)
    start = time.monotonic()
    try:
        job, finished = _step_job.wait(module.params['results_file'], jid, timeout, poll, remove=not module.check_mode)
    except NodeallocError as exc:
        module.fail_json(msg=str(exc), ansible_job_id=jid, finished=True, waited_seconds=round(time.monotonic() - start, 1))
    waited = round(time.monotonic() - start, 1)
    if not finished:
        module.exit_json(changed=False, finished=False, ansible_job_id=jid, waited_seconds=waited)
    for text in _step_job.messages(job, 'warnings') + _step_job.messages(job, 'deprecations'):
        module.warn('the step: %s' % text)
    result = _step_job.step_result(job)
    result.update(ansible_job_id=jid, finished=True, waited_seconds=waited)
    if not module.check_mode:
        result['erased'] = module.params['results_file']
    if result.get('failed'):
        result.pop('failed')
        module.fail_json(msg=result.pop('msg', 'the step failed without a message'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
