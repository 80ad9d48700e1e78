# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Reading a node: the one reader of capacity and cgroup layout, and what kubelet_config needs to know about it.

``read_node`` is used by the facts module (_gather.measure), the sampler (_sample_once.run) and the config modules
(``probe_node``), so the three agree on capacity and on which kubepods group is the node-allocatable one.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_file, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _cgroup, _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import LayoutError, NodeallocError

# layout, driver and kubepods are None where no cgroup mount was found and the caller tolerates that (layout_error
# then says why); kubepods is None where the node has no kubepods group.
NodeReading = namedtuple('NodeReading', 'meminfo capacity_millicores layout driver kubepods layout_error')


def capacity_millicores():
    """CPU capacity as the kubelet reports it: every online CPU the process may see (cAdvisor's NumCores), x 1000."""
    return (os.cpu_count() or 1) * 1000


def read_node(cgroup_root=None, kubepods_cgroup=None, driver_hint=None, proc_root='/proc', tolerate_no_cgroups=False):
    """meminfo, CPU capacity, the cgroup layout and the node-allocatable group of this node.

    ``driver_hint`` is the kubelet's ``cgroupDriver``: where both ``kubepods.slice`` (systemd) and ``kubepods``
    (cgroupfs) exist, it picks the one the kubelet uses. A ``kubepods_cgroup`` that does not exist always raises
    LayoutError; a missing cgroup mount raises it unless ``tolerate_no_cgroups``.
    """
    meminfo = _procfs.read_meminfo(proc_root)
    try:
        layout = _cgroup.discover_layout(cgroup_root, proc_root)
        driver, kubepods = _cgroup.find_kubepods(layout, kubepods_cgroup, driver_hint)
    except LayoutError as exc:
        if kubepods_cgroup or not tolerate_no_cgroups:
            raise
        return NodeReading(meminfo, capacity_millicores(), None, None, None, str(exc))
    return NodeReading(meminfo, capacity_millicores(), layout, driver, kubepods, None)


def configured_driver(params):
    """The cgroupDriver of the config at ``params['path']`` with its drop-ins (None where it names none or cannot be read).

    Read before anything is written: the group the kubelet uses now is the one whose pods must still fit.
    """
    if not params.get('path'):
        return None
    try:
        config, _sources = _config_file.load_effective_config(params['path'], params.get('drop_in_dir'))
    except (NodeallocError, OSError, ValueError):
        return None  # the module's own read of the config says what is wrong with it
    driver = config.get('cgroupDriver')
    return driver if isinstance(driver, str) else None


def probe_node(params, proc_root='/proc'):
    """Capacity, huge pages and kubepods' working set, for the config modules' checks against the node."""
    margin = params.get('kubepods_margin') or '0'
    try:
        margin_bytes = _quantity.quantity_value(_quantity.parse_quantity(margin))
    except ValueError as exc:
        raise ValueError('kubepods_margin %r is not a quantity: %s' % (margin, exc))
    if margin_bytes < 0:
        raise ValueError('kubepods_margin must not be negative, got %r' % margin)
    node = read_node(params.get('cgroup_root'), params.get('kubepods_cgroup'), configured_driver(params), proc_root,
                     tolerate_no_cgroups=True)
    result = {
        'capacity_memory_bytes': node.meminfo['MemTotal'],
        'capacity_millicores': node.capacity_millicores,
        'hugepages_bytes': _procfs.read_hugepages_bytes(),
        'kubepods_working_set_bytes': None,
        'kubepods_margin_bytes': margin_bytes,
        'cgroup_exists': None,
        'notes': [],
    }
    if node.layout_error:
        result['notes'].append('kubepods-limit-above-usage: skipped, %s' % node.layout_error)
        result['notes'].append('enforce-reserved-cgroup: existence of the reserved cgroups not checked, %s'
                               % node.layout_error)
        return result
    layout = node.layout
    # The kubelet's cgroupManager.Exists, on the memory controller: a path under the controller's root.
    result['cgroup_exists'] = lambda relative: _cgroup.cgroup_exists(layout, relative)
    if node.kubepods is None:
        result['notes'].append('kubepods-limit-above-usage: skipped, no kubepods cgroup on this node')
    else:
        result['kubepods_working_set_bytes'] = _cgroup.memory_working_set(layout, node.kubepods)['working_set_bytes']
    return result
