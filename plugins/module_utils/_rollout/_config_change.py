# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Plan and apply a change to a node's KubeletConfiguration (the logic of the kubelet_config module).

``plan`` reads and decides, and never writes; ``apply`` writes what ``plan``
decided through the one write path (_file_io). The effective configuration
(main file, drop-ins in the kubelet's order) is what is compared and validated,
whether the change goes to the main file or to our own drop-in.
"""

from __future__ import annotations

import hashlib
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _config_edit as edit, _config_file as files, _config_rules as rules, _node_allocatable)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError, NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._json_merge_patch import merge_patch


def _effective(main_config, drop_ins):
    merged = main_config
    for _path, data in drop_ins:
        merged = merge_patch(merged, data)
    return merged


def _allocatable(config, capacity_memory_bytes, capacity_millicores, hugepages_bytes=0):
    if capacity_memory_bytes is None:
        return None
    derived = _node_allocatable.compute_for_config(config, capacity_memory_bytes, capacity_millicores,
                                                   hugepages_bytes)
    result = _node_allocatable.as_quantities(derived)
    result['kubepods_memory_limit_bytes'] = derived['kubepods_memory_limit_bytes']
    return result


def string_map(value):
    """Ansible turns `pid: 1000` into an int; the kubelet's maps hold strings (None stays: it removes the key)."""
    if isinstance(value, dict):
        return {str(k): (None if v is None else str(v)) for k, v in value.items()}
    return value


def string_maps(params, keep=()):
    """The modules' parameters with every map as the kubelet's strings, except the options named in ``keep``."""
    return {k: (v if k in keep else string_map(v)) for k, v in params.items()}


def plan_on_node(params, node, missing_drop_in_dir_is_empty=False, check_cgroups=True):
    """``plan`` against what ``_probe.probe_node`` read of this node (capacity, kubepods use and margin).

    ``check_cgroups=False`` skips the check that enforced reserved cgroups exist (the on-node step, which never
    changes those fields, and whose rollback must not be refused by them).
    """
    return plan(params, node.get('capacity_memory_bytes'), node.get('capacity_millicores'),
                node.get('kubepods_working_set_bytes'), node.get('kubepods_margin_bytes', 0),
                node.get('hugepages_bytes', 0), node.get('cgroup_exists') if check_cgroups else None,
                missing_drop_in_dir_is_empty=missing_drop_in_dir_is_empty)


def diff(decision):
    """Ansible's diff of a plan: the target's text before and after (empty for a file removed)."""
    after = decision['text'] if decision['action'] == 'write' else (
        '' if decision['action'] == 'remove' else decision['before_text'] or '')
    return dict(before=decision['before_text'] or '', after=after,
                before_header=decision['target'], after_header=decision['target'])


def plan(params, capacity_memory_bytes=None, capacity_millicores=None, kubepods_working_set_bytes=None,
         kubepods_margin_bytes=0, hugepages_bytes=0, cgroup_exists=None, missing_drop_in_dir_is_empty=False):
    """Decide what to write. ``params`` are the module's parameters.

    ``missing_drop_in_dir_is_empty``: plan a ``drop_in_dir`` that does not exist yet as an empty one (check mode,
    when the run would create it first) instead of refusing it.

    Returns a dict: changed, target (path), action ('write'|'remove'|None), text (new content),
    before_text, previous/new reservations, allocatable_before/after, validation, minimal_edit.
    Raises ConfigError / ValidationError / MissingLibraryError before anything is written.
    """
    main_path = params['path']
    main_config, main_fmt, main_text = files.load_config(main_path)
    drop_in_dir = params.get('drop_in_dir')
    requested = {option: params.get(option) for option in edit.FIELDS if params.get(option) is not None}
    state = params.get('state') or 'present'

    drop_ins = []
    ours_path = None
    if drop_in_dir:
        exists = os.path.isdir(drop_in_dir)
        if not exists and not (missing_drop_in_dir_is_empty and not os.path.exists(drop_in_dir)):
            raise ConfigError(drop_in_dir, 'drop_in_dir is not a directory')
        ours_path = os.path.join(drop_in_dir, params.get('drop_in_name') or '50-nodealloc.conf')
        for path in files.drop_in_files(drop_in_dir) if exists else []:
            data, _fmt, _text = files.load_config(path)
            drop_ins.append((path, data))
    elif state == 'absent':
        raise ConfigError(main_path, 'state=absent removes our drop-in and needs drop_in_dir')

    before = _effective(main_config, drop_ins)
    result = {'target': main_path, 'action': None, 'text': None, 'before_text': main_text, 'minimal_edit': True}

    if ours_path is None:
        new_main, changed_fields = edit.apply_changes(main_config, requested)
        after = new_main
        if changed_fields:
            result['text'], result['minimal_edit'] = edit.render(main_text, main_fmt, new_main, changed_fields)
            result['action'] = 'write'
    else:
        ours_before = next((data for path, data in drop_ins if path == ours_path), None)
        result['target'] = ours_path
        result['before_text'] = files.read_file(ours_path) if ours_before is not None else ''
        others = [(path, data) for path, data in drop_ins if path != ours_path]
        if state == 'absent':
            ours_after = None
        else:
            fields = {f: v for f, v in (ours_before or {}).items() if f in edit.MANAGED_KEYS}
            ours_after, _changed = edit.apply_changes(fields, requested)
            ours_after = edit.new_drop_in(ours_after)
        ordered = sorted(others + ([(ours_path, ours_after)] if ours_after is not None else []))
        after = _effective(main_config, ordered)
        changed_fields = [f for f in edit.MANAGED_KEYS if not edit.field_equal(f, before.get(f), after.get(f))]
        if changed_fields:
            if ours_after is None:
                result['action'] = 'remove'
            else:
                result['action'] = 'write'
                # Our drop-in is all ours: written whole, in the format it had, else the main file's.
                fmt = files.detect_format(result['before_text']) if ours_before is not None else main_fmt
                result['text'] = edit.render_document(ours_after, fmt)
        if state == 'present':
            for option, value in requested.items():
                if not _holds(option, value, after.get(edit.FIELDS[option][0])):
                    raise ConfigError(ours_path, 'a drop-in later in lexical order overrides %s; name ours so '
                                      'that it sorts last (drop_in_name)' % edit.FIELDS[option][0])

    result['validation'] = rules.validate(after, capacity_memory_bytes, capacity_millicores,
                                          kubepods_working_set_bytes, kubepods_margin_bytes, hugepages_bytes,
                                          cgroup_exists)
    result['changed'] = result['action'] is not None
    result['changed_fields'] = changed_fields
    result['previous'] = edit.reservations(before)
    result['new'] = edit.reservations(after)
    result['allocatable_before'] = _allocatable(before, capacity_memory_bytes, capacity_millicores, hugepages_bytes)
    result['allocatable_after'] = _allocatable(after, capacity_memory_bytes, capacity_millicores, hugepages_bytes)
    return result


def _holds(option, requested, effective):
    field, kind = edit.FIELDS[option]
    if kind.endswith('_map'):
        effective = effective or {}
        return all((key not in effective) if value is None
                   else key in effective and edit.values_equal(kind, {key: effective[key]}, {key: value})
                   for key, value in requested.items())
    return edit.values_equal(kind, effective, requested)


def clean_up(decision):
    """Remove the temporary files killed runs left beside the target; call it under the directory lock."""
    return _file_io.remove_stale_temps(os.path.dirname(os.path.realpath(decision['target'])))


def apply(decision, backup=False, journal=None):
    """Carry out a plan: returns the backup's path or None. The one place a kubelet config is written or removed.

    The backup is whole and durable before the target is replaced; if the write then fails
    (a full disk), the backup is removed again so that nothing is left behind.
    ``journal(backup_file, created, written_sha256)``, when given, is called once the backup is durable and before
    the target is replaced (the on-node step records there what undoing the change needs): if it raises, the
    backup is removed and nothing is written. ``written_sha256`` is None for a removal.
    """
    backup_file = None
    target = decision['target']
    if decision['action'] is None:
        return None
    exists = os.path.exists(target)
    if backup and exists:
        backup_file = _file_io.make_backup(target)
    data = decision['text'].encode('utf-8') if decision['action'] == 'write' else None
    try:
        if journal is not None:
            journal(backup_file, not exists, None if data is None else hashlib.sha256(data).hexdigest())
        if data is None:
            _file_io.remove_durably(target)
        else:
            _file_io.write_atomic(target, data, follow_symlinks=True)  # the kubelet's config, where it lives
    except (OSError, NodeallocError):
        if backup_file:
            _file_io.remove_durably(backup_file)
        raise
    return backup_file
