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
  - Meant to run detached from the SSH session (the C(reservations) role uses C(async)), so that a controller or
    connection that dies cannot leave a node on a config nobody verified.
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
    type: str
    choices: [applied, restored]
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
    description: Seconds between health checks, while waiting and while soaking.
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
  - See C(docs/rollout.md) for the sequence, the journal and why the step runs under C(async).
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

- name: Put the newest backup back and verify
  nodealloc.kubelet.kubelet_reservations_apply:
    state: restored
    path: /var/lib/kubelet/config.yaml
    unit: kubelet.service
'''

RETURN = r'''
path:
  description: The file changed (or that would be), the main file or our drop-in.
  returned: always
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
  description: Reservation fields of the effective configuration before the change.
  returned: with O(state=applied)
  type: dict
new:
  description: The same fields after the change.
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
  returned: always
  type: dict
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
removed_temporary_files:
  description: Temporary files of an earlier, killed write that this step removed.
  returned: when there were any
  type: list
  elements: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _config_dir_flag as flags
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _kubelet_config_change as change
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _rollout_step as step
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError, NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._file_io import DEFAULT_NODE_LOCK_DIR, directory_lock
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet_config_rules import ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node_probe import probe_node


def _stringify(value):
    if isinstance(value, dict):
        return {str(k): (None if v is None else str(v)) for k, v in value.items()}
    return value


def _node(params, unit=None):
    return step.Node(unit or params['unit'], params['healthz_url'], params['kubepods_limit_file'])


def _plan(params, node_facts, missing_drop_in_dir_is_empty=False):
    params = dict(params, state='present')
    return change.plan(params, node_facts.get('capacity_memory_bytes'), node_facts.get('capacity_millicores'),
                       node_facts.get('kubepods_working_set_bytes'), node_facts.get('kubepods_margin_bytes', 0),
                       node_facts.get('hugepages_bytes', 0), missing_drop_in_dir_is_empty=missing_drop_in_dir_is_empty)


def _moved_since_measured(measured, previous):
    """What differs between the reservations the caller measured and those in force now ('' if nothing)."""
    if not measured:
        return ''
    moved = []
    for option, field in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
        if option not in measured:
            continue
        then = _stringify(measured[option] or {})
        now = _stringify(previous.get(field) or {})
        if then != now:
            moved.append('%s %s, now %s' % (field, then, now))
    return '; '.join(moved)


def _expected_limit(allocatable):
    return (allocatable or {}).get('kubepods_memory_limit_bytes')


def _undo(params, entry):
    """Restore what a journal entry wrote, restart and check health: returns a sentence; raises StepError."""
    edits = entry.get('config_dir_edits') or []
    # A directory the step removed comes back before the file in it; one it created goes after the file in it.
    remade = [e for e in edits if e['kind'] == 'dir' and not e['created']]
    parts = flags.undo(remade)
    if entry.get('target'):
        with directory_lock(os.path.dirname(entry['target']), params['config_lock_timeout']):
            parts.append(step.restore(entry['target'], entry.get('backup_file'), entry.get('created', False),
                                      entry['written_sha256']))
    parts.extend(flags.undo([e for e in edits if e not in remade]))
    done = '; '.join(parts) or 'Nothing to undo'
    node = step.Node(entry['unit'], entry['healthz_url'], entry.get('kubepods_limit_file'))
    try:
        step.verify(node, entry.get('expected_limit_before'), params['health_timeout'], params['health_poll'], 0)
    except step.StepError as exc:
        raise step.StepError('%s, but the kubelet is not healthy on it either: %s' % (done, exc))
    return done + ' and the kubelet is healthy again'


def _recover(module, params):
    entry = step.read_journal(params['state_dir'])
    if entry is None:
        return None
    if module.check_mode:
        return 'would first undo the unverified change to %s left by step pid %s (started %s)' % (
            entry.get('target') or '--config-dir', entry.get('pid'), entry.get('started'))
    try:
        done = _undo(params, entry)
    except step.StepError as exc:
        if 'no longer holds' not in str(exc):
            raise step.StepError('an earlier step (pid %s, started %s) was killed before verifying %s; undoing it '
                                 'failed: %s' % (entry.get('pid'), entry.get('started'),
                                                 entry.get('target') or '--config-dir', exc))
        done = str(exc)
    step.clear_journal(params['state_dir'])
    _discard_undo_copy(entry)
    return 'an earlier step (pid %s, started %s, from %s) was killed before verifying its change: %s' % (
        entry.get('pid'), entry.get('started'), entry.get('controller'), done)


CONFIG_DIR_RECORD = 'config_dir.json'


def _read_config_dir_record(params):
    """What a step did to give the kubelet O(drop_in_dir) as its --config-dir, if a step did (else None)."""
    record = step.read_state(params['state_dir'], CONFIG_DIR_RECORD)
    if record and params['drop_in_dir'] and record.get('config_dir') == os.path.realpath(params['drop_in_dir']):
        return record
    return None


def _enable_config_dir(module, params, result):
    """Make the directory and add --config-dir to the extra-args file, journalled first; returns the edits."""
    if not params['enable_config_dir']:
        return []
    config_dir = os.path.realpath(params['enable_config_dir'])
    edits = flags.plan_enable(params['extra_args_file'], config_dir)
    if edits:
        result['changed'] = True
        result['config_dir_edits'] = [flags.describe(e) for e in edits]
    if edits and not module.check_mode:
        # Journalled before the first edit: a step killed from here on is undone by the next one.
        step.write_journal(params['state_dir'], dict(
            config_dir_edits=flags.journal_form(edits), unit=params['unit'], healthz_url=params['healthz_url'],
            kubepods_limit_file=params['kubepods_limit_file'], expected_limit_before=None, **result['step']))
        try:
            flags.apply(edits)
        except (OSError, NodeallocError):
            flags.undo(flags.journal_form(edits))
            step.clear_journal(params['state_dir'])
            raise
    return edits


def _apply(module, params, result):
    node_facts = probe_node(params)
    target_dir = params['drop_in_dir'] or os.path.dirname(params['path'])
    enabled = _enable_config_dir(module, params, result)
    # Check mode before the role's reservations_enable_config_dir has made the drop-in directory: plan it as the
    # empty directory the real run creates; there is nothing to lock, and check mode writes nothing.
    pending_dir = module.check_mode and not os.path.lexists(target_dir)
    with _null_lock() if pending_dir else directory_lock(target_dir, params['config_lock_timeout']):
        decision = _plan(params, node_facts, missing_drop_in_dir_is_empty=pending_dir)
        if pending_dir:
            result['msg'] = '%s does not exist yet: planned as the empty directory the run would create' % target_dir
        if not module.check_mode:
            stale = change.clean_up(decision)
            if stale:
                result['removed_temporary_files'] = stale
        result.update(path=decision['target'], previous=decision['previous'], new=decision['new'],
                      allocatable_before=decision['allocatable_before'], allocatable_after=decision['allocatable_after'],
                      changed=decision['changed'] or bool(enabled))
        if module._diff:
            result['diff'] = dict(before=decision['before_text'] or '',
                                  after=decision['text'] if decision['action'] == 'write' else '',
                                  before_header=decision['target'], after_header=decision['target'])
        moved = _moved_since_measured(params['measured_reserved'], decision['previous'])
        if moved:
            if enabled and not module.check_mode:
                flags.undo(flags.journal_form(enabled))  # nothing restarted on it yet
                step.clear_journal(params['state_dir'])
            result['changed'] = False
            result.pop('config_dir_edits', None)
            result['msg'] = ('not changed: the config changed since this node was measured (%s), probably by another '
                             'run; run again to measure anew' % moved)
            return
        if not (decision['changed'] or enabled) or module.check_mode:
            return
        entry = dict(config_dir_edits=flags.journal_form(enabled), unit=params['unit'], healthz_url=params['healthz_url'],
                     kubepods_limit_file=params['kubepods_limit_file'],
                     expected_limit_before=_expected_limit(decision['allocatable_before']),
                     written_sha256=None, **result['step'])
        backup_file, created = None, False
        if decision['changed']:
            target = os.path.realpath(decision['target'])
            created = not os.path.exists(target)
            backup_file = None if created else _file_io.make_backup(target)
            data = decision['text'].encode('utf-8') if decision['action'] == 'write' else None
            entry.update(target=target, backup_file=backup_file, created=created,
                         written_sha256=step.sha256(data) if data is not None else None)
        try:
            step.write_journal(params['state_dir'], entry)
            if decision['changed'] and data is None:
                _file_io.remove_durably(target)
            elif decision['changed']:
                _file_io.write_atomic(target, data)
        except (OSError, NodeallocError):
            if backup_file:
                _file_io.remove_durably(backup_file)
            flags.undo(entry['config_dir_edits'])
            step.clear_journal(params['state_dir'])
            raise
    result.update(backup_file=backup_file, created=created, written_sha256=entry['written_sha256'])
    try:
        result['health'] = step.verify(_node(params), _expected_limit(decision['allocatable_after']),
                                       params['health_timeout'], params['health_poll'], params['soak_seconds'])
    except step.StepError as exc:
        failure = str(exc)
        try:
            done = _undo(params, entry)
        except step.StepError as undo_exc:
            step.clear_journal(params['state_dir'])
            raise step.StepError('%s. %s.' % (failure, undo_exc))
        step.clear_journal(params['state_dir'])
        raise step.StepError('%s. %s.' % (failure, done))
    if enabled:
        # What a rollback past this step takes back: only what this step made (never someone else's directory).
        step.write_state(params['state_dir'], CONFIG_DIR_RECORD, dict(
            config_dir=os.path.realpath(params['enable_config_dir']), edits=flags.journal_form(enabled)))
    step.clear_journal(params['state_dir'])


def _restore_target(params):
    """Our drop-in when O(drop_in_dir) holds it (or the step being undone created it), else the main file."""
    if params['drop_in_dir']:
        drop_in = os.path.join(params['drop_in_dir'], params['drop_in_name'])
        if params['created'] or os.path.exists(drop_in):
            return os.path.realpath(drop_in), True
    return os.path.realpath(params['path']), False


def _restore(module, params, result):
    target, is_drop_in = _restore_target(params)
    result['path'] = target
    current = step.file_sha256(target)
    if params['only_if_sha256'] and current != params['only_if_sha256']:
        result['msg'] = '%s no longer holds what the step wrote; left as it is' % target
        return
    backup_file = None if params['created'] else (params['backup_file'] or step.newest_backup(target))
    disable, record = [], None
    if params['created'] or (is_drop_in and backup_file is None):
        # Our drop-in with no backup was created by us: before it, there was none, so undoing is removing it.
        data = None
        # Back to before the first change: where a step gave the kubelet this --config-dir, take that back too.
        record = _read_config_dir_record(params)
        if record:
            disable, left = flags.plan_disable(record['edits'])
            if left:
                result['config_dir_left'] = left
        if current is None and not disable:
            return
    else:
        if backup_file is None:
            raise step.StepError('no nodealloc backup (*.nodealloc.bak) next to %s, nothing restored' % target)
        result['backup_file'] = backup_file
        data = step.check_backup(backup_file)
        if current == step.sha256(data):
            return
    result['changed'] = True
    if disable:
        result['config_dir_edits'] = [flags.describe(e) for e in disable]
    if module.check_mode:
        return
    # The flag goes with the drop-in, under the journal; the directory only once the kubelet is verified without it
    # (until then it holds the copy of the drop-in an undo would put back).
    disable_files = [e for e in disable if e['kind'] == 'file']
    # The limit the config the kubelet runs now sets: what health is checked against should the rollback be undone.
    limit_before = _expected_limit(_plan(dict(params, kube_reserved=None, system_reserved=None),
                                         probe_node(params))['allocatable_before'])
    with directory_lock(os.path.dirname(target), params['config_lock_timeout']):
        # What the kubelet runs now, kept (not as a *.nodealloc.bak, which the next rollback would take for a backup)
        # and journalled like a rollout's change, so that a restore that fails, or is killed, is undone.
        undo_copy = None if current is None else _keep_undo_copy(target)
        entry = dict(target=target, backup_file=undo_copy, created=current is None, undo_copy=undo_copy,
                     written_sha256=step.sha256(data) if data is not None else None,
                     config_dir_edits=flags.journal_form(disable_files),
                     unit=params['unit'], healthz_url=params['healthz_url'],
                     kubepods_limit_file=params['kubepods_limit_file'], expected_limit_before=limit_before,
                     **result['step'])
        step.write_journal(params['state_dir'], entry)
        if data is None:
            if current is not None:
                _file_io.remove_durably(target)
        else:
            stat = os.stat(result['backup_file'])
            _file_io.write_atomic(target, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid)
    flags.apply(disable_files)
    try:
        # The limit the restored effective config sets, worked out as the kubelet does.
        # Without the flag the kubelet reads no drop-in directory any more.
        decision = _plan(dict(params, kube_reserved=None, system_reserved=None,
                              drop_in_dir=None if disable_files else params['drop_in_dir']), probe_node(params))
        result['health'] = step.verify(_node(params), _expected_limit(decision['allocatable_before']),
                                       params['health_timeout'], params['health_poll'], params['soak_seconds'])
    except (step.StepError, NodeallocError, ValueError) as exc:
        failure = 'the rollback to %s failed: %s' % (result.get('backup_file') or 'no drop-in', exc)
        try:
            done = _undo(params, entry)
        except step.StepError as undo_exc:
            done = str(undo_exc)
        step.clear_journal(params['state_dir'])
        _discard_undo_copy(entry)
        raise step.StepError('%s. Put back what the kubelet ran before the rollback: %s.' % (failure, done))
    step.clear_journal(params['state_dir'])
    _discard_undo_copy(entry)
    if record and disable:
        for sentence in flags.apply([e for e in disable if e['kind'] == 'dir']):
            if 'not empty' in sentence:
                result.setdefault('config_dir_left', []).append(sentence)
        step.remove_state(params['state_dir'], CONFIG_DIR_RECORD)


def _keep_undo_copy(target):
    """Copy ``target`` (content, mode, owner) durably to ``target.nodealloc.undo``; returns the copy's path."""
    undo_copy = target + '.nodealloc.undo'
    with open(target, 'rb') as handle:
        data = handle.read()
    stat = os.stat(target)
    _file_io.write_atomic(undo_copy, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid)
    return undo_copy


def _discard_undo_copy(entry):
    if entry.get('undo_copy') and os.path.exists(entry['undo_copy']):
        _file_io.remove_durably(entry['undo_copy'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['applied', 'restored'], default='applied'),
            path=dict(type='path', required=True),
            drop_in_dir=dict(type='path'),
            drop_in_name=dict(type='str', default='50-nodealloc.conf'),
            kube_reserved=dict(type='dict'),
            system_reserved=dict(type='dict'),
            kubepods_margin=dict(type='str', default='256Mi'),
            kubepods_cgroup=dict(type='str'),
            cgroup_root=dict(type='path'),
            unit=dict(type='str', default='kubelet.service'),
            healthz_url=dict(type='str', default='http://127.0.0.1:10248/healthz'),
            kubepods_limit_file=dict(type='path'),
            health_timeout=dict(type='float', default=120),
            health_poll=dict(type='float', default=2),
            soak_seconds=dict(type='float', default=30),
            node_lock_timeout=dict(type='float', default=300),
            config_lock_timeout=dict(type='float', default=30),
            state_dir=dict(type='path', default=DEFAULT_NODE_LOCK_DIR),
            controller=dict(type='str'),
            backup_file=dict(type='path'),
            only_if_sha256=dict(type='str'),
            created=dict(type='bool', default=False),
            apply_after_wait=dict(type='bool', default=False),
            measured_reserved=dict(type='dict'),
            enable_config_dir=dict(type='path'),
            extra_args_file=dict(type='path'),
        ),
        required_together=[('enable_config_dir', 'extra_args_file')],
        supports_check_mode=True,
    )
    params = {k: (v if k == 'measured_reserved' else _stringify(v)) for k, v in module.params.items()}
    if '/' in params['drop_in_name'] or not params['drop_in_name'].endswith('.conf'):
        module.fail_json(msg='drop_in_name must be a file name ending in .conf, got %r' % params['drop_in_name'])
    # Not "started": async_status takes a result with that key for a job still running.
    result = dict(changed=False, step=dict(pid=os.getpid(), started=step.now_iso(),
                                           controller=step.controller_name(params['controller'])))
    start = time.monotonic()
    try:
        if module.check_mode:
            lock = _null_lock()
        else:
            lock = step.node_lock(params['state_dir'], params['node_lock_timeout'],
                                  result['step'])
        with lock as waited:
            if waited and waited.get('holder'):
                holder = waited['holder']
                result['waited_for_node_lock'] = (
                    'waited %.0f s for the node lock held by another step (pid %s, started %s, from controller %s)'
                    % (waited.get('seconds', 0), holder.get('pid'), holder.get('started'), holder.get('controller')))
            recovered = _recover(module, params)
            if recovered:
                result['recovered'] = recovered
            if params['state'] == 'applied' and waited and waited.get('holder') and not params['apply_after_wait']:
                # The step that held the lock may have changed this node since our caller measured it.
                result['msg'] = ('not changed: %s, which may have changed this node since it was measured; '
                                 'left as that step verified it (run again to measure anew)' % result['waited_for_node_lock'])
            elif params['state'] == 'applied':
                _apply(module, params, result)
            else:
                _restore(module, params, result)
    except MissingLibraryError as exc:
        module.fail_json(msg=missing_required_lib(exc.library, reason=exc.reason), **result)
    except ValidationError as exc:
        module.fail_json(msg='refused, nothing written: %s' % exc, rule=exc.rule, field=exc.field, **result)
    except (NodeallocError, ValueError) as exc:
        result['step_seconds'] = round(time.monotonic() - start, 1)
        module.fail_json(msg=str(exc), **result)
    result['step_seconds'] = round(time.monotonic() - start, 1)
    module.exit_json(**result)


class _null_lock:
    def __enter__(self):
        return {}

    def __exit__(self, *exc):
        return False


if __name__ == '__main__':
    main()
