# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The node's NUMA nodes and online CPUs, as the kubelet's machine info (cAdvisor) finds them.

cAdvisor (google/cadvisor utils/sysinfo ``GetNodesInfo``, utils/sysfs ``GetNodesPaths``) globs
``/sys/devices/system/node/node*[0-9]`` and reads each node's memory from its ``meminfo`` line
``Node <id> MemTotal: <n> kB``; the kubelet's memory manager refuses a reservedMemory NUMA node not among them.
The online CPUs are the kernel's list in ``/sys/devices/system/cpu/online`` (reservedSystemCPUs must be a subset).

``read`` returns ``{'nodes': [{'node': id, 'mem_total_bytes': n}], 'online_cpus': [ids]}``: lists, so the answer
survives the JSON round trip of the facts' basis. A machine without node directories (a kernel without NUMA) gives
``nodes`` empty: the caller then does not know the layout. A file that is there but not in the kernel's form raises
MeasurementError (a ParseError for the CPU list), never a guess.
"""

from __future__ import annotations

import os
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _resource_managers

NODE_DIR = re.compile(r'^node([0-9]+)$')
MEM_TOTAL = re.compile(r'^Node ([0-9]+) MemTotal:\s+([0-9]+) kB$')


def _read(path):
    try:
        with open(path, encoding='ascii') as handle:
            return handle.read(65536)
    except (OSError, UnicodeDecodeError) as exc:
        raise MeasurementError(path, 'a readable sysfs file', exc) from exc


def node_mem_total_bytes(path, node):
    """MemTotal of NUMA node ``node`` from its ``meminfo`` at ``path``, in bytes."""
    for line in _read(path).splitlines():
        match = MEM_TOTAL.match(line.strip())
        if match:
            if int(match.group(1)) != node:
                raise MeasurementError(path, 'the MemTotal line of node %d' % node, line.strip())
            return int(match.group(2)) * 1024
    raise MeasurementError(path, "a 'Node %d MemTotal: <n> kB' line" % node)


def read(sys_root='/sys'):
    """The NUMA nodes with their memory and the online CPUs (see the module docstring)."""
    base = os.path.join(sys_root, 'devices', 'system', 'node')
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        names = []
    except OSError as exc:
        raise MeasurementError(base, 'a readable directory', exc) from exc
    nodes = []
    for name in sorted(names, key=lambda n: (len(n), n)):
        match = NODE_DIR.match(name)
        if match:
            node = int(match.group(1))
            meminfo = os.path.join(base, name, 'meminfo')
            nodes.append({'node': node, 'mem_total_bytes': node_mem_total_bytes(meminfo, node)})
    online_path = os.path.join(sys_root, 'devices', 'system', 'cpu', 'online')
    online = _resource_managers.parse_cpu_list(_read(online_path)) if os.path.exists(online_path) else None
    return {'nodes': nodes, 'online_cpus': online}
