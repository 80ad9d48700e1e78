#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: kubelet_reservations_apply
short_description: Change a node's kubelet reservations and prove the kubelet healthy, or put the node back, all on the node
version_added: 0.1.0
description:
  - One step on the node, under a node lock held for the whole sequence. With O(state=applied) it writes the new
    reservations exactly as M(nodealloc.kubelet.kubelet_config) does (same validation, same atomic write and durable
    backup), restarts the kubelet unit with C(systemctl), waits until the unit is active, O(healthz_url) answers
    C(ok) and the kubepods memory limit is the one the new config sets, then soaks for O(soak_seconds) seconds
    during which the unit must stay active with the same C(MainPID) and C(NRestarts) and C(/healthz) must keep
    answering.
  - On any failure it restores the backup it made itself (only while the file still holds what it wrote, and only
    after the backup parses as a KubeletConfiguration; a drop-in it created is removed instead), restarts, checks
    health again, and fails with a message saying what it waited for and what it saw.
  - Meant to run detached from the SSH session, so that a controller or connection that dies cannot leave a node on a
    config nobody verified. With O(detach) it detaches itself and returns at once, its result then read with
    M(nodealloc.kubelet.kubelet_reservations_wait) (the C(reservations) role's way); C(async) does the same in six SSH
    operations a node where O(detach) takes the module's one pipelined run.
  - A journal in O(state_dir) marks a change not yet verified. If the step itself is killed, the next step on the
    node (either state) first restores that change the same way, then goes on.
  - With O(state=restored) it puts back a backup (the newest C(*.nodealloc.bak) beside the file unless
    O(backup_file) is given), restarts and runs the same health checks; C(playbooks/rollback.yml) uses it. With
    O(drop_in_dir) holding our drop-in, the drop-in is restored instead of the main file, and a drop-in with no
    backup (the first change created it) is removed. Should the kubelet not come up healthy on what was restored, the
    step puts back the file it found (kept beside it as C(*.nodealloc.undo) until the step ends, and journalled as a
    rollout's change is), restarts and checks health again, and fails saying so; a failed rollback leaves the node as
    it found it.
  - A second step on the same node waits up to O(node_lock_timeout) seconds, then fails naming the holder (pid,
    start time, controller). A step that did wait changes nothing (see O(apply_after_wait)) and says for whom it waited.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
options:
  state:
    description:
      - V(applied) writes O(kube_reserved) and O(system_reserved), restarts and verifies, restoring on failure.
      - V(restored) puts back a backup, restarts and verifies.
      - V(kept) writes only the status files of O(status)'s C(on_success), for a node whose decision is to keep its
        reservations. No lock is taken, no config is read or written, nothing restarts, and O(path) is not read.
        C(changed) when a status file changed.
    type: str
    choices: [applied, restored, kept]
    default: applied
  path:
    description: The main KubeletConfiguration file (the kubelet's C(--config)).
    type: path
    required: true
  drop_in_dir:
    description:
      - The kubelet's C(--config-dir); when set, the change goes to our drop-in O(drop_in_name) there.
      - In check mode a directory that does not exist yet is planned as empty (the role creates it before the real run).
    type: path
  drop_in_name:
    description: File name of our drop-in in O(drop_in_dir).
    type: str
    default: 50-nodealloc.conf
  kube_reserved:
    description: C(kubeReserved) resources to set (quantities), as in M(nodealloc.kubelet.kubelet_config).
    type: dict
  system_reserved:
    description: C(systemReserved) resources to set (quantities).
    type: dict
  reserved_memory:
    description:
      - C(reservedMemory) to set with the reservation, a list of C({numaNode, limits}) as in the KubeletConfiguration,
        written into the same file in the same atomic write. A list replaces the one in force (in a drop-in too, since the
        kubelet merges drop-ins with a JSON merge patch, where a list replaces the base list).
      - The C(reservations) role sets it only where C(memoryManagerPolicy) is C(Static) and the new reservation would
        otherwise stop the kubelet (the per-NUMA-node sum must equal C(kubeReserved) + C(systemReserved) + the hard
        C(memory.available) threshold); the config written is checked against that sum before anything is written.
    type: list
    elements: dict
    version_added: 0.1.0
  kubepods_margin:
    description: Refuse a change whose kubepods memory limit is below the kubepods working set now plus this margin.
    type: str
    default: 256Mi
  kubepods_cgroup:
    description: The kubepods cgroup relative to the cgroup root; found as node_reservation_facts finds it by default.
    type: str
  cgroup_root:
    description: Read cgroups from this directory instead of the mounts in C(/proc/self/mountinfo).
    type: path
  unit:
    description: The kubelet's systemd unit.
    type: str
    default: kubelet.service
  healthz_url:
    description: The kubelet's health endpoint (C(healthzBindAddress):C(healthzPort)).
    type: str
    default: http://127.0.0.1:10248/healthz
  kubepods_limit_file:
    description:
      - The kubepods cgroup's memory limit file (C(memory.limit_in_bytes) on v1, C(memory.max) on v2). When set, health
        also waits for it to hold the limit the config in force sets (less than a page apart).
    type: path
  health_timeout:
    description: Seconds to wait for the first healthy answer after a restart.
    type: float
    default: 120
  health_poll:
    description:
      - Seconds between health checks, while waiting and while soaking.
      - Right after a restart health is asked again sooner (0.25 s, doubling up to this), so that the soak starts as
        soon as the kubelet is healthy.
    type: float
    default: 2
  soak_seconds:
    description: Seconds the kubelet must stay healthy after its first healthy answer (0 turns the soak off).
    type: float
    default: 30
  node_lock_timeout:
    description: Seconds to wait for another step holding the node lock before failing with its holder named.
    type: float
    default: 300
  config_lock_timeout:
    description: Seconds to wait for the lock on the config's directory (held by M(nodealloc.kubelet.kubelet_config) runs).
    type: float
    default: 30
  state_dir:
    description:
      - Where the node lock, its holder and the journal live. Must survive a reboot.
      - The role's sampler records no reading while a step holds the lock at the default place (the node is
        mid-change, this step is resident on it).
    type: path
    default: /var/lib/nodealloc/step
  controller:
    description: How to name this run's controller to a run that waits for the lock; defaults to the SSH client address.
    type: str
  detach:
    description:
      - Seconds the step may run detached from the SSH session; V(0) runs it in the module's own run.
      - The options are checked first (a wrong one fails here, nothing started). Then the step is started in a process
        of its own, outside the session, and the module returns at once with C(ansible_job_id), C(results_file),
        C(started) and C(finished=false), as C(async) with C(poll=0) does. The job file C(results_file) holds the
        step's result once it ends, read and removed by M(nodealloc.kubelet.kubelet_reservations_wait).
      - The job file is in C(~/.ansible_async) of the user the step runs as, or in C(ANSIBLE_ASYNC_DIR) where the
        task's C(environment) sets it. Ansible's own C(async_dir) setting is not read (Ansible passes it to C(async)
        tasks only).
      - Past this many seconds the step's processes are killed and the job ends failed; a step that ends without a
        result (killed) ends failed with how it ended.
      - Ignored in check mode, which runs in the session.
    type: int
    default: 0
    version_added: 0.1.0
  backup_file:
    description: With O(state=restored), the backup to put back (default the newest beside the file).
    type: path
  only_if_sha256:
    description: With O(state=restored), restore only while the file's SHA-256 is this one (what a step wrote).
    type: str
  apply_after_wait:
    description:
      - With O(state=applied), after waiting for another step that held the node lock, write anyway. By default a step
        that had to wait changes nothing and says so, because the step it waited for may have changed the node since
        the recommendation was measured; two rollouts over the same node then never undo or overwrite each other.
    type: bool
    default: false
  measured_reserved:
    description:
      - The C(kube_reserved) and C(system_reserved) in force when the recommendation was measured (the facts' C(current)).
        If the file holds other values once the step has the lock, another run changed the node since; nothing is
        written and the step says so.
    type: dict
  created:
    description: With O(state=restored), the step being undone created the file (a new drop-in); it is removed.
    type: bool
    default: false
  enable_config_dir:
    description:
      - With O(state=applied), give the kubelet this C(--config-dir) within the same step, before the drop-in is
        written, by appending it to C(KUBELET_EXTRA_ARGS) in O(extra_args_file) and creating the directory if it is
        missing. The one restart, health check and soak cover both; on failure both are undone with the drop-in.
      - What the step created is recorded in O(state_dir); a later O(state=restored) that removes our drop-in (back to
        before the first change) also removes the flag (only while the file holds what the step wrote) and the
        directory (only if the step created it and it is empty), under the same lock, health check and soak.
    type: path
  extra_args_file:
    description: kubeadm's extra-args environment file (C(/etc/default/kubelet) or C(/etc/sysconfig/kubelet)).
    type: path
  status:
    description:
      - Status files to write on the node once the outcome is known, in the same call (the C(reservations) role
        passes what its plan says the sampler's metrics should read).
      - C(on_success) is a list of entries carried out after a step that leaves the asked-for configuration
        in force (verified); C(on_failure) after a step that failed (once the node is restored) or changed nothing
        because it waited for another step or the config moved since it was measured.
      - An entry C({path, content}) writes the file atomically with mode C(0644), its directory created if missing,
        as C(content | to_nice_json) and a newline (4-space indent, sorted keys); an entry of C(path) and C(state=absent) removes
        it. A file that already holds that content, or is already absent, is left alone. Nothing is written or
        removed in check mode.
    type: dict
    version_added: 0.1.0
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change; writes, restarts and locks nothing.
  diff_mode:
    support: full
  idempotent:
    support: full
notes:
  - Reading or writing a YAML config needs PyYAML on the node (C(python3-yaml) on Debian).
  - See C(docs/rollout.md) for the sequence, the journal and why the step runs detached.
'''

EXAMPLES = r'''
- name: Write, restart, verify and soak on the node; restore there on failure
  nodealloc.kubelet.kubelet_reservations_apply:
    path: /var/lib/kubelet/config.yaml
    kube_reserved: {cpu: 80m, memory: 933Mi}
    system_reserved: {cpu: 100m, memory: 512Mi}
    unit: kubelet.service
    kubepods_limit_file: /sys/fs/cgroup/kubepods.slice/memory.max
  async: 900
  poll: 2

- name: The same, detached by the step itself (one SSH operation), then waited for on the node
  nodealloc.kubelet.kubelet_reservations_apply:
    path: /var/lib/kubelet/config.yaml
    kube_reserved: {cpu: 80m, memory: 933Mi}
    detach: 900
  register: step

- name: Wait for it, a minute per run
  nodealloc.kubelet.kubelet_reservations_wait:
    jid: "{{ step.ansible_job_id }}"
    results_file: "{{ step.results_file }}"
  register: step_ended
  until: step_ended is finished
  retries: 16
  delay: 0

- name: Put the newest backup back and verify
  nodealloc.kubelet.kubelet_reservations_apply:
    state: restored
    path: /var/lib/kubelet/config.yaml
    unit: kubelet.service
'''

RETURN = r'''
path:
  description: The file changed (or that would be), the main file or our drop-in.
  returned: when the step ran (not the start of a detached one)
  type: str
backup_file:
  description: The backup this step made (V(applied)) or put back (V(restored)).
  returned: when there is one
  type: str
created:
  description: The step created the file (a new drop-in), so undoing it removes the file.
  returned: when changed with O(state=applied)
  type: bool
written_sha256:
  description: SHA-256 of what the step wrote; a later restore checks the file still holds it.
  returned: when changed with O(state=applied)
  type: str
previous:
  description:
    - Reservation fields of the effective configuration before the change, C(reservedMemory) among them (null where
      unset).
  returned: with O(state=applied)
  type: dict
new:
  description: The same fields after the change (C(reservedMemory) as O(reserved_memory) set it, where it was given).
  returned: with O(state=applied)
  type: dict
allocatable_before:
  description: Node allocatable (memory, cpu) and kubepods limit with the previous settings.
  returned: with O(state=applied)
  type: dict
allocatable_after:
  description: The same with the new settings.
  returned: with O(state=applied)
  type: dict
health:
  description: What the health checks saw when they passed (active state, MainPID, NRestarts, seconds to healthy, soak).
  returned: when the kubelet was restarted
  type: dict
step:
  description: This step's pid, start time (UTC) and controller, as a waiting step would see them.
  returned: when the step ran (not the start of a detached one)
  type: dict
ansible_job_id:
  description: With O(detach), the started step's job id, C(j<digits>.<pid>).
  returned: when the step was started detached
  type: str
results_file:
  description: With O(detach), the job file on the node that holds the step's result once it ends.
  returned: when the step was started detached
  type: str
started:
  description: With O(detach), V(true) (the step was started).
  returned: when the step was started detached
  type: bool
finished:
  description: With O(detach), V(false) (the step runs on).
  returned: when the step was started detached
  type: bool
waited_for_node_lock:
  description: How long this step waited for the node lock and for whom (pid, start time, controller).
  returned: when it waited for another step
  type: str
recovered:
  description: What the step did about an earlier step on this node that was killed before it finished.
  returned: when there was one
  type: str
config_dir_edits:
  description: What the step did (or would do) to give the kubelet its C(--config-dir), or to take it back on a rollback.
  returned: when there were any
  type: list
  elements: str
config_dir_left:
  description: Why parts of an enabled C(--config-dir) were left in place by a rollback (changed since, or not ours).
  returned: when there were any
  type: list
  elements: str
status_changed:
  description:
    - The status files (O(status)) written or removed because they held something else (in check mode, those that
      would be). With O(state=kept) they are the step's only change; with the other states C(changed) is the config's.
  returned: when there were any
  type: list
  elements: str
removed_temporary_files:
  description: Temporary files of an earlier, killed write that this step removed.
  returned: when there were any
  type: list
  elements: str
'''

import os
import time

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_detach
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_sequence
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change as change
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_primitives as step
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import fail_arguments
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import KUBELET_RESERVATIONS_APPLY_OPTIONS, NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import STEP_OPTIONS, STEP_SHARED, check


def main():
    module = NodeallocModule(argument_spec=KUBELET_RESERVATIONS_APPLY_OPTIONS, supports_check_mode=True,
                             required_together=[('enable_config_dir', 'extra_args_file')])
    # The options it shares with kubelet_config are checked by the same rules; status by its own shape.
    problems = check({name: module.params[name] for name in STEP_SHARED})
    # Its own numbers too: a timeout of inf or nan would wait for ever (_option_specs.problem names them).
    problems += check({name: module.params[name] for name, option in STEP_OPTIONS.items()
                       if option['type'] in ('int', 'float')}, table=STEP_OPTIONS)
    status_problem = _step_sequence.check_status(module.params['status'])
    if status_problem:
        problems.append(status_problem)
    if problems:
        module.fail_json(msg='invalid options, nothing done: %s' % '; '.join(problems), problems=problems)
    if module.params['detach'] and not module.check_mode:
        try:
            started = _step_detach.start(module.params['detach'])
        except NodeallocError as exc:
            module.fail_json(**fail_arguments(exc))
        if started is not None:
            module.exit_json(changed=False, **started)
        # The detached step's own process from here on: its result goes to the job file, and it ends there, never
        # in the module wrapper's clean-up of the payload the start's process may still be reading (_step_detach).
        with _step_detach.worker_ends_here():
            run_step(module)
    run_step(module)


def run_step(module):
    """The step, its result returned through the module (exit_json or fail_json)."""
    params = change.string_maps(module.params, keep=('measured_reserved', 'status'))
    # Not "started": async_status takes a result with that key for a job still running.
    result = dict(changed=False, step=dict(pid=os.getpid(), started=step.now_iso(),
                                           controller=step.controller_name(params['controller'])))
    start = time.monotonic()
    try:
        _step_sequence.run(params, module.check_mode, module._diff, result)
    except (NodeallocError, ValueError) as exc:
        result['step_seconds'] = round(time.monotonic() - start, 1)
        module.fail_json(**dict(result, **fail_arguments(exc)))
    result['step_seconds'] = round(time.monotonic() - start, 1)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
