# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Figures as a person reads them in the report, and what each term means.

The JSON report keeps exact machine values (``*_bytes``, ``*_millicores``); everything a person reads
(text, Markdown, HTML) goes through here: memory in MiB below 1 GiB and in GiB (two decimals) above,
CPU in millicores (``m``, as Kubernetes writes them), so no rendering prints a raw byte count.
"""

from __future__ import annotations

import re

MIB = 1 << 20
GIB = 1 << 30

# Terms a reader meets in the report, each with what it means; the renderers print the meaning next to
# the first figure that uses the term (docs/arithmetic.md has the full derivations).
GLOSSARY = (
    ('uncorrected non-pod memory', 'MemTotal - MemAvailable - the pods\' working set, shown for comparison; it '
                                   'comes out too low when pods keep files hot in the page cache (MemAvailable counts '
                                   'that cache as free and the working set counts it again), which the lines below '
                                   'add back'),
    ('non-pod memory', 'memory in use outside the pods: the kubelet, the container runtime, systemd and every other '
                       'daemon, and the kernel\'s own memory; kubeReserved + systemReserved must cover it'),
    ('working set', 'a cgroup\'s memory usage minus its inactive file cache, the figure the kubelet evicts on'),
    ('MemAvailable', 'the kernel\'s estimate of memory it can hand out without swapping (/proc/meminfo)'),
    ('wmark_low', 'the kernel\'s low watermark: free memory it keeps back, read from /proc/zoneinfo'),
    ('kubeReserved', 'memory and CPU the kubelet keeps away from pods for Kubernetes\' own daemons'),
    ('systemReserved', 'memory and CPU the kubelet keeps away from pods for the operating system'),
    ('hard eviction', 'when free memory falls below this threshold the kubelet evicts pods at once'),
    ('allocatable', 'capacity - kubeReserved - systemReserved - hard eviction: what the scheduler may give to pods'),
    ('headroom', 'memory reserved above what was measured, to absorb the next climb before the kubelet restarts'),
    ('margin', 'memory reserved now minus non-pod memory measured now; below zero the node\'s own processes '
               'already use more than is reserved, so a spike ends in a kernel OOM kill instead of an eviction'),
    ('cold-start prior', 'with no history yet, a vendor formula\'s reservation is the floor until enough readings '
                         'show how the node climbs'),
    ('ceil_MiB', 'rounded up to a whole MiB'),
    ('reaction time', 'how often the role is meant to run (reservations_reaction_time, 24 h by default): a history '
                      'shorter than one has not yet seen the node\'s daily cycle, so it is not trusted alone'),
    ('formula', 'what a cloud vendor\'s published formula would reserve for a node of this size, for comparison'),
    ('PSI', 'pressure stall information: the share of time tasks waited for CPU or memory (/proc/pressure)'),
    ('memory.min', 'cgroup v2 hard protection: the group\'s memory up to this is never reclaimed; the kernel OOM-kills '
                   'elsewhere rather than take it (the kubelet writes it with the MemoryQoS feature gate)'),
)


def memory(value_bytes):
    """``726 MiB`` below 1 GiB, ``23.54 GiB`` from 1 GiB, ``-1.00 GiB`` below zero; None is ``-``."""
    if value_bytes is None:
        return '-'
    sign = '-' if value_bytes < 0 else ''
    size = abs(value_bytes)
    if size >= GIB:
        return '%s%.2f GiB' % (sign, size / float(GIB))
    if size and size < MIB:
        return '%s%.2f MiB' % (sign, size / float(MIB))
    return '%s%d MiB' % (sign, int(round(size / float(MIB))))


def signed_memory(value_bytes):
    """A change: ``+224 MiB``, ``-1.50 GiB``."""
    text = memory(value_bytes)
    return text if text.startswith('-') else '+' + text


def cpu(millicores):
    """Millicores as Kubernetes writes them: ``321m``; None is ``-``."""
    if millicores is None:
        return '-'
    return '%dm' % int(round(millicores))


def quantity_memory(text, parse):
    """A memory quantity string from a config (``256Mi``, ``1G``) in the report's units; ``parse`` gives bytes."""
    if text in (None, ''):
        return '-'
    try:
        return memory(parse(text))
    except (TypeError, ValueError, ArithmeticError):
        return str(text)


# "559742976 B (533.8 MiB)": the module's exact figure with its MiB beside it.
_BYTES_WITH_MIB = re.compile(r'([+-]?\d+) B \(-?\d+(?:\.\d+)? MiB\)')
# "+224395264 B", "67108864 B"
_BYTES = re.compile(r'([+-]?)(\d+) B\b')
# Bare operands of the explanation's memory arithmetic ("25276063744 - 24716320768 - 0"): no other integer
# the module prints reaches a MiB (cpu shares stop at 262144, millicores carry an "m", percentages a "%").
_BARE = re.compile(r'(?<![\w.])(\d{7,})(?![\w.%])')


def humanize(line):
    """One line of the module's explanation or decision reasons with every byte count in the report's units."""
    line = _BYTES_WITH_MIB.sub(lambda m: _memory_token(m.group(1)), line)
    line = _BYTES.sub(lambda m: _memory_token(m.group(1) + m.group(2)), line)
    return _BARE.sub(lambda m: memory(int(m.group(1))) if int(m.group(1)) >= MIB else m.group(1), line)


def _memory_token(text):
    value = int(text)
    return signed_memory(value) if text.startswith('+') else memory(value)


def terms_in(lines):
    """(term, meaning) of each glossary term the lines use, in the glossary's order; each line's first new terms.

    Returns a list parallel to ``lines``: for each line, the terms it is the first to mention, so a renderer
    can print the meaning right below the line where the reader first meets the term.
    """
    seen = set()
    out = []
    for line in lines:
        found = []
        for term, meaning in GLOSSARY:
            if term in seen:
                continue
            # "PoC non-pod memory" also contains "non-pod memory": the longer term explains it.
            if re.search(r'(?<![\w-])%s(?![\w])' % re.escape(term), line):
                found.append((term, meaning))
                seen.add(term)
        out.append(found)
    return out


def aligned(rows, right=(1, 2)):
    """Rows of cells as text lines whose columns line up: numbers (columns in ``right``) right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append('  '.join(cells).rstrip())
    return lines


def markdown_table(header, rows, right=(1, 2)):
    """A Markdown table whose source lines up too (read as plain text in a terminal or a diff)."""
    table = [header] + [tuple(row) for row in rows]
    widths = [max(3, max(len(row[i]) for row in table)) for i in range(len(header))]
    rule = tuple(('-' * (widths[i] - 1) + ':') if i in right else '-' * widths[i] for i in range(len(header)))
    lines = []
    for row in [table[0], rule] + table[1:]:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append('| %s |' % ' | '.join(cells))
    return lines


# Every value a report shows came from a node or a result file (issue 35): each rendering escapes it for where it
# lands, here, in one place (the HTML page has its own _e and _t).
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')
# A character that opens a block when it starts a line or a list item's text (CommonMark: ATX heading, block quote,
# list item, thematic break, setext underline, fenced code), or an ordered list marker (digits, then . or ).
_MARKDOWN_BLOCK_START = re.compile(r'^([0-9]*)([#>+*=~_.)-])')
_MARKDOWN_INLINE = re.compile(r'([\\|\[\]`])')


def plain_text(text):
    """``text`` for a terminal or AWX's output: control characters (a newline, ESC starting a colour) made visible
    as ``\\xNN``, so a value stays on its line and cannot recolour or rewrite the output."""
    return _CONTROL.sub(lambda m: '\\x%02x' % ord(m.group()) if ord(m.group()) < 256 else '\\u%04x' % ord(m.group()),
                        str(text))


def markdown_text(text, starts_block=False):
    """``text`` as Markdown inline text that renders as the same characters: HTML special characters as entities
    (no raw HTML), newlines and control characters as spaces (no new block), ``|`` escaped (no new table cell),
    the link, code and emphasis characters escaped; with ``starts_block`` (it begins a line or a list item's text),
    a block marker at its start escaped too."""
    text = _CONTROL.sub(' ', str(text)).strip()
    text = _MARKDOWN_INLINE.sub(r'\\\1', text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;'))
    if starts_block:
        text = _MARKDOWN_BLOCK_START.sub(r'\1\\\2', text, count=1)
    return text


def markdown_code(text):
    """``text`` inside a one-line code span: its own characters are literal there; newlines and backticks would end
    it (or the paragraph), so they become a space and ``'``."""
    return _CONTROL.sub(' ', str(text)).replace('`', "'")


def markdown_fence(lines):
    """A code fence longer than any run of backticks in ``lines``, so that none of them closes it."""
    longest = max([len(run) for line in lines for run in re.findall('`+', line)] + [2])
    return '`' * (longest + 1)


def word(value, fallback='other'):
    """``value`` when it is one short word (a status, a decision, a risk), else ``fallback``: the AWX summary counts by
    these and shows them as keys."""
    text = str(value)
    return text if re.match(r'^[A-Za-z0-9_.-]{1,40}$', text) else fallback
