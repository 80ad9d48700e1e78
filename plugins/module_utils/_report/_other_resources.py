# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The two reserved resources beside memory and CPU, ephemeral-storage and pid, as the report shows them.

Each comes from the facts module's recommendation (``recommendation.ephemeral_storage``: _policy/_ephemeral_storage;
``recommendation.pids``: _policy/_pids): the node's use outside the pods, what the maps reserve now, what is
recommended, allocatable now and with the recommendation (the kubelet's arithmetic, _node_allocatable), and whether
apply writes it (the options ``reserve_ephemeral_storage`` and ``reserve_pids``, off by default). ``summarise`` keeps
those figures in a node's report entry; ``rows`` gives them as cells for the text, Markdown and HTML renderings, one
row per resource, so the three say the same thing. A result from a module that measured neither gives no row.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units

HEADER = ('', 'used outside the pods', 'reserved now', 'recommended', 'allocatable now \u2192 recommended',
          'written by apply')
# Columns whose cells are figures (right-aligned in text and Markdown).
FIGURE_COLUMNS = (1, 2, 3, 4)
OPTION = {'ephemeral-storage': 'reserve_ephemeral_storage', 'pid': 'reserve_pids'}
# What a sentence calls each resource (the tables use the kubelet's names).
SPOKEN = {'ephemeral-storage': 'Disk (ephemeral-storage)', 'pid': 'PIDs (pid)'}


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ephemeral_storage(found):
    now = found.get('allocatable_now') or {}
    after = found.get('allocatable_recommended') or {}
    reserved_now = None
    if _int(now.get('kube_reserved_bytes')) is not None and _int(now.get('system_reserved_bytes')) is not None:
        reserved_now = now['kube_reserved_bytes'] + now['system_reserved_bytes']
    return {'resource': 'ephemeral-storage', 'unit': 'bytes', 'used': _int(found.get('non_pod_bytes')),
            'reserved_now': reserved_now, 'recommended': _int(found.get('recommended_bytes')),
            'allocatable_now': _int(now.get('allocatable_bytes')),
            'allocatable_recommended': _int(after.get('allocatable_bytes')),
            'written': bool(found.get('written')), 'reason': found.get('reason'),
            'lower_bound': found.get('recommended_bytes') is not None and not found.get('complete'), 'warnings': []}


def _pid(found):
    now = found.get('allocatable_now') or {}
    after = found.get('allocatable_recommended') or {}
    reserved_now = None
    if _int(now.get('kube_reserved')) is not None and _int(now.get('system_reserved')) is not None:
        reserved_now = now['kube_reserved'] + now['system_reserved']
    return {'resource': 'pid', 'unit': 'tasks', 'used': _int(found.get('peak_non_pod_tasks')),
            'reserved_now': reserved_now, 'recommended': _int(found.get('recommended')),
            'allocatable_now': _int(now.get('absolute')), 'allocatable_recommended': _int(after.get('absolute')),
            'written': bool(found.get('written')), 'reason': found.get('reason'), 'lower_bound': False,
            'warnings': [text for text in found.get('warnings') or [] if isinstance(text, str)]}


def summarise(recommendation):
    """[{resource, unit, used, reserved_now, recommended, allocatable_now, allocatable_recommended, written, reason,
    lower_bound, warnings}] for the resources the recommendation carries, ephemeral-storage first."""
    recommendation = recommendation if isinstance(recommendation, dict) else {}
    out = []
    for key, shape in (('ephemeral_storage', _ephemeral_storage), ('pids', _pid)):
        found = recommendation.get(key)
        if isinstance(found, dict):
            out.append(shape(found))
    return out


def _figure(entry, value):
    if value is None:
        return '-'
    return units.memory(value) if entry['unit'] == 'bytes' else '{:,}'.format(value)


def _written(entry):
    if entry['recommended'] is None:
        return 'no: %s' % (entry['reason'] or 'not measured')
    if entry['written']:
        return 'yes'
    return 'no: %s is false' % OPTION[entry['resource']]


def rows(node):
    """(resource, used outside the pods, reserved now, recommended, allocatable now -> recommended, written) per
    resource of the node's ``other_resources``, in the report's units; a use that is a lower bound (a disk walk that
    stopped at a limit) says so."""
    out = []
    for entry in node.get('other_resources') or []:
        used = _figure(entry, entry['used'])
        if entry['lower_bound'] and entry['used'] is not None:
            used = 'at least ' + used
        allocatable = '-' if entry['allocatable_now'] is None and entry['allocatable_recommended'] is None else (
            '%s \u2192 %s' % (_figure(entry, entry['allocatable_now']), _figure(entry, entry['allocatable_recommended'])))
        out.append((entry['resource'], used, _figure(entry, entry['reserved_now']),
                    _figure(entry, entry['recommended']), allocatable, _written(entry)))
    return out


def warnings(node):
    """The warnings a resource carries (pid: podPidsLimit x maxPods beyond the PIDs pods may have), as sentences."""
    return ['%s: %s' % (entry['resource'], text) for entry in node.get('other_resources') or []
            for text in entry['warnings']]
