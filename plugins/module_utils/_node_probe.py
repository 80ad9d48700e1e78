# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What kubelet_config needs to know about the node: capacity and what pods use now."""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _cgroup, _procfs, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError


def probe_node(params, proc_root='/proc'):
    meminfo = _procfs.read_meminfo(proc_root)
    margin = params.get('kubepods_margin') or '0'
    try:
        margin_bytes = _quantity.quantity_value(_quantity.parse_quantity(margin))
    except ValueError as exc:
        raise ValueError('kubepods_margin %r is not a quantity: %s' % (margin, exc))
    if margin_bytes < 0:
        raise ValueError('kubepods_margin must not be negative, got %r' % margin)
    result = {
        'capacity_memory_bytes': meminfo['MemTotal'],
        'capacity_millicores': (os.cpu_count() or 1) * 1000,
        'hugepages_bytes': _procfs.read_hugepages_bytes(),
        'kubepods_working_set_bytes': None,
        'kubepods_margin_bytes': margin_bytes,
        'cgroup_exists': None,
        'notes': [],
    }
    try:
        layout = _cgroup.discover_layout(params.get('cgroup_root'), proc_root)
        _driver, kubepods = _cgroup.find_kubepods(layout, params.get('kubepods_cgroup'))
    except LayoutError as exc:
        if params.get('kubepods_cgroup'):
            raise
        result['notes'].append('kubepods-limit-above-usage: skipped, %s' % exc)
        result['notes'].append('enforce-reserved-cgroup: existence of the reserved cgroups not checked, %s' % exc)
        return result
    # The kubelet's cgroupManager.Exists, on the memory controller: a path under the controller's root.
    result['cgroup_exists'] = lambda relative: _cgroup.cgroup_exists(layout, relative)
    if kubepods is None:
        result['notes'].append('kubepods-limit-above-usage: skipped, no kubepods cgroup on this node')
    else:
        result['kubepods_working_set_bytes'] = _cgroup.memory_working_set(layout, kubepods)['working_set_bytes']
    return result
