# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What to do on a node, decided in one place from what ``_gather`` measured and the options.

The reservations role carries the plan out and decides nothing itself (the linux-system-roles storage pattern:
the module decides, YAML carries it out): it fails on ``refusals``, hands ``apply`` and ``status`` to the on-node
step (nodealloc.kubelet.kubelet_reservations_apply), which writes and removes the status files itself, gives the
sampler ``paths`` and shows ``report``. Pure: no file is read
here; ``_gather`` reads the files the plan needs (``kubelet.reservation_files``).

``plan(facts, options)`` returns::

    {'refusals': [str],             # why nothing may be written; the role stops on any
     'action': 'increase'|'decrease'|'keep',
     'add_config_dir': bool,        # give a kubeadm kubelet --config-dir (reservations_enable_config_dir)
     'rolls': bool,                 # the serial rollout touches the node
     'target': {'path', 'drop_in_dir', 'unit', 'kubepods_limit_file'},   # '' where there is none
     'apply': {...},                # the node-specific options of kubelet_reservations_apply (absent: omitted)
     'restore': {...},              # the same for state=restored (playbooks/rollback.yml)
     'paths': {'state_dir', 'history', 'sampler_state', 'decision', 'applied'},   # the files kept on the node
     'status': {'apply'|'undo'|'keep'|'restore': {'on_success': [doc], 'on_failure': [doc]}},  # each a step's status
                                    # option; doc: {'path', 'content': dict} (write) or {'path', 'state': 'absent'}
     'time_budget_seconds': {'apply': int, 'restore': int},   # the on-node step's detach / async budget
     'report': {'target': str|None, 'config_diff': [str]},
     'resource_managers': {...},   # the static CPU/memory managers and the change (_resource_managers; see below)
     'summary': [str]}              # what the role prints: the action and where, the decision's reasons, then
                                    # what the static CPU and memory managers make of the change
"""

from __future__ import annotations

import difflib
import posixpath
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_edit, _config_rules, _defaults
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers

RESERVATION_OPTIONS = ('kube_reserved', 'system_reserved')
# What the step may write: the reservations, and reservedMemory where the static memory manager needs it to start.
WRITTEN_OPTIONS = RESERVATION_OPTIONS + ('reserved_memory',)


def _option(options, name):
    value = options.get(name)
    return _option_specs.OPTIONS[name]['default'] if value is None else value


def drop_in_mode(options):
    """reservations_use_drop_in as one word: 'auto', 'true' or 'false' (YAML may give a bool)."""
    return str(_option(options, 'use_drop_in')).lower()


def _kubelet(facts):
    kubelet = facts.get('kubelet') or {}
    return kubelet, kubelet.get('ownership') or {}


def _drop_in_dir_before_config_dir(facts, options):
    """auto: the drop-in wherever the running kubelet reads a --config-dir (kubeadm upgrades and kubespray runs
    rewrite the main file, not drop-ins); true: a drop-in in any case; false: the main file."""
    kubelet, ownership = _kubelet(facts)
    mode = drop_in_mode(options)
    if mode == 'auto':
        return ownership.get('config_dir') or ''
    if mode == 'true':
        return kubelet.get('config_dir') or options.get('drop_in_dir') or ''
    return ''


def _add_config_dir(facts, options):
    """reservations_enable_config_dir where the kubelet reads no --config-dir yet and no flag overrides a file."""
    _kubelet_facts, ownership = _kubelet(facts)
    return bool(options.get('enable_config_dir')) and not ownership.get('config_dir') and not ownership.get('refusal')


def target(facts, options, add_config_dir):
    """Where the kubelet, its config, its kubepods limit are, and where to write ('' where there is none)."""
    kubelet, _ownership = _kubelet(facts)
    drop_in_dir = _drop_in_dir_before_config_dir(facts, options)
    if add_config_dir and drop_in_mode(options) != 'false':
        drop_in_dir = _option(options, 'config_dir_path')
    return {
        'path': kubelet.get('config_path') or _option(options, 'kubelet_config_path'),
        'drop_in_dir': drop_in_dir,
        'unit': options.get('kubelet_unit') or kubelet.get('unit') or _defaults.UNIT,
        # The file the on-node step reads the kubepods limit back from.
        'kubepods_limit_file': (facts.get('cgroup') or {}).get('kubepods_limit_file') or '',
    }


# Refusal sources: each takes (facts, options, decided) and returns a list of messages. ``decided`` holds
# 'action', 'add_config_dir' and 'apply' (apply_options: what the step would be given). Another check plugs in with one more entry in REFUSAL_SOURCES.

def _writing(decided):
    return decided['action'] != 'keep'


def ownership_refusal(facts, _options, decided):
    """Reservation flags on the kubelet's command line override any file (_kubelet_ownership.refusal)."""
    refusal = _kubelet(facts)[1].get('refusal')
    return [refusal] if _writing(decided) and refusal else []


def version_refusals(facts, _options, decided):
    """What the kubelet binary would refuse at its next start (_version_rules.check)."""
    return list(((_kubelet(facts)[0].get('version') or {}).get('refusals') or [])) if _writing(decided) else []


def no_config_refusal(facts, options, decided):
    if not _writing(decided) or _kubelet(facts)[0].get('config_path'):
        return []
    return ["no kubelet config found (looked at %s and the running kubelet's --config): nothing to change"
            % _option(options, 'kubelet_config_path')]


def drop_in_refusal(facts, options, decided):
    if (_writing(decided) and drop_in_mode(options) == 'true' and not _drop_in_dir_before_config_dir(facts, options)
            and not options.get('enable_config_dir')):
        return ['reservations_use_drop_in is true but the kubelet reads no --config-dir and reservations_drop_in_dir '
                'is empty']
    return []


def config_dir_stops(facts, options, decided):
    """Where only the kubelet's manager can add --config-dir: kubespray re-templates its env file on every run,
    and a kubelet without kubeadm's files has no KUBELET_EXTRA_ARGS this role knows how to edit."""
    if not decided['add_config_dir']:
        return []
    ownership = _kubelet(facts)[1]
    managers = ownership.get('managers') or []
    config_dir_path = _option(options, 'config_dir_path')
    if 'kubespray' in managers:
        evidence = ownership.get('evidence') or []
        env_file = next((re.sub('^kubespray: ', '', e) for e in evidence if re.search('kubelet.env', e)),
                        '/etc/kubernetes/kubelet.env')
        return ['this node is managed by kubespray (%s): add kubelet_custom_flags: ["--config-dir=%s"] to its inventory '
                'and run kubespray; it re-templates %s on every run, so an edit made here would be undone.'
                % (', '.join(evidence), config_dir_path, env_file)]
    if 'kubeadm' not in managers:
        return ['no kubeadm files found (/var/lib/kubelet/kubeadm-flags.env or a 10-kubeadm.conf drop-in); add '
                "--config-dir=%s to the kubelet's command line the way its installer supports." % config_dir_path]
    return []


def section_refusal(section):
    """A source for a section of the facts that says ``{'refusal': str|None}`` (counted only when writing)."""
    def source(facts, _options, decided):
        refusal = (facts.get(section) or {}).get('refusal')
        return [refusal] if _writing(decided) and refusal else []
    source.__name__ = '%s_refusal' % section
    return source


def requests_fit_refusal(facts, _options, decided):
    """The pods bound to the node no longer fit the new allocatable (_requests_fit): counted for any restart, the
    config-dir one too, since the kubelet admits every bound pod again when it starts (kubernetes/kubernetes#105523)."""
    refusal = (facts.get('requests_fit') or {}).get('refusal')
    return [refusal] if (_writing(decided) or decided['add_config_dir']) and refusal else []


def _fields_in_force(facts):
    """(where, field, value) of every kubeReserved/systemReserved the diff starts from: the merged config's and each
    reservation file's own."""
    current = facts.get('current') or {}
    found = [('the kubelet config', field, current.get(key))
             for key, field in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved'))]
    files = (facts.get('kubelet') or {}).get('reservation_files') or {}
    for path, known in sorted(files.items()):
        fields = (known or {}).get('fields') if isinstance(known, dict) else None
        if isinstance(fields, dict):
            found.extend((path, field, fields.get(field)) for field in ('kubeReserved', 'systemReserved'))
    return found


def invalid_fields(facts):
    """Why the reservations in force are not ones the kubelet would take (_config_rules), or None: the plan then
    computes no "before" from them (issue 35: kubeReserved: '5' raised in the diff)."""
    for where, field, value in _fields_in_force(facts):
        try:
            _config_rules.check_reserved({field: value}, field)
        except ValueError as exc:
            return '%s: %s' % (where, exc)
    return None


def invalid_fields_refusal(facts, _options, decided):
    """The reservations in force do not parse: no change is written over a config the kubelet would refuse."""
    problem = invalid_fields(facts)
    return ['the reservations in force are not valid, nothing is written over them: %s' % problem] \
        if problem and (_writing(decided) or decided['add_config_dir']) else []


def _numa(facts):
    """({node: MemTotal bytes} or None, online CPU ids or None) from the facts' ``numa`` (_node/_numa.read), when
    the measurement carries it."""
    numa = facts.get('numa') or {}
    nodes = {entry['node']: entry['mem_total_bytes'] for entry in numa.get('nodes') or []}
    return nodes or None, numa.get('online_cpus')


def _measured_config(facts):
    return ((facts.get('basis') or {}).get('measurement') or {}).get('kubelet_config') or {}


def _written_config(facts, apply):
    """The effective config once the step has written ``apply`` (its maps merged, its reservedMemory replacing the
    list: the step's merge, _config_edit.apply_changes)."""
    requested = {option: apply.get(option) for option in WRITTEN_OPTIONS if apply.get(option) is not None}
    return _config_edit.apply_changes(_measured_config(facts), requested)[0]


def reserved_memory_to_write(facts, apply):
    """_resource_managers.reserved_memory_to_write for the reservation in ``apply``: the reservedMemory the step
    writes with it where the static memory manager would otherwise refuse it ({'reserved_memory': None, ...} where
    none is written)."""
    version = (facts.get('kubelet') or {}).get('version')
    capacity = (facts.get('memory') or {}).get('mem_total_bytes')
    numa_memory = _numa(facts)[0]
    try:
        return _resource_managers.reserved_memory_to_write(
            _measured_config(facts), _written_config(facts, dict(apply, reserved_memory=None)), capacity, numa_memory,
            version)
    except ValueError:  # a quantity that does not parse: resource_managers and invalid_fields_refusal name it
        return {'reserved_memory': None, 'split': None, 'problems_before': []}


def resource_managers(facts, apply):
    """The static CPU and memory managers against the config the step would write (the effective config with the
    apply options merged as the step merges them, reservedMemory included where the plan writes it): what the
    kubelet would refuse, the reservedMemory per NUMA node that sums, the whole CPUs. ``problems`` is empty where no
    static manager is on. ``reserved_memory_written``: what the step writes (None: reservedMemory is left as it is);
    ``memory_problems_before``: what the static memory manager refuses in the config in force, where the change
    needs a reservedMemory (none is then written over the operator's)."""
    version = (facts.get('kubelet') or {}).get('version')
    capacity = (facts.get('memory') or {}).get('mem_total_bytes')
    after = _written_config(facts, apply)
    numa_memory, online_cpus = _numa(facts)
    found = {'memory_manager': after.get('memoryManagerPolicy') == _resource_managers.STATIC_MEMORY_POLICY,
             'cpu_manager': after.get('cpuManagerPolicy') == _resource_managers.STATIC_CPU_POLICY,
             'memory_problems': [], 'cpu_problems': [], 'reserved_memory': None, 'split': None, 'cpu': None,
             'reserved_memory_written': apply.get('reserved_memory'), 'memory_problems_before': []}
    try:
        found['memory_problems'] = _resource_managers.memory_manager_problems(
            after, capacity, sorted(numa_memory) if numa_memory else None, version)
        found['cpu_problems'] = _resource_managers.cpu_manager_problems(after, online_cpus)
        if found['memory_manager']:
            found.update(_resource_managers.propose_reserved_memory(after, capacity, numa_memory, version))
        if found['memory_problems']:
            found['memory_problems_before'] = reserved_memory_to_write(facts, apply)['problems_before']
        if found['cpu_manager']:
            millicores = _resource_managers.reserved_cpus(after)[2]
            found['cpu'] = _resource_managers.propose_cpu(after, millicores, online_cpus)
    except ValueError as exc:  # a quantity or threshold that does not parse: invalid_fields_refusal names it
        found['memory_problems'] = ['the static CPU or memory manager could not be checked: %s' % exc]
    return found


def resource_manager_refusals(facts, _options, decided):
    """The config the step would write stops the static memory or CPU manager (_resource_managers): nothing is
    written. The step writes the reservedMemory that sums with the change itself (apply_options); what is left is
    a reservedMemory in force that did not sum before the change either (hugepages among it), or a change no
    reservedMemory can be proposed for. A memory refusal says which, and names the reservedMemory that would sum."""
    if not _writing(decided):
        return []
    found = resource_managers(facts, decided.get('apply') or {})
    fix = ''
    if found['memory_problems_before']:
        fix += ('; the reservedMemory in force does not sum even before this change (%s), so none is written over '
                'it: set it right first' % '; '.join(found['memory_problems_before']))
    if found['reserved_memory']:
        fix += '; with this change set reservedMemory to %s (%s)' % (
            _reserved_memory_text(found['reserved_memory']), found['split'])
    elif found['split']:
        fix += '; no reservedMemory can be proposed: %s' % found['split']
    return (['the config this change would write stops the kubelet: %s%s' % (problem, fix)
             for problem in found['memory_problems']]
            + ['the config this change would write stops the kubelet: %s' % problem
               for problem in found['cpu_problems']])


def resource_manager_lines(found):
    """What the role prints about the static managers: the reservedMemory written with the change, and the whole CPUs
    the static CPU manager makes of the reservation (propose_cpu), so the proposal is read where the change is."""
    out = []
    if found.get('reserved_memory_written'):
        out.append('the static memory manager: reservedMemory is written with the reservation, %s (%s), so that it '
                   'sums to kubeReserved + systemReserved + the hard memory.available threshold'
                   % (_reserved_memory_text(found['reserved_memory_written']), found.get('split')))
    if found.get('cpu'):
        cpu = found['cpu']
        out.append('the static CPU manager: reserve %d whole CPU(s)%s: %s' % (
            cpu['whole_cpus'], (' (reservedSystemCPUs: %s)' % cpu['reserved_system_cpus'])
            if cpu.get('reserved_system_cpus') else '', cpu['reason']))
    return out


def _reserved_memory_text(entries):
    return '[%s]' % ', '.join('{numaNode: %d, limits: {memory: %s}}' % (e['numaNode'], e['limits']['memory'])
                              for e in entries)


def pids_refusal(facts, _options, decided):
    """A pid reservation that with the hard pid.available threshold would take every PID (_policy/_pids): refused
    where the maps to write carry it (``reserve_pids``), before any write."""
    refusal = ((facts.get('recommendation') or {}).get('pids') or {}).get('refusal')
    return [refusal] if _writing(decided) and refusal else []


REFUSAL_SOURCES = (
    ownership_refusal,
    version_refusals,
    no_config_refusal,
    drop_in_refusal,
    config_dir_stops,
    requests_fit_refusal,
    invalid_fields_refusal,
    resource_manager_refusals,
    pids_refusal,
)


def refusals(facts, options, decided, sources=REFUSAL_SOURCES):
    found = []
    for source in sources:
        found.extend(source(facts, options, decided))
    return found


def _decision(facts):
    return facts.get('decision') or {}


def apply_options(facts, options, where, add_config_dir):
    """The node-specific options of kubelet_reservations_apply, as the role passes them (absent: omitted)."""
    decision, current = _decision(facts), facts.get('current') or {}
    step = {'path': where['path']}
    if where['drop_in_dir']:
        step['drop_in_dir'] = where['drop_in_dir']
    # Per resource: a resource whose decision is keep is written back as it is now (_decision).
    step.update(kube_reserved=decision.get('kube_reserved'), system_reserved=decision.get('system_reserved'),
                unit=where['unit'])
    if where['kubepods_limit_file']:
        step['kubepods_limit_file'] = where['kubepods_limit_file']
    if add_config_dir:
        # On a kubeadm node: --config-dir goes into kubeadm's KUBELET_EXTRA_ARGS before the write (docs/coexistence.md).
        step['enable_config_dir'] = _option(options, 'config_dir_path')
        step['extra_args_file'] = _kubelet(facts)[1].get('kubeadm_extra_args_file')
    step['measured_reserved'] = {'kube_reserved': current.get('kube_reserved') or {},
                                 'system_reserved': current.get('system_reserved') or {}}
    # The static memory manager's reservedMemory, in the same write, where the new reservation would not sum with the
    # one in force (_resource_managers.reserved_memory_to_write); absent otherwise, so it is left as it is.
    written = reserved_memory_to_write(facts, step)['reserved_memory']
    if written:
        step['reserved_memory'] = written
    return step


def restore_options(facts, where):
    """kubelet_reservations_apply state=restored: where the kubelet reads a --config-dir, our drop-in there is what
    a rollout changed."""
    options = {'path': where['path'], 'unit': where['unit']}
    # The running kubelet's flag, else the unit files' (a restore often finds the kubelet down, with no argv to read).
    kubelet = _kubelet(facts)[0]
    config_dir = kubelet.get('config_dir') or (kubelet.get('ownership') or {}).get('config_dir')
    if config_dir:
        options['drop_in_dir'] = config_dir
    if where['kubepods_limit_file']:
        options['kubepods_limit_file'] = where['kubepods_limit_file']
    return options


def state_paths(options):
    """The files the role and its sampler keep on the node, all beside ``history_path`` (names: _state_dir).

    The sampler finds the applied reservation beside its decision file. The node lock is not here: it stays at
    _state_dir.NODE_LOCK_DIR whatever the history path (it guards the node's one kubelet).
    """
    history = _option(options, 'history_path')
    state_dir = posixpath.dirname(history)  # the node's paths are POSIX, whatever the controller runs
    return {'state_dir': state_dir,
            'history': history,
            'sampler_state': posixpath.join(state_dir, _state_dir.SAMPLER_STATE_FILE),
            'decision': posixpath.join(state_dir, _state_dir.DECISION_FILE),
            'applied': posixpath.join(state_dir, _state_dir.APPLIED_FILE)}


def records(options):
    """Whether the facts module appends its reading to the history: as ``record`` says where it is set; unset, where
    no sampler of the role records one (``install_sampler`` false), since the sampler records a reading every minute."""
    record = options.get('record')
    return not _option(options, 'install_sampler') if record is None else bool(record)


def status(facts, options):
    """What each call of the on-node step writes or removes for the sampler's metrics: its ``status`` option.

    ``apply`` (the rollout's step): on success, the decision file says keep and the applied file (the near-reservation
    flag) holds what was written (a memory decision of keep writes back the memory reserved before) and the headroom
    the recommendation was sized with; on failure, or when the step applied nothing, the decision is still pending.
    ``undo`` (the rollout's restore after the API server check failed): the decision is pending again, and once the
    node is restored the applied reservation is no longer in force; a failed restore leaves the node on it.
    ``keep`` (a node whose decision is keep): the decision file says keep. ``restore`` (playbooks/rollback.yml): the
    applied reservation is forgotten once the rollback succeeded. Without the sampler nothing is kept for it, but a
    rollback forgets the applied reservation all the same: a sampler an earlier run installed still reads it.
    """
    paths = state_paths(options)
    forget_applied = {'path': paths['applied'], 'state': 'absent'}
    restore = {'on_success': [forget_applied], 'on_failure': []}
    if not _option(options, 'install_sampler'):
        return {'apply': {'on_success': [], 'on_failure': []}, 'undo': {'on_success': [], 'on_failure': []},
                'keep': {'on_success': [], 'on_failure': []}, 'restore': restore}
    recommendation, decision = facts.get('recommendation') or {}, _decision(facts)

    def decision_document(pending):
        content = {'action': pending, 'eviction_hard_memory_bytes': recommendation.get('eviction_hard_memory_bytes')}
        if pending != 'keep':
            content['recommended_kubepods_memory_limit_bytes'] = recommendation.get('kubepods_memory_limit_bytes')
        return {'path': paths['decision'], 'content': content}

    memory = decision.get('memory') or {}
    applied = {'reserved_memory_bytes': memory.get('now_bytes') if memory.get('action') == 'keep'
               else memory.get('recommended_bytes'),
               'memory_headroom_bytes': recommendation.get('memory_headroom_bytes')}
    kept, pending = decision_document('keep'), decision_document(decision.get('action') or 'keep')
    return {'apply': {'on_success': [{'path': paths['applied'], 'content': applied}, kept], 'on_failure': [pending]},
            'undo': {'on_success': [pending, forget_applied], 'on_failure': [pending]},
            'keep': {'on_success': [kept], 'on_failure': []},
            'restore': restore}


# What the step does not wait for by a timeout of its own: the module's start, the write, systemctl's answers.
STEP_MARGIN_SECONDS = 120


def time_budget(options):
    """How long the detached on-node step may run (its ``detach``, a rollback's ``async``), in seconds.

    ``apply``: the node lock wait, a restart with its health wait and soak, and on failure a restore with its health
    check. ``restore`` (playbooks/rollback.yml): the lock wait, the restart, health and the soak.
    """
    lock, health, soak = (int(_option(options, name)) for name in (
        'node_lock_timeout_seconds', 'health_timeout_seconds', 'health_soak_seconds'))
    return {'apply': lock + 2 * health + soak + STEP_MARGIN_SECONDS,
            'restore': lock + health + soak + STEP_MARGIN_SECONDS}


def _reservation_fields(fields):
    return {f: (list(v) if isinstance(v, list) else dict(v)) for f, v in (fields or {}).items()
            if f in ('kubeReserved', 'systemReserved', 'reservedMemory') and v}


def path_of_drop_in(where):
    return _defaults.drop_in_path(where['drop_in_dir'])


def _diff(before, after, path, fmt):
    old = _config_edit.render_document(before, fmt) if before else ''
    new = _config_edit.render_document(after, fmt)
    return [line.rstrip('\n') for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                               path + ' (now)', path + ' (apply)', n=10)]


def fields_diff(current, requested, path):
    """The unified diff, as lines, of kubeReserved/systemReserved before and after a write into the main file.

    ``current`` holds ``kube_reserved``/``system_reserved`` as they are, ``requested`` as the step is given them. The
    after side is ``_config_edit.apply_changes``, the merge the step makes (map keys merged one by one, an
    equal quantity keeps its text). Where ``requested`` holds a ``reserved_memory``, reservedMemory too (``current``'s
    ``reserved_memory`` as it is). Empty when nothing would change.
    """
    current, written = current or {}, {option: requested[option] for option in WRITTEN_OPTIONS
                                       if requested.get(option) is not None}
    before = _reservation_fields({'kubeReserved': current.get('kube_reserved'),
                                  'systemReserved': current.get('system_reserved'),
                                  'reservedMemory': current.get('reserved_memory') if 'reserved_memory' in written
                                  else None})
    after, changed = _config_edit.apply_changes(before, written)
    return _diff(before, after, path, 'yaml') if changed else []


def config_diff(facts, where, apply):
    """(target path, the unified diff as lines) of what the on-node step writes (_config_change.plan).

    Into the main file, its own kubeReserved/systemReserved before and after. Into our drop-in, the whole drop-in,
    which is all ours (from nothing where there is none yet), in the format it has, else the main file's; only where
    the effective config changes, as the step writes only then. Lines are empty when nothing would change.
    """
    files = (facts.get('kubelet') or {}).get('reservation_files') or {}
    requested = {option: apply.get(option) for option in WRITTEN_OPTIONS if apply.get(option) is not None}
    current = dict(facts.get('current') or {}, reserved_memory=_measured_config(facts).get('reservedMemory'))
    if not where['drop_in_dir']:
        known = files.get(where['path'])
        if known is not None:  # the main file's own fields: the step edits that file, not the merged config
            current = {'kube_reserved': known['fields'].get('kubeReserved'),
                       'system_reserved': known['fields'].get('systemReserved'),
                       'reserved_memory': known['fields'].get('reservedMemory')}
        return where['path'], fields_diff(current, requested, where['path'])
    path = path_of_drop_in(where)
    if not fields_diff(current, requested, path):  # ours sorts last: the effective config would not change
        return path, []
    known = files.get(path) or {}
    before_fields = {f: v for f, v in (known.get('fields') or {}).items() if f in _config_edit.MANAGED_KEYS}
    after_fields, _changed = _config_edit.apply_changes(before_fields, requested)
    fmt = (known.get('format') if known.get('exists') else (files.get(where['path']) or {}).get('format')) or 'yaml'
    before = _config_edit.new_drop_in(before_fields) if known.get('exists') else None
    after = _config_edit.new_drop_in(after_fields)
    return path, [] if before == after else _diff(before, after, path, fmt)


def report(facts, where, apply, rolls):
    """What the report shows: the exact diff the on-node step would write (nothing where it writes nothing)."""
    if not rolls or not (facts.get('kubelet') or {}).get('config_path') or invalid_fields(facts):
        return {'target': None, 'config_diff': []}
    path, lines = config_diff(facts, where, apply)
    return {'target': path, 'config_diff': lines}


def summary(facts, action, where, managers=None):
    drop_in = (', drop-in dir ' + where['drop_in_dir']) if where['drop_in_dir'] else ''
    line = '%s (unit %s, config %s%s)' % (action, where['unit'], where['path'], drop_in)
    return [line] + list(_decision(facts).get('reasons') or []) + resource_manager_lines(managers or {})


def plan(facts, options, sources=REFUSAL_SOURCES):
    """Everything the role decides about a node (see the module docstring)."""
    action = _decision(facts).get('action') or 'keep'
    add_config_dir = _add_config_dir(facts, options)
    where = target(facts, options, add_config_dir)
    rolls = action != 'keep' or add_config_dir
    apply = apply_options(facts, options, where, add_config_dir)
    decided = {'action': action, 'add_config_dir': add_config_dir, 'apply': apply}
    managers = resource_managers(facts, apply)
    return {
        'refusals': refusals(facts, options, decided, sources),
        'action': action,
        'add_config_dir': add_config_dir,
        'rolls': rolls,
        'target': where,
        'apply': apply,
        'restore': restore_options(facts, where),
        'paths': state_paths(options),
        'status': status(facts, options),
        'time_budget_seconds': time_budget(options),
        'report': report(facts, where, apply, rolls),
        'resource_managers': managers,
        'summary': summary(facts, action, where, managers),
    }
