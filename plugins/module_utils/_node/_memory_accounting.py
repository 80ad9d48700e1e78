# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Non-pod memory without counting the pods' page cache twice.

The PoC's figure is ``MemTotal - MemAvailable - working_set(kubepods)``. The pods'
working set (usage - inactive_file, cAdvisor's definition) still holds their
``active_file`` pages, and MemAvailable already counts most page cache as
available: the kernel's estimate (mm/page_alloc.c ``si_mem_available`` in Linux
6.1; mm/show_mem.c from 6.2) is

    MemFree - totalreserve_pages
    + pagecache - min(pagecache / 2, wmark_low)        pagecache = Active(file) + Inactive(file)
    + reclaimable - min(reclaimable / 2, wmark_low)    reclaimable = KReclaimable (reclaimable slab + misc)

where ``wmark_low`` is the sum of every zone's low watermark (the ``low`` lines
of /proc/zoneinfo, ``low_wmark_pages``). So of all page cache, MemAvailable counts
``pagecache - min(pagecache / 2, wmark_low)`` as available, and of reclaimable
slab likewise. Subtracting the pods' whole working set therefore takes their
active page cache out twice: once by MemAvailable, once by the working set, and
the non-pod figure comes out too low by that much, which is the dangerous
direction (a pod keeping a large file hot hides the node's own memory).

Here only the part of the pods' working set that MemAvailable does not already
count as available is subtracted: the working set less the pods' active file
pages (cgroup ``memory.stat``: v1 ``total_active_file``, v2 ``active_file``) and,
on v2, their reclaimable slab (``slab_reclaimable``), each capped at what
MemAvailable counts of its pool. The kernel's discount (the cache it assumes must
stay) is charged to the non-pod side: it is the kernel's need, whoever's pages
it keeps, and charging it there keeps the figure from falling when pods warm
their cache (when the pods' cache grows by C, MemAvailable and the working set
move by the same C while the discount is unchanged, or grows by C / 2 while
``pagecache / 2 < wmark_low``). It over-states non-pod memory by at most
``wmark_low`` (well under 1 % of a node's memory), the safe direction. The pods'
inactive file pages are outside the working set already. When /proc/zoneinfo
cannot be read, ``wmark_low`` is taken as 0: the correction is then its largest,
so the figure can only come out higher than with the true watermark.
"""

from __future__ import annotations

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs

MIB = 1024 * 1024


def parse_zoneinfo_low_pages(text):
    """Sum of every zone's low watermark in pages (the ``low`` lines of /proc/zoneinfo), or None if none."""
    total, seen = 0, False
    # Only the lines holding 'low' are looked at, a few of the file's two hundred lines per zone: each found by the
    # word, its '\n'-delimited stretch then split as str.splitlines splits the whole text (which also breaks at \r,
    # \x1c and others).
    start = text.find('low')
    while start >= 0:
        end = text.find('\n', start)
        end = len(text) if end < 0 else end
        for line in text[text.rfind('\n', 0, start) + 1:end].splitlines():
            if 'low' not in line:
                continue
            fields = line.split()
            if len(fields) == 2 and fields[0] == 'low':
                try:
                    total += int(fields[1])
                except ValueError:
                    return None
                seen = True
        start = text.find('low', end)
    return total if seen else None


def read_low_watermark_bytes(proc_root='/proc'):
    """The kernel's ``wmark_low`` in bytes, or None when /proc/zoneinfo cannot be read."""
    try:
        pages = parse_zoneinfo_low_pages(_procfs.read_file_text(os.path.join(proc_root, 'zoneinfo'), 'strict'))
    except OSError:
        return None
    if pages is None:
        return None
    return pages * os.sysconf('SC_PAGE_SIZE')


def counted_available(pool_bytes, wmark_low_bytes):
    """What si_mem_available counts as available of a pool (page cache, reclaimable slab)."""
    pool_bytes = max(0, pool_bytes)
    return pool_bytes - min(pool_bytes // 2, wmark_low_bytes or 0)


def non_pod_memory(meminfo, kubepods_memory, wmark_low_bytes, non_pod_swap_bytes=0, tool_bytes=0):
    """Both non-pod figures and the steps between them.

    ``meminfo``: parsed /proc/meminfo in bytes. ``kubepods_memory``: _cgroup.memory_working_set of
    kubepods (with ``active_file_bytes`` and, on v2, ``slab_reclaimable_bytes``). Returns a dict with
    ``poc_bytes`` (the PoC's figure), ``bytes`` (the corrected one, never below the PoC's less the tool's own processes),
    ``pods_counted_available_bytes`` (what is no longer subtracted) and ``explanation`` lines.
    ``non_pod_swap_bytes`` (_swap.non_pod_swap): non-pod memory swapped out, added to ``bytes`` (``resident_bytes``
    is the figure without it). ``tool_bytes`` (_tool_processes.find): the measuring tool's own processes' anonymous
    memory, left out of the resident figure (never below 0); ``measurement_tool_bytes`` is what was left out.
    """
    total = meminfo['MemTotal']
    available = meminfo['MemAvailable']
    pods_ws = kubepods_memory.get('working_set_bytes') or 0
    poc = total - available - pods_ws
    pagecache = meminfo.get('Active(file)', 0) + meminfo.get('Inactive(file)', 0)
    reclaimable = meminfo.get('KReclaimable', meminfo.get('SReclaimable', 0))
    watermark = wmark_low_bytes or 0
    cache_available = counted_available(pagecache, watermark)
    slab_available = counted_available(reclaimable, watermark)
    # The active file pages inside the working set, never more than the working set itself.
    pods_active_file = min(kubepods_memory.get('active_file_bytes') or 0, pods_ws)
    pods_slab = min(kubepods_memory.get('slab_reclaimable_bytes') or 0, max(0, pods_ws - pods_active_file))
    counted_cache = min(pods_active_file, cache_available)
    counted_slab = min(pods_slab, slab_available)
    counted = counted_cache + counted_slab
    with_tool = poc + counted
    tool_left_out = min(max(0, tool_bytes), max(0, with_tool))
    resident = with_tool - tool_left_out
    # Up to MemTotal: no reservation can exceed the node's RAM, and the history refuses a reading above MemTotal
    # (_history_store.validate), which would drop exactly the highest readings.
    swap_counted = min(non_pod_swap_bytes, max(0, total - resident))
    corrected = resident + swap_counted
    lines = [
        'uncorrected non-pod memory = MemTotal - MemAvailable - kubepods working set = %d - %d - %d = %d B (%.1f MiB)'
        % (total, available, pods_ws, poc, poc / MIB),
        'page cache the kernel counts as available in MemAvailable = page cache - min(page cache / 2, wmark_low) '
        '= %d - min(%d, %d) = %d B (the kernel\'s si_mem_available; page cache is Active(file) + Inactive(file) '
        'from /proc/meminfo, wmark_low from /proc/zoneinfo%s)'
        % (pagecache, pagecache // 2, watermark, cache_available,
           '' if wmark_low_bytes is not None else ', unreadable: taken as 0'),
        'pods active page cache (memory.stat) = %d B, of which MemAvailable already counts min(%d, %d) = %d B%s'
        % (pods_active_file, pods_active_file, cache_available, counted_cache,
           ('; pods reclaimable slab %d B, counted min(%d, %d) = %d B'
            % (pods_slab, pods_slab, slab_available, counted_slab)) if pods_slab else ''),
        'non-pod memory = uncorrected figure + the pods\' page cache MemAvailable already counts = %d + %d = %d B '
        '(%.1f MiB)'
        % (poc, counted, with_tool, with_tool / MIB),
    ]
    if tool_bytes:
        lines.append('less the measuring tool\'s own processes (Ansible\'s module interpreters, the sampler; anonymous '
                     'memory, _tool_processes) = %d - %d = %d B (%.1f MiB)'
                     % (with_tool, tool_left_out, resident, resident / MIB))
    if non_pod_swap_bytes:
        lines.append('non-pod memory with its swapped-out pages (_swap) = %d + %d = %d B (%.1f MiB)%s'
                     % (resident, swap_counted, corrected, corrected / MIB,
                        '' if swap_counted == non_pod_swap_bytes else
                        '; of the %d B in swap only what fits in MemTotal is counted: no reservation can be larger'
                        % non_pod_swap_bytes))
    return {
        'bytes': corrected,
        'poc_bytes': poc,
        'resident_bytes': resident,
        'non_pod_swap_bytes': non_pod_swap_bytes,
        'measurement_tool_bytes': tool_left_out,
        'pods_counted_available_bytes': counted,
        'pods_active_file_bytes': pods_active_file,
        'pods_slab_reclaimable_bytes': pods_slab,
        'page_cache_counted_available_bytes': cache_available,
        'wmark_low_bytes': wmark_low_bytes,
        'explanation': lines,
    }
