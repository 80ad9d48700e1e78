# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The rollout's batches: ``nodealloc_serial`` checked, and the batches apply.yml's serial play runs (issue 48).

``nodealloc_serial`` takes Ansible's forms of the ``serial`` keyword: a number, a percentage (``'10%'``) or a list of
them, growing batches ``[1, 5, '10%', '25%']`` whose last item repeats until every node had its batch. An AWX survey
gives text, so a string is also read as a comma-separated list (``'1, 5, 10%'``, brackets allowed). Each item must be a
whole number >= 1 or a whole percentage from 1 % to 100 %: anything else fails the run before any node is touched,
naming the item (Ansible itself reads ``'abc'`` as an error only when the serial play starts, after the measuring
play, and a ``0`` as "every host at once").

The batches are computed here, not by Ansible, so that they cover only the nodes that roll (a canary of one is one
node that changes, not a node that keeps its reservations) and, when ``nodealloc_classes`` names classes, restart
within each class in turn, each class with its own canary: the serial play gets the rolling hosts ordered class by
class and the batch sizes as whole numbers, which Ansible's own batching (``PlaybookExecutor._get_serialized_batches``)
then cuts exactly as listed. The arithmetic of a percentage is Ansible's (``ansible.utils.helpers.pct_to_int``): the
share of the class's rolling nodes, rounded down, at least 1.
"""

from __future__ import annotations

import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

_NUMBER = re.compile(r'^[0-9]+$')
_PERCENT = re.compile(r'^([0-9]+)\s*%$')


def _item(raw):
    """One serial item as Ansible takes it: an int >= 1, or 'N%' with 1 <= N <= 100."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise NodeallocError('nodealloc_serial: %r is not a batch size: give a whole number of nodes (5) or a '
                             'percentage (10%%)' % (raw,))
    text = str(raw).strip().strip('\'"').strip()
    percent = _PERCENT.match(text)
    if percent:
        share = int(percent.group(1))
        if not 1 <= share <= 100:
            raise NodeallocError('nodealloc_serial: %r is not a batch size: a percentage must be from 1%% to 100%%'
                                 % (raw,))
        return '%d%%' % share
    if _NUMBER.match(text) and int(text) >= 1:
        return int(text)
    raise NodeallocError('nodealloc_serial: %r is not a batch size: give a whole number of nodes >= 1 (5) or a '
                         'percentage from 1%% to 100%% (10%%); 100%% is every node in one batch' % (raw,))


def serial_items(value):
    """``nodealloc_serial`` as a list of batch sizes (ints and 'N%' strings); NodeallocError naming a bad item."""
    if isinstance(value, (list, tuple)):
        raws = list(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.startswith('[') and text.endswith(']'):
            text = text[1:-1]
        raws = [part for part in (piece.strip() for piece in text.split(',')) if part]
    else:
        raws = [value]
    if not raws:
        raise NodeallocError('nodealloc_serial: %r gives no batch size: give a number (1), a percentage (10%%) or a '
                             'list of them (1,5,10%%,25%%)' % (value,))
    return [_item(raw) for raw in raws]


def _size(item, count):
    """Ansible's pct_to_int(item, count, min_value=1)."""
    if isinstance(item, str):
        return int(int(item[:-1]) / 100.0 * count) or 1
    return item


def batch_sizes(items, count):
    """The sizes of the batches Ansible's serial list ``items`` cuts ``count`` hosts into (the last item repeats)."""
    sizes = []
    left = count
    index = 0
    while left > 0:
        size = min(_size(items[index], count), left)
        sizes.append(size)
        left -= size
        index = min(index + 1, len(items) - 1)
    return sizes


def plan(hosts, selections, value):
    """The serial play's hosts and batches from the measuring play's results.

    ``hosts``: the measured hosts in play order; ``selections``: each one's ``_reservations_selection``
    (``_class_selection.selection``: its class, whether it rolls, the classes named). Returns ``{'hosts': the rolling
    hosts, class by class (in the order nodealloc_classes names them; without a selection one group in play order),
    'serial': the batch sizes as ints (Ansible's serial list), 'batches': [{'class', 'hosts'}] in order,
    'batch_of': {host: its batch's number, from 1}, 'lines': one line per batch for the job output, 'given': the
    serial list as given (serial_items)}``.
    """
    items = serial_items(value)
    named = next((selection.get('names') for selection in selections if selection), None)
    rolling = [(host, selection.get('class')) for host, selection in zip(hosts, selections)
               if selection and selection.get('rolls')]
    groups = [(name, [host for host, cls in rolling if cls == name]) for name in named] if named else [(None, [host for host, dummy in rolling])]
    ordered, sizes, batches = [], [], []
    for name, members in groups:
        start = 0
        for size in batch_sizes(items, len(members)):
            batches.append({'class': name, 'hosts': members[start:start + size]})
            start += size
            sizes.append(size)
        ordered.extend(members)
    # No host rolls: the play has no host, and the serial keyword still needs a valid value.
    batch_of = {host: number for number, batch in enumerate(batches, 1) for host in batch['hosts']}
    lines = ['batch %d of %d%s: %s' % (number, len(batches), ' (class %s)' % batch['class'] if batch['class'] else '',
                                       ', '.join(batch['hosts'])) for number, batch in enumerate(batches, 1)]
    return {'given': items, 'hosts': ordered, 'serial': sizes or [1], 'batches': batches, 'batch_of': batch_of,
            'lines': lines}
