# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Swap: the non-pod memory that sits in swap, and whether the node's daemons may swap at all.

Why it counts. A daemon whose pages were swapped out looks smaller in ``MemTotal - MemAvailable``: the pages left
RAM, but the daemon still owns them and the kernel brings each back into RAM when it is touched (a daemon waking
up, a GC pass), or all at once when swap is switched off for it (``swapoff``; or ``memory.swap.max=0`` on
system.slice, which stops further swap-out, after which reclaim can no longer free those pages). Reserving only
what is resident would hand that memory to the pods, which is the dangerous side; so the non-pod figure the
policy sizes from is the resident figure plus the non-pod memory that is swapped out (``non_pod_swap_bytes``).
The kubelet's eviction manager has no swap signal (KEP-2400, kubernetes/enhancements
keps/sig-node/2400-node-swap/README.md, "Swap Aware Eviction Manager", proposes one) and MemAvailable says nothing
about swap, so nothing else on the node accounts for it either.

How it is measured (``non_pod_swap_bytes``):

* Swapped out on the node: ``SwapTotal - SwapFree - SwapCached`` (/proc/meminfo). ``SwapTotal - SwapFree`` is
  every swap slot in use; ``SwapCached`` are pages that were read back and are in RAM *and* in swap (still in
  use in ``MemTotal - MemAvailable``, which counts them as resident), so they are not added twice.
* Of it, the pods': cgroup v2 ``memory.swap.current`` of kubepods, "the total amount of swap currently being
  used by the cgroup and its descendants" (Documentation/admin-guide/cgroup-v2.rst), less its swap cache
  (``memory.stat`` ``swapcached``, Linux 5.12+, commit b6038942480e "mm: memcg: add swapcache stat for memcg v2":
  "memory that is accounted against both the memory and the swap limit"). On cgroup v1, where the kernel
  accounts swap (``memory.memsw.usage_in_bytes`` exists only then: a kernel built with swap accounting and not
  booted with ``swapaccount=0``; Documentation/admin-guide/cgroup-v1/memory.rst), the pods' swap is
  ``memory.memsw.usage_in_bytes - memory.usage_in_bytes``.
* Non-pod swap = the node's swapped-out memory less the pods'. This rather than the sum of the non-pod groups'
  ``memory.swap.current``: the root cgroup has no such file, so what is charged there (and, on v1, in groups
  without swap accounting) would be missed, while the difference keeps everything that is not the pods' on the
  non-pod side. That includes tmpfs/shmem pages swapped out (charged to the group that first touched them;
  a daemon's /dev/shm, /run) and swap still charged to groups removed since. Where the pods' swap cache cannot
  be read, it is taken as large as it can be (``min(pods' swap, SwapCached)``), and where the pods' swap cannot
  be read at all (v1 without swap accounting), all swapped-out memory is counted as non-pod: in both cases the
  figure can only come out high, the safe side. zswap's compressed copies are in RAM and in ``SwapTotal -
  SwapFree`` both; counting them twice errs the same way.

Whether daemons may swap (``control``): on cgroup v2, system.slice's ``memory.swap.max`` ("max" by default:
unlimited) and the kubelet's and runtime's own groups'; the swap devices (/proc/swaps); the kubelet's
``failSwapOn`` (default true: the kubelet does not start with swap on) and ``memorySwap.swapBehavior``
(``NoSwap``, the default, or ``LimitedSwap``: a Burstable pod's containers get ``memory.swap.max`` = their memory
request / node memory x the swap available to pods, KEP-2400 "Steps to Calculate Swap Limit"; swap on cgroup v1 is
a non-goal there). With ``NoSwap`` the pods cannot swap "however, processes outside of Kubernetes' scope, such as
system daemons (including the kubelet itself!) can" (kubernetes.io/docs/reference/node/swap-behavior). Upstream
advises, for system-critical daemons, "configure the cgroup of the system slice to prevent swapping (i.e., set
memory.swap.max=0)" (kubernetes.io/docs/concepts/cluster-administration/swap-memory-management, "Good practice";
KEP-2400 "Best Practices: Disable swap for system critical daemons");
the systemd way to hold that setting is ``MemorySwapMax=0`` in a drop-in for system.slice (systemd.resource-control(5):
MemorySwapMax= sets ``memory.swap.max``, unified hierarchy only), proposed here, never written.
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

MIB = 1024 * 1024
DROP_IN_PATH = '/etc/systemd/system/system.slice.d/50-nodealloc-no-swap.conf'
DROP_IN_CONTENT = ('# Written by hand from nodealloc.kubelet\'s proposal: system daemons (the kubelet, the runtime) do not\n'
                   '# swap (kubernetes.io swap-memory-management, "Disable swap for system-critical daemons").\n'
                   '[Slice]\nMemorySwapMax=0\n')


def parse_swaps(text):
    """The swap areas in /proc/swaps (sizes there are KiB): a list of dicts, empty when swap is off."""
    devices = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        try:
            devices.append({'filename': fields[0], 'type': fields[1], 'size_bytes': int(fields[2]) * 1024,
                            'used_bytes': int(fields[3]) * 1024, 'priority': int(fields[4])})
        except ValueError:
            continue
    return devices


def read_swaps(proc_root='/proc'):
    """The node's swap areas; None when /proc/swaps cannot be read (a kernel without CONFIG_SWAP has none)."""
    try:
        # A swap file's name is any bytes its path holds (the kernel escapes only whitespace and '\\'): shown, so
        # replaced where not UTF-8, never a reason to stop.
        return parse_swaps(_procfs.read_file_text(os.path.join(proc_root, 'swaps'), 'backslashreplace'))
    except OSError:
        return None


def _read(path):
    try:
        return _procfs.read_file_text(path).strip()
    except OSError:
        return None


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _stat_value(directory, key, stat=None):
    """``key`` of the group's memory.stat: from ``stat`` where this pass parsed it already (_cgroup.memory_working_set's
    ``stats``), else read; None where the line is absent or not a number."""
    if stat is not None:
        return stat.get(key)
    text = _read(os.path.join(directory, 'memory.stat'))
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == key:
            return _int_or_none(fields[1])
    return None


def cgroup_swap(memory_root, version, relative, stat=None):
    """One group's swap as the kernel accounts it: ``swap_bytes`` (None when it does not), ``swapcached_bytes``
    (None when unknown), ``swap_max`` (v2: an int, or None for "max"), ``accounted_by`` (the files read).
    ``stat``: the group's memory.stat as this pass parsed it (_stat_value)."""
    directory = _procfs.joined(memory_root, relative)
    if version == 'v2':
        swap = _int_or_none(_read(_procfs.joined(directory, 'memory.swap.current')))
        limit_text = _read(_procfs.joined(directory, 'memory.swap.max'))
        return {'cgroup': '/' + relative, 'swap_bytes': swap,
                'swapcached_bytes': _stat_value(directory, 'swapcached', stat) if swap is not None else None,
                'swap_max': None if limit_text in (None, 'max') else _int_or_none(limit_text),
                'swap_max_file': limit_text is not None,
                'accounted_by': 'memory.swap.current' if swap is not None else None}
    memsw = _int_or_none(_read(_procfs.joined(directory, 'memory.memsw.usage_in_bytes')))
    usage = _int_or_none(_read(_procfs.joined(directory, 'memory.usage_in_bytes')))
    swap = max(0, memsw - usage) if memsw is not None and usage is not None else None
    # v1 memory.stat's total_swapcached: the hierarchy's swap cache (Linux 5.12+, as v2's swapcached).
    return {'cgroup': '/' + relative, 'swap_bytes': swap,
            'swapcached_bytes': _stat_value(directory, 'total_swapcached', stat) if swap is not None else None,
            'swap_max': None,
            'swap_max_file': False,
            'accounted_by': 'memory.memsw.usage_in_bytes - memory.usage_in_bytes' if swap is not None else None}


def non_pod_swap(meminfo, kubepods_swap):
    """Swapped-out non-pod memory from /proc/meminfo (bytes) and kubepods' ``cgroup_swap`` (None: no kubepods).

    Returns a dict: ``bytes`` (non_pod_swap_bytes) and the steps to it, with ``explanation`` lines.
    """
    total, free, cached = meminfo.get('SwapTotal', 0), meminfo.get('SwapFree', 0), meminfo.get('SwapCached', 0)
    swapped_out = max(0, total - free - cached)
    lines = ['swapped out on the node = SwapTotal - SwapFree - SwapCached = %d - %d - %d = %d B (%.1f MiB; '
             'SwapCached pages are also in RAM, so already in MemTotal - MemAvailable)'
             % (total, free, cached, swapped_out, swapped_out / MIB)]
    pods_swap = kubepods_swap.get('swap_bytes') if kubepods_swap else 0
    if kubepods_swap is None:
        pods_out = 0
        lines.append('no kubepods cgroup: all of it is non-pod')
    elif pods_swap is None:
        pods_out = 0
        lines.append('the kernel does not account kubepods\' swap (cgroup v1 without memory.memsw.*, e.g. '
                     'swapaccount=0): all of it is counted as non-pod, the safe side')
    else:
        pods_cached = kubepods_swap.get('swapcached_bytes')
        known = pods_cached is not None
        if not known:
            pods_cached = min(pods_swap, cached)
        pods_out = max(0, pods_swap - pods_cached)
        lines.append('pods swapped out = kubepods %s - its swap cache = %d - %d = %d B (%s)'
                     % (kubepods_swap['accounted_by'], pods_swap, pods_cached, pods_out,
                        'memory.stat swapcached' if known else 'swap cache unknown: taken as min(pods swap, SwapCached)'))
    result = max(0, swapped_out - pods_out)
    lines.append('non-pod swap = %d - %d = %d B (%.1f MiB), counted in non-pod memory: it comes back into RAM when '
                 'touched or when swap is taken away' % (swapped_out, pods_out, result, result / MIB))
    return {'bytes': result, 'swap_total_bytes': total, 'swap_free_bytes': free, 'swap_cached_bytes': cached,
            'swapped_out_bytes': swapped_out, 'kubepods_swap_bytes': pods_swap, 'kubepods_swapped_out_bytes': pods_out,
            'explanation': lines}


def measure(layout, kubepods, meminfo, component_cgroups, stats=None):
    """Non-pod swap and the swap of system.slice and of the kubelet's/runtime's own groups (v2 or v1).

    ``stats``: {group: parsed memory.stat} this pass read already (_cgroup.memory_working_set's)."""
    stats = stats or {}
    kubepods_swap = cgroup_swap(layout.memory_root, layout.version, kubepods, stats.get(kubepods)) if kubepods else None
    accounting = non_pod_swap(meminfo, kubepods_swap)
    groups = []
    for relative in ['system.slice'] + [c for c in component_cgroups if c != 'system.slice']:
        if os.path.isdir(os.path.join(layout.memory_root, relative)):
            groups.append(cgroup_swap(layout.memory_root, layout.version, relative, stats.get(relative)))
    accounting['groups'] = groups
    return accounting


def may_swap(layout, swap_groups, devices):
    """Whether swap is on and whether system.slice and each group of ``swap_groups`` (``measure``'s) may swap.

    The one home of the answer: the facts (``control``) and the sampler (_sample_once.run, every minute on every node)
    both call it, so the module's and the sampler's ``nodealloc_swap_system_slice_may_swap`` agree. It reads only
    what ``measure`` read (each group's ``memory.swap.max``) and ``devices`` (/proc/swaps): no ``systemctl show``,
    no process. The kernel's file is what holds the limit, whoever set it: for ``MemorySwapMax=`` "This controls the
    "memory.swap.max" control group attribute" (systemd.resource-control(5), systemd 252), and a runtime
    ``systemctl set-property`` or a write by hand lands there too. memory.swap.max: "Swap usage hard limit. If a
    cgroup's swap usage reaches this limit, anonymous memory of the cgroup will not be swapped out"
    (Documentation/admin-guide/cgroup-v2.rst); a swap charge must fit every ancestor's limit as well
    (mm/memcontrol.c ``__mem_cgroup_try_charge_swap`` -> ``page_counter_try_charge``, which walks the parents),
    so 0 on system.slice stops every unit under it.
    """
    by_cgroup = {g['cgroup']: g for g in swap_groups}
    system_slice = by_cgroup.get('/system.slice')
    swap_on = bool(devices)
    by_group = {}
    for group in swap_groups:
        if layout.version == 'v2':
            # memory.swap.max of a group and of system.slice above it: 0 anywhere on the path stops its swap-out.
            limits = [group['swap_max']] + ([system_slice['swap_max']] if system_slice and group is not system_slice else [])
            blocked = any(limit == 0 for limit in limits if limit is not None)
        else:
            blocked = False  # v1 has no per-group swap limit systemd sets (MemorySwapMax= is unified-only)
        by_group[group['cgroup']] = swap_on and not blocked
    return {'swap_on': swap_on, 'system_slice_may_swap': by_group.get('/system.slice', swap_on), 'may_swap_by_cgroup': by_group}


def control(layout, swap_groups, devices, kubelet_config):
    """Whether system.slice and the kubelet's/runtime's groups may swap (``may_swap``), what the kubelet says about
    swap, and the drop-in that stops the daemons swapping (proposed only where they may and systemd can hold it: cgroup v2)."""
    config = kubelet_config or {}
    memory_swap = config.get('memorySwap') or {}
    system_slice = {g['cgroup']: g for g in swap_groups}.get('/system.slice')
    swapping = may_swap(layout, swap_groups, devices)
    swap_on, slice_may_swap = swapping['swap_on'], swapping['system_slice_may_swap']
    propose = slice_may_swap and layout.version == 'v2'
    return {
        'devices': devices,
        'swap_on': swap_on,
        'system_slice_swap_max': 'max' if system_slice and system_slice['swap_max'] is None and system_slice['swap_max_file']
        else (system_slice or {}).get('swap_max'),
        'system_slice_may_swap': slice_may_swap,
        'may_swap_by_cgroup': swapping['may_swap_by_cgroup'],
        # KubeletConfiguration defaults: failSwapOn true; an empty swapBehavior is NoSwap (kubernetes.io "Linux Node
        # Swap Behaviors": "NoSwap (default)"; KEP-2400 "Swap as the default").
        'kubelet_fail_swap_on': config.get('failSwapOn', True),
        'kubelet_swap_behavior': memory_swap.get('swapBehavior') or 'NoSwap',
        'proposed_drop_in': {'path': DROP_IN_PATH, 'content': DROP_IN_CONTENT,
                             'then': 'systemctl daemon-reload (or: systemctl set-property system.slice MemorySwapMax=0)'}
        if propose else None,
        'note': None if propose or not slice_may_swap else
        'system.slice may swap, and cgroup v1 has no per-group swap limit systemd can set (MemorySwapMax= is '
        'unified-hierarchy only): turn swap off on the node, or move it to cgroup v2',
    }
