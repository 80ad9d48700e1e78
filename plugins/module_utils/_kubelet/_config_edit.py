# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Change reservation fields of a KubeletConfiguration: semantically, minimally, keeping format.

* Semantic comparison: quantities compare by value (``1Gi`` == ``1024Mi``,
  ``0.2`` == ``200m``), eviction percentages as the kubelet parses them,
  durations as Go parses them, ``enforceNodeAllocatable`` as a set. An equal
  value keeps the text already in the file.
* Minimal change: in YAML only the top-level blocks of changed keys are
  re-rendered; every other line, comment and key order stays byte for byte.
  JSON is re-serialised with its key order and indentation. The result is
  parsed again and must equal the intended config, or nothing is written.
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _eviction, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._duration import parse_duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._config_file import (
    API_VERSION, KIND, HAS_YAML, yaml)

# module option -> (KubeletConfiguration field, how its values compare)
FIELDS = {
    'kube_reserved': ('kubeReserved', 'quantity_map'),
    'system_reserved': ('systemReserved', 'quantity_map'),
    'eviction_hard': ('evictionHard', 'threshold_map'),
    'eviction_soft': ('evictionSoft', 'threshold_map'),
    'eviction_soft_grace_period': ('evictionSoftGracePeriod', 'duration_map'),
    'eviction_minimum_reclaim': ('evictionMinimumReclaim', 'threshold_map'),
    'enforce_node_allocatable': ('enforceNodeAllocatable', 'set'),
    'kube_reserved_cgroup': ('kubeReservedCgroup', 'string'),
    'system_reserved_cgroup': ('systemReservedCgroup', 'string'),
    # Written only with a reservation the static memory manager would otherwise refuse
    # (_resource_managers.reserved_memory_to_write). A list, so our drop-in's replaces the main file's whole list:
    # cmd/kubelet/app/server.go mergeKubeletConfigurations (kubernetes/kubernetes 293a53f2) merges each drop-in with
    # jsonpatch.MergePatch (RFC 7386), where any non-object value replaces (_json_merge_patch); what is written is
    # the whole list the sum needs.
    'reserved_memory': ('reservedMemory', 'reserved_memory'),
}
MANAGED_KEYS = tuple(field for field, _kind in FIELDS.values())


def _normal(kind, value):
    """A comparable form of one value, or the value itself when it does not parse (validation reports it)."""
    try:
        if kind == 'quantity_map':
            return _quantity.parse_quantity(str(value) if isinstance(value, (int, float)) else value)
        if kind == 'threshold_map':
            if isinstance(value, str) and value.endswith('%'):
                return ('percentage', _eviction.parse_percentage(value))
            return ('quantity', _quantity.parse_quantity(value))
        if kind == 'duration_map':
            return parse_duration(value)
        if kind == 'reserved_memory':
            return _reserved_memory_entries(value)
    except (ValueError, TypeError, AttributeError):
        return ('unparsed', value)
    return value


def _reserved_memory_entries(value):
    """reservedMemory as a set of (NUMA node, resource, exact quantity): the kubelet reads neither order nor the
    quantity's spelling."""
    if not isinstance(value, list):
        raise TypeError('reservedMemory is a list')
    return frozenset((entry.get('numaNode', 0), resource, _quantity.parse_quantity(str(text)))
                     for entry in value for resource, text in (entry.get('limits') or {}).items())


def values_equal(kind, old, new):
    if kind == 'reserved_memory':
        return _normal(kind, old) == _normal(kind, new)
    if kind in ('quantity_map', 'threshold_map', 'duration_map'):
        if not isinstance(old, dict) or not isinstance(new, dict) or set(old) != set(new):
            return old == new
        return all(_normal(kind, old[k]) == _normal(kind, new[k]) for k in old)
    if kind == 'set':
        if isinstance(old, list) and isinstance(new, list):
            return set(old) == set(new)
    return old == new


def field_equal(field, old, new):
    kind = dict(FIELDS.values())[field]
    return values_equal(kind, old, new)


def apply_changes(config, requested):
    """Return (new config, [changed fields]). ``requested`` maps option names to values.

    Map options merge key by key (a ``None`` value removes that key); an equal value keeps
    the existing text. Lists and strings replace.
    """
    new_config = copy.deepcopy(config)
    changed = []
    for option, value in requested.items():
        if value is None:
            continue
        field, kind = FIELDS[option]
        old = config.get(field)
        if kind.endswith('_map'):
            merged = dict(old) if isinstance(old, dict) else {}
            for key, item in value.items():
                if item is None:
                    merged.pop(key, None)
                elif key in merged and _normal(kind, merged[key]) == _normal(kind, item):
                    continue
                else:
                    merged[key] = item
            target = merged
        else:
            target = value
        if old is not None and values_equal(kind, old, target):
            continue
        if old is None and kind.endswith('_map') and not target:
            continue
        new_config[field] = target
        changed.append(field)
    return new_config, changed


_TOP_KEY = re.compile(r'''^(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s#'"\-?:{}\[\]&*!|>%@`][^:#]*?))\s*:(?:\s|$)''')


def _top_level_blocks(lines):
    """[(key, start, end)] of block-style top-level keys; None when the layout is not plain block style."""
    blocks = []
    seen_content = False
    for index, line in enumerate(lines):
        if not line.strip() or line.startswith((' ', '\t', '#', '- ')) or line.rstrip() == '-':
            seen_content = seen_content or line.startswith('- ')
            continue
        if line.startswith(('---', '...')):
            if seen_content:
                return None  # a second document: leave the file to a full re-render
            continue
        match = _TOP_KEY.match(line)
        if not match:
            return None
        seen_content = True
        key = next(g for g in match.groups() if g is not None)
        blocks.append([key, index, None])
    for position, block in enumerate(blocks):
        end = blocks[position + 1][1] if position + 1 < len(blocks) else len(lines)
        # Comments and blank lines just above the next key belong to that key.
        while end > block[1] + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith('#')):
            end -= 1
        block[2] = end
    return [tuple(b) for b in blocks]


if HAS_YAML:
    class _PlainDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """SafeDumper that writes subclasses of str, int, float, dict and list as their base type.

        What reaches a filter plugin carries the controller's own subclasses at every depth (ansible-core 2.16-2.18:
        AnsibleUnicode, AnsibleMapping, AnsibleUnsafeText; 2.19 on: tagged str/int/float/dict/list). SafeDumper
        looks representers up by exact type and refuses those ("cannot represent an object"); a multi-representer
        per base type covers keys and values at any depth here, the one place text is dumped, without importing
        Ansible. bool and None keep their exact-type representers (bool cannot be subclassed).
        """

    for _base, _represent in ((str, yaml.SafeDumper.represent_str), (int, yaml.SafeDumper.represent_int),
                              (float, yaml.SafeDumper.represent_float), (dict, yaml.SafeDumper.represent_dict),
                              (list, yaml.SafeDumper.represent_list)):
        _PlainDumper.add_multi_representer(_base, _represent)


def _dump_yaml(data):
    return yaml.dump(data, Dumper=_PlainDumper, default_flow_style=False, sort_keys=False, width=10**6, allow_unicode=True)


def render_yaml(original_text, new_config, changed_fields):
    """Re-render only the changed top-level keys; returns (text, minimal: bool)."""
    lines = original_text.splitlines(True)
    blocks = _top_level_blocks(lines)
    if blocks is not None and len({b[0] for b in blocks}) == len(blocks):
        by_key = {b[0]: b for b in blocks}
        replacements = []
        appended = []
        for field in changed_fields:
            rendered = _dump_yaml({field: new_config[field]}) if field in new_config else ''
            if field in by_key:
                _key, start, end = by_key[field]
                replacements.append((start, end, rendered))
            elif rendered:
                appended.append(rendered)
        for start, end, rendered in sorted(replacements, reverse=True):
            lines[start:end] = [rendered]
        text = ''.join(lines)
        if appended:
            if text and not text.endswith('\n'):
                text += '\n'
            text += ''.join(appended)
        try:
            if yaml.safe_load(text) == new_config:
                return text, True
        except yaml.YAMLError:
            pass  # the layout fooled the block finder: fall back to a full render
    return _dump_yaml(new_config), False


def _json_indent(text):
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(' ')
        if stripped and len(stripped) != len(line):
            return len(line) - len(stripped)
    return None


def render_json(original_text, new_config):
    indent = _json_indent(original_text)
    text = json.dumps(new_config, indent=indent, ensure_ascii=False)
    return text + ('\n' if original_text.endswith('\n') else '')


def render(original_text, fmt, new_config, changed_fields):
    """Text of the new config in the original's format: (text, minimal)."""
    if fmt == 'json':
        return render_json(original_text, new_config), True
    if not HAS_YAML:  # pragma: no cover - the loader refuses YAML before this without PyYAML
        raise RuntimeError('PyYAML is required to write YAML')
    return render_yaml(original_text, new_config, changed_fields)


def render_document(data, fmt):
    """A whole document in ``fmt`` ('json' with two-space indent, or block-style YAML)."""
    if fmt == 'json':
        return json.dumps(data, indent=2, ensure_ascii=False) + '\n'
    return _dump_yaml(data)


def new_drop_in(fields):
    """A drop-in document holding only the given fields, in a stable order."""
    document = {'apiVersion': API_VERSION, 'kind': KIND}
    for field in MANAGED_KEYS:
        if field in fields:
            document[field] = fields[field]
    return document


def reservations(config):
    """The reservation and eviction fields of a config, for returning to the user."""
    return {field: copy.deepcopy(config.get(field)) for field in MANAGED_KEYS}
