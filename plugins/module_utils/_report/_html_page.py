# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report as one self-contained HTML page: inline CSS, SVG and a few lines of script, no network.

Layout, made to read at hundreds of nodes: the fleet view first (per node class, each node a dot placed by
what it reserves minus its own history's peak as a share of its memory, exceeded to the left of zero, coloured
by the same memory risk (``_memory_risk``), each dot a link to its node; then the classes' table), then the
fleet table (one row per node, nodes that could not be measured first, then by memory risk), then one folded ``<details>`` per node with its memory and
CPU charts (axes, units, capacity), its history chart (non-pod memory over time with the reservation now,
the recommendation and the vendors' formulas as lines, and a legend), the config diff apply would write,
the figures with what each is, and the arithmetic with the meaning of each term where it first appears (from
LAZY_DETAILS_FROM nodes on, each section's body is put in place when it first opens).
Every figure a person reads is in MiB/GiB or millicores (``_units``); exact bytes stay in the JSON.
The table sorts by any column when its header is clicked, or when the page is opened with
``#sort=<column>`` (``#sort=host``, ``#sort=-spare`` for descending); without script it stays in the
report's own order. Charts use CSS classes, not per-element styles, to keep the page small.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import html
import json
import math
import zlib

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _requests_fit
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk, _model_chart, _other_resources

MIB, GIB = units.MIB, units.GIB
BAR_WIDTH, BAR_HEIGHT, BAR_STEP, LABEL_WIDTH, VALUE_WIDTH = 380, 14, 20, 200, 190
PLOT_WIDTH, PLOT_HEIGHT, PLOT_LEFT, PLOT_TOP, PLOT_BOTTOM, LEGEND_WIDTH = 440, 170, 78, 10, 38, 260
FLEET_WIDTH, FLEET_LEFT, FLEET_BAND, FLEET_APART = 500, 190, 46, 70
# One colour per vendor formula line, in name order; dashed so they read as references, not measurements.
FORMULA_CLASSES = ('f0', 'f1', 'f2', 'f3', 'f4', 'f5')
STYLE = (
    'body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1150px}table{border-collapse:collapse;margin:.5em 0}'
    '.scroll{overflow-x:auto}'
    'td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}'
    'td{white-space:nowrap}td.w,th.w{text-align:left;color:#555;font-size:90%;white-space:normal}td.failed.w{max-width:26em;word-break:break-word}'
    'th{background:#f0f0f0}#fleet th{cursor:pointer}.muted{color:#666;font-size:90%}'
    'tr.failed td,tr.unreachable td,.failed{color:#c0392b}td.exceeded{background:#f5b7b1}td.thin{background:#fcf3cf}td.not_configured{background:#d6eaf8}'
    'details{border-top:1px solid #ddd;padding:.3em 0}summary{cursor:pointer}'
    'pre{background:#f7f7f7;padding:.5em;font-size:85%;white-space:pre-wrap}'
    'ins{color:#1e8449;text-decoration:none}del{color:#c0392b;text-decoration:none}'
    'ol.ex{font-family:monospace;font-size:95%;line-height:1.35}ol.ex div{font-family:sans-serif;font-size:95%;color:#555;margin:0 0 .3em 1.5em}'
    'figure{margin:.6em 0}figcaption{color:#555;font-size:90%;max-width:900px}'
    'svg{display:block}svg text{font-size:11px;fill:#222}rect{height:14px}.ax{stroke:#666;fill:none}'
    '.n{fill:#666}.gr{stroke:#e4e4e4}.m{text-anchor:middle}.e{text-anchor:end}.t{font-weight:bold}'
    '.cur{fill:#7f8c8d;stroke:#7f8c8d}.now{fill:#e67e22}.pk{fill:#d35400}.rec{fill:#27ae60;stroke:#27ae60}'
    '.cap{fill:#d5d8dc}.capl{stroke:#34495e;stroke-dasharray:2 2}.brk{stroke:#fff;stroke-width:3}'
    '.hl{fill:none;stroke:#d35400;stroke-width:2}.dot{fill:#d35400}'
    'line.cur,line.rec{stroke-width:2}line.f{stroke-width:1.5;stroke-dasharray:6 3}'
    '.f0{stroke:#2980b9;fill:#2980b9}.f1{stroke:#8e44ad;fill:#8e44ad}.f2{stroke:#b7950b;fill:#b7950b}'
    '.f3{stroke:#16a085;fill:#16a085}.f4{stroke:#c0392b;fill:#c0392b}.f5{stroke:#7d3c98;fill:#7d3c98}'
    'circle{fill-opacity:.55}circle.exceeded{fill:#c0392b}circle.thin{fill:#d4ac0d}circle.ok{fill:#27ae60}'
    'circle.not_configured{fill:#2471a3}circle.unknown{fill:#7f8c8d}'
    # The verdicts (issue 46): one row per class on the first screen, its action coloured, its command copyable.
    '#verdicts td{vertical-align:top;text-align:left;white-space:normal}#verdicts td:first-child,#verdicts td.act{white-space:nowrap}'
    '#verdicts td.act{font-weight:bold}'
    '.act.apply{color:#a04000}.act.fix{color:#c0392b}.act.observe{color:#2471a3}.act.keep{color:#1e8449}'
    'code.cmd{display:block;margin-top:.2em;font-size:90%;background:#f4f4f4;padding:1px 4px;overflow-wrap:anywhere}'
    # The classes' table fits 1,280 px: smaller type, headers that wrap, the reservation in a narrow wrapping column.
    '#classes{font-size:88%}#classes th{white-space:normal;vertical-align:bottom;padding:2px 4px}'
    '#classes td{padding:2px 4px}#classes td.w{max-width:14em;min-width:10em}#classes th.g{text-align:center}'
    # Nodes not measured, apart: the reason on one line, the full message folded under it.
    '#failed td{vertical-align:top;text-align:left}#failed td.w{max-width:60em}#failed details{border:0;padding:0}'
    '#failed pre{margin:.3em 0}'
) + _model_chart.CSS
# Sorts the fleet table by the clicked column (numbers by data-v, text by content); "#sort=col" or
# "#sort=-col" in the address does the same on load; opens the node a link points at; filters the table.
# The page reads fine with script disabled.
SCRIPT = (
    "function s(c,d){var t=document.getElementById('fleet'),b=t.tBodies[0],i=[].indexOf.call(t.rows[0].cells,"
    "document.getElementById('c-'+c));if(i<0)return;var r=[].slice.call(b.rows);r.sort(function(x,y){"
    "var p=x.cells[i],q=y.cells[i],a=p.dataset.v,z=q.dataset.v;var o=(a!==undefined&&z!==undefined)?a-z:"
    "p.textContent.localeCompare(q.textContent);return d?-o:o});r.forEach(function(e){b.appendChild(e)});"
    "t.dataset.sorted=(d?'-':'')+c}"
    "document.querySelectorAll('#fleet th').forEach(function(h){h.onclick=function(){var c=h.id.slice(2);"
    "s(c,document.getElementById('fleet').dataset.sorted===c)}});"
    "var m=/^#sort=(-?)(\\w+)$/.exec(location.hash);if(m)s(m[2],m[1]==='-');"
    # A link to a node (a dot of the fleet chart, a host in the table) opens its folded section.
    "function o(){var n=document.getElementById(decodeURIComponent(location.hash.slice(1)));"
    "if(n&&n.tagName==='DETAILS'){n.open=true;n.scrollIntoView()}}window.addEventListener('hashchange',o);o();"
    # The filter shows the rows whose text contains what is typed (any case); "#filter=text" does it on load.
    "function f(q){q=q.toLowerCase();[].forEach.call(document.querySelectorAll('#fleet tbody tr,#failed tbody tr'),"
    "function(r){r.hidden=q!==''&&r.textContent.toLowerCase().indexOf(q)<0})}"
    "var fi=document.getElementById('filter');fi.oninput=function(){f(fi.value)};"
    "var q=/^#filter=(.*)$/.exec(location.hash);if(q){fi.value=decodeURIComponent(q[1]);f(fi.value)}"
)
# On a page of LAZY_DETAILS_FROM nodes or more, a node's folded section is only its summary line: the bodies (charts,
# tables, arithmetic: about 11 KB a node, 55 MB at 5,000 nodes, which took Chromium 12-20 s to parse) are kept
# gzipped, LAZY_CHUNK nodes to a <script type="application/gzip"> in base64 (about 0.6 MB a thousand nodes), and the
# body is put in place when its section first opens (a click, a link to the node). DecompressionStream: Chromium 80,
# Firefox 113, Safari 16.4. Runs before SCRIPT, so a link to a node opened on load finds its body.
LAZY_DETAILS_FROM = 1000
LAZY_CHUNK = 100
LAZY_SCRIPT = (
    "var Z={};function z(k){if(!Z[k]){var t=atob(document.getElementById('z'+k).textContent),a=new Uint8Array(t.length);"
    "for(var j=0;j<t.length;j++)a[j]=t.charCodeAt(j);Z[k]=new Response(new Blob([a]).stream().pipeThrough("
    "new DecompressionStream('gzip'))).json()}return Z[k]}"
    "document.addEventListener('toggle',function(e){var d=e.target,i=+d.id.slice(1);if(!d.open||!d.hasAttribute('data-z'))"
    "return;d.removeAttribute('data-z');if(typeof DecompressionStream!=='function'){d.insertAdjacentHTML('beforeend',"
    "'<p>This browser cannot unfold a node of a page this large (it needs DecompressionStream); the JSON and Markdown "
    "reports have every node.</p>');return}z(Math.floor(i/%d)).then(function(b){d.insertAdjacentHTML('beforeend',b[i%%%d])"
    "})},true);" % (LAZY_CHUNK, LAZY_CHUNK)
)
COLUMNS = (('host', 'host'), ('status', 'status'), ('class', 'node class'), ('decision', 'decision'),
           ('memory', 'memory reserved: now \u2192 recommended'), ('cpu', 'CPU reserved: now \u2192 recommended'),
           ('risk', 'memory risk'), ('spare', 'reserved \u2212 history peak (share of memory)'))
# The categories a dot of the fleet chart can have (a node with a kubelet), worst first.
CHART_RISKS = tuple(name for name in _memory_risk.ORDER if name != _memory_risk.NO_KUBELET)


# status and risk are data (a module result, a slice report on the shared merge volume): they reach a class
# attribute only as one of these words (issue 35), and as text only escaped.
STATUS_CLASSES = ('ok', 'no_kubelet', 'unreachable', 'failed')


def _status_class(status):
    """The row's class: its status when it is one the style knows, else ``failed`` (any other status is a node
    someone must look at)."""
    return status if status in STATUS_CLASSES else 'failed'


def _risk_class(risk):
    """The risk as a class: one of _memory_risk's categories, else ``unknown``."""
    return risk if risk in _memory_risk.ORDER else _memory_risk.UNKNOWN


def _e(value):
    """Escaped for an attribute value or text."""
    return html.escape(str(value), quote=True)


def _t(value):
    """Escaped for text content only (quotes stay as they are: shorter, and diffs read as YAML)."""
    return html.escape(str(value), quote=False)


def _memory_tick(value_bytes):
    """Axis labels: ``0``, whole GiB without decimals (``2 GiB``), the rest as the report writes memory."""
    if not value_bytes:
        return '0'
    if value_bytes % GIB == 0:
        return '%d GiB' % (value_bytes // GIB)
    return units.memory(value_bytes)


def _memory_step(span_bytes):
    """A tick step for a memory axis: a power of two of MiB, giving 3 to 6 ticks."""
    step = MIB
    while span_bytes / step > 6:
        step *= 2
    return step


def _cpu_step(span_millicores):
    """A tick step for a CPU axis: 1, 2 or 5 times a power of ten millicores, giving 3 to 6 ticks."""
    step = 1
    while span_millicores / step > 6:
        step = step * 5 // 2 if str(step).startswith('2') else step * 2
    return step


def class_label(node_class):
    """``24 GiB, 2 CPUs``: a node class (memory rounded to whole GiB, CPU count) as a person reads it."""
    if not node_class:
        return 'unknown'
    return '%d GiB, %d CPU%s' % (node_class[0], node_class[1], '' if node_class[1] == 1 else 's')


def _bar_chart(name, bars, capacity, step, tick, axis_label):
    """Horizontal bars on an axis with ticks in the chart's unit, and the capacity as a labelled line.

    ``bars``: (label, value, css class); ``capacity``: the node's capacity in the same unit. When the
    capacity is more than twice the largest bar it would squeeze the bars to slivers, so the axis stops at
    the bars and the capacity is drawn past a break in the axis, its value written beside it.
    """
    largest = max([value for _label, value, _css in bars] + [1])
    on_scale = capacity and capacity <= 2 * largest
    top = capacity if on_scale else largest * 1.1
    step = step(top)
    top = max(top, step)
    plot = BAR_WIDTH - (0 if on_scale or not capacity else 40)
    height = len(bars) * BAR_STEP + 44

    def x_of(value):
        return LABEL_WIDTH + plot * min(value, top) / float(top)

    parts = ['<svg width="%d" height="%d" role="img" aria-label="%s">'
             % (LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH, height, _e(name))]
    axis_y = len(bars) * BAR_STEP + 4
    ticks = []
    value = 0
    while value <= top + 1e-9:
        ticks.append(value)
        value += step
    parts.append('<path class="gr" d="%s"/>' % ''.join('M%d 0V%d' % (x_of(v), axis_y) for v in ticks[1:]))
    for index, (label, value, css) in enumerate(bars):
        y = index * BAR_STEP + 3
        width = max(1, int(round(x_of(value) - LABEL_WIDTH)))
        # rect's height comes from the style sheet (rect{height:14px}), once for the page.
        parts.append('<text x="%d" y="%d" class="e">%s</text><rect x="%d" y="%d" width="%d" class="%s"/>'
                     '<text x="%d" y="%d">%s</text>'
                     % (LABEL_WIDTH - 6, y + 11, _t(label), LABEL_WIDTH, y, width, css,
                        LABEL_WIDTH + width + 4, y + 11, _t(tick(value))))
    parts.append('<path class="ax" d="M%d %dH%d"/><g class="m">' % (LABEL_WIDTH, axis_y, LABEL_WIDTH + plot))
    parts.extend('<text x="%d" y="%d">%s</text>' % (x_of(v), axis_y + 13, _t(tick(v))) for v in ticks)
    parts.append('<text x="%d" y="%d" class="t">%s</text></g>' % (LABEL_WIDTH + plot / 2, axis_y + 30, _t(axis_label)))
    if capacity:
        x = LABEL_WIDTH + (plot if on_scale else BAR_WIDTH - 4)
        if not on_scale:
            parts.append('<path class="brk" d="M%d %dl6 -8M%d %dl6 -8"/>' % (x - 20, axis_y + 4, x - 14, axis_y + 4))
        parts.append('<path class="capl" d="M%d 0V%d"/><text x="%d" y="%d">capacity %s%s</text>'
                     % (x, axis_y, x + 4, axis_y - 4, _t(tick(capacity)), '' if on_scale else ' (axis cut)'))
    parts.append('</svg>')
    return ''.join(parts)


def _memory_chart(node):
    current = (node.get('current') or {}).get('reserved_memory_bytes')
    bars = []
    if node['status'] == 'ok':
        bars.append(('reserved now', current or 0, 'cur'))
    bars.append(('non-pod now', max(0, node['measured']['non_pod_memory_bytes']), 'now'))
    series = (node.get('history') or {}).get('series') or []
    if len(series) > 1:
        bars.append(('non-pod peak in history', max(v for _t, v in series), 'pk'))
    bars.append(('recommended' if node['status'] == 'ok' else 'a kubelet would need',
                 node['recommended_reserved_memory_bytes'], 'rec'))
    chart = _bar_chart('memory', bars, node.get('capacity_memory_bytes'), _memory_step, _memory_tick,
                       'memory (MiB / GiB)')
    return ('<figure>%s<figcaption>Memory reserved for the system (kubeReserved + systemReserved) against the '
            'memory used outside the pods; above the reservation, a spike ends in a kernel OOM kill.</figcaption>'
            '</figure>' % chart)


def _cpu_chart(node):
    bars = []
    if node['status'] == 'ok':
        bars.append(('reserved now', node.get('reserved_now_millicores') or 0, 'cur'))
    bars.append(('non-pod now (%g s sample)' % node['measured']['sample_seconds'],
                 node['measured']['non_pod_millicores'], 'now'))
    bars.append(('recommended' if node['status'] == 'ok' else 'a kubelet would need',
                 node['recommended_reserved_millicores'], 'rec'))
    chart = _bar_chart('CPU', bars, node.get('capacity_millicores'), _cpu_step, units.cpu,
                       'CPU (millicores, 1000m = one CPU)')
    return ('<figure>%s<figcaption>CPU set aside for the system against the CPU used outside the pods over the '
            'sample.</figcaption></figure>' % chart)


def _utc(seconds, with_date):
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime('%m-%d %H:%M' if with_date else '%H:%M:%S')


def _history_lines(node):
    """(legend label, value in bytes, css class of the line): the reservation, the recommendation, the formulas."""
    lines = []
    if node['status'] == 'ok':
        reserved = (node.get('current') or {}).get('reserved_memory_bytes')
        lines.append(('reserved now', reserved or 0, 'cur'))
        lines.append(('recommended', node['recommended_reserved_memory_bytes'], 'rec'))
    else:
        lines.append(('a kubelet would need', node['recommended_reserved_memory_bytes'], 'rec'))
    for index, (name, formula) in enumerate(sorted((node.get('formulas') or {}).items())):
        lines.append(('%s formula' % name, formula['reserved_memory_bytes'],
                      'f ' + FORMULA_CLASSES[index % len(FORMULA_CLASSES)]))
    return lines


def _history_chart(node):
    """Non-pod memory over time with the reservations as horizontal lines; axes, ticks and a legend with values."""
    series = (node.get('history') or {}).get('series') or []
    if not series:
        series = [[0, max(0, node['measured']['non_pod_memory_bytes'])]]
    lines = _history_lines(node)
    t0, t1 = series[0][0], series[-1][0]
    span = t1 - t0
    peak = max(v for _t, v in series)
    step = _memory_step(max([peak] + [v for _l, v, _c in lines] + [1]) * 1.05)
    top = step
    while top < max([peak] + [v for _l, v, _c in lines]) * 1.02:
        top += step
    left, bottom = PLOT_LEFT, PLOT_TOP + PLOT_HEIGHT

    def x_of(moment):
        return left + (PLOT_WIDTH * (moment - t0) / span if span else PLOT_WIDTH / 2.0)

    def y_of(value):
        return bottom - PLOT_HEIGHT * value / float(top)

    legend_x = left + PLOT_WIDTH + 20
    height = max(bottom + PLOT_BOTTOM, PLOT_TOP + 16 * (len(lines) + 2))
    parts = ['<svg width="%d" height="%d" role="img" aria-label="history">' % (legend_x + LEGEND_WIDTH, height)]
    grid = ''
    labels = []
    value = 0
    while value <= top:
        grid += 'M%d %dH%d' % (left, y_of(value), left + PLOT_WIDTH)
        labels.append('<text x="%d" y="%d">%s</text>' % (left - 4, y_of(value) + 4, _t(_memory_tick(value))))
        value += step
    parts.append('<path class="gr" d="%s"/><g class="e">%s</g>' % (grid, ''.join(labels)))
    for label, value, css in lines:
        parts.append('<line class="%s" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>'
                     % (css, left, left + PLOT_WIDTH, y_of(value), y_of(value)))
    # One relative path (l dx dy ...) is about half the size of a polyline's absolute points.
    coordinates = [(int(round(x_of(t))), int(round(y_of(v)))) for t, v in series]
    if len(coordinates) > 1:
        parts.append('<path class="hl" d="M%d %dl%s"/>' % (coordinates[0] + (' '.join(
            '%d %d' % (x - px, y - py) for (px, py), (x, y) in zip(coordinates, coordinates[1:])),)))
    else:
        parts.append('<circle class="dot" r="4" cx="%d" cy="%d"/>' % coordinates[0])
    parts.append('<path class="ax" d="M%d %dV%dH%d"/><g class="m">' % (left, PLOT_TOP, bottom, left + PLOT_WIDTH))
    if span:
        with_date = span >= 86400
        parts.extend('<text x="%d" y="%d">%s</text>' % (left + PLOT_WIDTH * index / 3, bottom + 14,
                                                        _utc(t0 + span * index / 3, with_date)) for index in range(4))
        x_label = 'time (UTC), %.1f h, %d readings' % (span / 3600.0, len(series))
    else:
        x_label = 'one reading (no history recorded yet)'
    parts.append('<text x="%d" y="%d" class="t">%s</text></g>' % (left + PLOT_WIDTH / 2, bottom + 32, _t(x_label)))
    parts.append('<text class="t m" transform="translate(12 %d) rotate(-90)">non-pod memory</text>'
                 % (PLOT_TOP + PLOT_HEIGHT / 2))
    # The legend carries each line's value: lines of equal value (two vendors' formulas) overlap on the plot.
    legend = [('non-pod memory, %s %s' % ('peak' if len(series) > 1 else 'now', units.memory(peak)), 'hl', None)] + [
        ('%s %s' % (label, units.memory(value)), css, value) for label, value, css in lines]
    parts.append('<g class="legend">')
    for index, (label, css, _value) in enumerate(legend):
        y = PLOT_TOP + 8 + index * 16
        if css == 'hl':
            mark = '<path class="hl" d="M%d %dh22"/>' % (legend_x, y - 4)
        else:
            mark = '<line class="%s" x1="%d" x2="%d" y1="%d" y2="%d"/>' % (css, legend_x, legend_x + 22, y - 4, y - 4)
        parts.append('%s<text x="%d" y="%d">%s</text>' % (mark, legend_x + 28, y, _t(label)))
    parts.append('</g></svg>')
    return ('<figure>%s<figcaption>Non-pod memory over time against the reservation now, the recommendation and '
            'the cloud vendors\' published formulas for this node size (dashed).</figcaption></figure>'
            % ''.join(parts))


def _diff(node):
    """The unified diff without its two file-name lines (the path is said once above it)."""
    if node['status'] == 'no_kubelet':
        return ''  # said first in the node's section
    if not node.get('kubelet_config'):
        return '<p>No kubelet config file was found: apply refuses (the kubelet would ignore a config it does ' \
               'not load).</p>'
    lines = node.get('config_diff') or []
    if not lines:
        return '<p class="muted">Apply would not change kubeReserved or systemReserved.</p>'
    out = []
    for line in lines[2:]:
        tag = 'ins' if line.startswith('+') else 'del' if line.startswith('-') else None
        out.append('<%s>%s</%s>' % (tag, _t(line), tag) if tag else _t(line))
    return ('<p>What apply would write into %s:</p><pre class="diff">%s</pre>'
            % (_t(node.get('kubelet_config')), '\n'.join(out)))


def _class_order(node_class):
    """A node class as a number that sorts by memory, then CPUs (``24 GiB, 2 CPUs`` after ``8 GiB, 8 CPUs``)."""
    return node_class[0] * 1000 + node_class[1] if node_class else -1


def _class_name(node):
    """The node's class as the templates and the classes' table name it, with its size where the name is the
    inventory's."""
    size = class_label(node.get('node_class'))
    name = node.get('template_class')
    return size if not name or name == '%dgib-%dcpu' % tuple(node.get('node_class') or (0, 0)) else '%s (%s)' % (
        name, size)


def _spare_cell(node):
    """The node's memory to spare over its history's peak, as a share of its memory (sorts by the share)."""
    memory_risk = node.get('memory_risk') or {}
    share = memory_risk.get('spare_share')
    if share is None:
        return '<td data-v="-1e9">-</td>'
    return '<td data-v="%.6f">%s (%.1f %%)</td>' % (share, units.memory(memory_risk['spare_bytes']), share * 100)


def _row(index, node):
    """One fleet-table row; every numeric cell carries ``data-v`` so the table sorts on numbers, not on text."""
    status = node['status']
    # Any status but ok and no_kubelet is a node someone must look at (failed, unreachable, or a playbook's own).
    cells = ['<td><a href="#n%d">%s</a></td>' % (index, _e(node['host'])),
             '<td%s>%s</td>' % ('' if 'measured' in node else ' class="failed"', _e(status))]
    if status == 'ok':
        reserved = (node.get('current') or {}).get('reserved_memory_bytes')
        now_cpu = node.get('reserved_now_millicores')
        cells.append('<td data-v="%d">%s</td>' % (_class_order(node.get('node_class')), _t(_class_name(node))))
        cells.append('<td>%s</td>' % _e(node.get('decision')))
        # Sorted by the change apply would make (recommended minus now), not by the recommendation.
        cells.append('<td data-v="%d">%s \u2192 %s</td>' % (
            node['recommended_reserved_memory_bytes'] - (reserved or 0),
            '?' if reserved is None else units.memory(reserved), units.memory(node['recommended_reserved_memory_bytes'])))
        cells.append('<td data-v="%d">%s \u2192 %s</td>' % (
            node['recommended_reserved_millicores'] - (now_cpu or 0), '?' if now_cpu is None else units.cpu(now_cpu),
            units.cpu(node['recommended_reserved_millicores'])))
    elif status == 'no_kubelet':
        cells.append('<td data-v="%d">%s</td><td>nothing to apply</td><td data-v="0">-</td><td data-v="0">-</td>'
                     % (_class_order(node.get('node_class')), _t(_class_name(node))))
    else:
        # The reason in the row itself: a failed node's first question is why.
        cells.append('<td data-v="-1">-</td><td class="w failed">%s</td><td data-v="0">-</td><td data-v="0">-</td>'
                     % _t(node.get('status_reason')))
    cells.append('<td class="%s" data-v="%d">%s</td>' % (
        _risk_class(node['risk']), _memory_risk.rank(_risk_class(node['risk'])), _t(str(node['risk']).replace('_', ' '))))
    cells.append(_spare_cell(node))
    return '<tr class="%s">%s</tr>' % (_status_class(status), ''.join(cells))


def _explanation(node, explanation):
    """The arithmetic, one line each, with the meaning of each term under the line that first uses it."""
    out = ['<ol class="ex">']
    for line, terms in zip(explanation(node), units.terms_in(node['explanation'])):
        out.append('<li>%s%s' % (_t(line), ''.join('<div><b>%s</b>: %s</div>' % (_t(term), _t(meaning))
                                                   for term, meaning in terms)))
    out.append('</ol>')
    return ''.join(out)


def _detail(index, node, rows, decision_line, explanation):
    """A node's folded section as (its opening up to the summary's end, its body); ``</details>`` closes it."""
    if 'measured' not in node:
        return ('<details id="n%d"><summary>%s: <span class="failed">%s</span></summary>'
                % (index, _e(node['host']), _e(node['status'])),
                '<p class="failed">%s</p>' % _e(node['status_reason']))
    if node['status'] == 'no_kubelet':
        head = '%s: %s' % (_e(node['host']), _e(node['status_reason']))
    else:
        head = '%s: %s, memory risk %s' % (_e(node['host']), _e(node.get('decision')),
                                           _t(str(node['risk']).replace('_', ' ')))
    opening = '<details id="n%d"><summary>%s</summary>' % (index, head)
    out = []
    if node['status'] == 'no_kubelet':
        out.append('<p><b>%s.</b> The figures below are what this machine uses and what a kubelet here would '
                   'need.</p>' % _t(node['status_reason'].capitalize()))
    else:
        action, _sep, reasons = decision_line(node).partition(': ')
        out.append('<p><b>Decision: %s.</b> %s</p><p class="muted">Memory risk %s: %s.</p>'
                   % (_t(action), _t(reasons), _t(node['risk'].replace('_', ' ')), _t(node['memory_risk']['reason'])))
    out += [_memory_chart(node), _cpu_chart(node), _history_chart(node), _diff(node),
            '<table><tr><th><th>memory<th>cpu<th class="w">what it is']
    for label, memory, cpu, meaning in rows(node):
        # </td> and </tr> are optional in HTML; leaving them out keeps 500 nodes' tables a fifth smaller.
        out.append('<tr><td>%s<td>%s<td>%s<td class="w">%s' % (_t(label), _t(memory), _t(cpu), _t(meaning)))
    out.append('</table>')
    other = _other_resources.rows(node)
    if other:
        # ephemeral-storage and pid beside memory and CPU (_other_resources).
        # The last column is a sentence: it wraps (class w) where the figures do not.
        last = len(_other_resources.HEADER) - 1
        out.append('<table class="other"><tr>%s' % ''.join(
            '<th%s>%s' % (' class="w"' if index == last else '', _t(title))
            for index, title in enumerate(_other_resources.HEADER)))
        out.extend('<tr>%s' % ''.join('<td%s>%s' % (' class="w"' if index == last else '', _t(cell))
                                      for index, cell in enumerate(row)) for row in other)
        out.append('</table>')
        out.extend('<p class="muted">%s</p>' % _t(line) for line in _other_resources.warnings(node))
    if _requests_fit.describe(node.get('requests_fit')):
        out.append('<p>Requests fit: %s.</p>' % _t(_requests_fit.describe(node.get('requests_fit'))))
    if node['not_found']:
        out.append('<p class="muted">Not found: %s</p>' % _t('; '.join(node['not_found'])))
    out.append('<p>How the recommendation was worked out:</p>%s' % _explanation(node, explanation))
    return opening, ''.join(out)


def _lazy_details(sections):
    """The sections (_detail's pairs) as summaries that unfold their bodies on opening, and the gzipped bodies
    (LAZY_DETAILS_FROM).

    The bodies travel as base64 of gzipped JSON: nothing in them is markup until a section opens, and then only what
    _detail wrote, with every figure escaped."""
    summaries = [opening.replace('<details ', '<details data-z ', 1) + '</details>' for opening, _body in sections]
    bodies = [body for _opening, body in sections]
    chunks = []
    for number, first in enumerate(range(0, len(bodies), LAZY_CHUNK)):
        packed = gzip.compress(json.dumps(bodies[first:first + LAZY_CHUNK]).encode('utf-8'), 6, mtime=0)
        chunks.append('<script type="application/gzip" id="z%d">%s</script>'
                      % (number, base64.b64encode(packed).decode('ascii')))
    return summaries + chunks


def _share_step(span):
    """A tick step for the fleet chart's axis (a share of the node's memory): 1, 2, 5, 10, 20 or 25 %."""
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25):
        if span / step <= 8:
            return step
    return 0.5


def _percent(share):
    return '%+d %%' % int(round(share * 100)) if share else '0'


def _fleet_dots(nodes):
    """{(size for the order, class name, the class's nodes): [(index, node)]} of the measured nodes with a kubelet,
    one band per node class, named as the What to do and class tables name it (the templates' class: the inventory's
    name, else the size class) with the class's whole count beside the dots' (issue 46: one name and one count)."""
    classes, totals, bands = {}, {}, {}
    for index, node in enumerate(nodes):
        totals[node.get('template_class')] = totals.get(node.get('template_class'), 0) + 1
        if node['status'] == 'ok':
            classes.setdefault(node.get('template_class'), []).append((index, node))
    for name, dots in classes.items():
        size = max(tuple(node.get('node_class') or ()) for _i, node in dots)
        bands[(size, str(name or 'unknown'), totals[name])] = dots
    return bands


def _fleet_chart(nodes):
    """One band per node class, one dot per node with a kubelet, placed and coloured by its memory risk only.

    x is ``memory_risk.spare_share``: what the node reserves minus its history's peak, as a share of its memory
    (left of zero: exceeded). Nodes without that figure (reserving nothing, or reservations unknown) sit in a
    column of their own left of the axis. Each dot links to its node's section (the script opens it).
    """
    classes = _fleet_dots(nodes)
    if not classes:
        return ''
    shares = [node['memory_risk']['spare_share'] for dots in classes.values() for _i, node in dots
              if node['memory_risk'].get('spare_share') is not None]
    low, high = min(shares + [0]), max(shares + [0])
    step = _share_step(max(high - low, 0.01))
    low, high = step * math.floor(low / step + 1e-9), step * math.ceil(high / step - 1e-9)
    width = float(max(high - low, step))
    left = FLEET_LEFT + FLEET_APART + 16

    def x_of(share):
        return left + FLEET_WIDTH * (share - low) / width

    keys = sorted(classes)
    axis_y = FLEET_BAND * len(keys) + 4
    parts = ['<svg width="%d" height="%d" role="img" aria-label="fleet">' % (left + FLEET_WIDTH + 190, axis_y + 50)]
    ticks = []
    value = low
    while value <= high + 1e-9:
        ticks.append(value)
        value += step
    parts.append('<path class="gr" d="%s"/>' % ''.join('M%d 0V%d' % (x_of(v), axis_y) for v in ticks))
    parts.append('<path class="capl" d="M%.1f 0V%d"/>' % (x_of(0), axis_y))
    for band, key in enumerate(keys):
        y0 = band * FLEET_BAND + 4
        shown = len(classes[key])
        count = '%d nodes' % shown if shown == key[2] else '%d of %d nodes' % (shown, key[2])
        parts.append('<text x="%d" y="%d" class="e">%s</text><text x="%d" y="%d" class="e n">%s</text>'
                     % (FLEET_LEFT - 8, y0 + 18, _t(key[1]), FLEET_LEFT - 8, y0 + 32, count))
        for index, node in classes[key]:
            memory_risk = node['memory_risk']
            share = memory_risk.get('spare_share')
            # Spread within the band by a hash of the host, so 500 equal dots stay countable and stable.
            jitter = zlib.crc32(node['host'].encode('utf-8')) % (FLEET_BAND - 12)
            if share is None:
                x = FLEET_LEFT + 6 + zlib.crc32(node['host'][::-1].encode('utf-8')) % (FLEET_APART - 16)
            else:
                # A reservation passed by a few MiB is still passed: its dot stays visibly left of the zero line.
                x = min(x_of(share), x_of(0) - 2) if share < 0 else x_of(share)
            parts.append('<a href="#n%d"><circle class="%s" r="3.5" cx="%.1f" cy="%d" data-risk="%s"><title>%s: %s'
                         '</title></circle></a>' % (index, _risk_class(node['risk']), x, y0 + 6 + jitter,
                                                    _risk_class(node['risk']),
                                                    _t(node['host']), _t(memory_risk['reason'])))
    parts.append('<path class="ax" d="M%d %dH%d"/><g class="m">' % (left, axis_y, left + FLEET_WIDTH))
    parts.append('<text x="%d" y="%d">reserves</text><text x="%d" y="%d">nothing</text>'
                 % (FLEET_LEFT + FLEET_APART / 2, axis_y + 13, FLEET_LEFT + FLEET_APART / 2, axis_y + 25))
    parts.extend('<text x="%d" y="%d">%s</text>' % (x_of(v), axis_y + 13, _percent(v)) for v in ticks)
    parts.append('<text x="%d" y="%d" class="t">\u2190 exceeded: non-pod peak above the reservation | '
                 'reserved beyond the peak \u2192</text></g>' % (left + FLEET_WIDTH / 2, axis_y + 30))
    parts.append('<text x="%d" y="%d" class="t m">memory reserved minus its history\'s peak, as a share of the '
                 'node\'s memory</text>' % (left + FLEET_WIDTH / 2, axis_y + 44))
    legend_x = left + FLEET_WIDTH + 14
    parts.append('<g class="legend">')
    for number, name in enumerate(CHART_RISKS):
        parts.append('<circle class="%s" r="4" cx="%d" cy="%d"/><text x="%d" y="%d">%s</text>'
                     % (name, legend_x + 4, 10 + number * 16, legend_x + 12, 14 + number * 16,
                        _t(name.replace('_', ' '))))
    parts.append('</g></svg>')
    return ('<figure>%s<figcaption>One dot per measured node with a kubelet; click a dot to open its node. Right of '
            'the dashed zero line the node reserves more than its own history\'s peak of non-pod memory, left of it '
            'less. %s.</figcaption></figure>' % (''.join(parts), _t('; '.join(
                '%s: %s' % (name.replace('_', ' '), _memory_risk.MEANING[name]) for name in CHART_RISKS))))


def _fleet_view(report):
    """The fleet chart (risk per node class), then what to do per class."""
    # With no node to place (no kubelet found, none measured) the heading says so instead of standing over nothing.
    chart = _fleet_chart(report['nodes']) or (
        '<p class="muted">No measured node has a kubelet: no node to place on the chart.</p>')
    return ('<h2>Fleet: memory risk per node class</h2>' + chart + _classes_table(report.get('classes') or [])
            + _model_chart.charts(report.get('classes') or []))


def _reservation_text(recommended):
    """``kubeReserved`` + ``systemReserved`` (and the eviction threshold) as the class's templates carry them."""
    if not recommended:
        return 'no template: no node of the class has a kubelet'
    parts = []
    for key, title in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
        if recommended.get(key):
            parts.append('%s %s' % (title, ', '.join('%s %s' % item for item in sorted(recommended[key].items()))))
    if (recommended.get('eviction_hard') or {}).get('memory.available'):
        parts.append('evictionHard memory.available %s' % recommended['eviction_hard']['memory.available'])
    return '; '.join(parts)


def _gib(value_bytes):
    return '%.1f GiB' % (value_bytes / float(GIB))


# Soft hyphens (\u00ad) let the long words of a narrow numeric column's title break, so the table fits 1,280 px.
CLASS_COLUMNS = ('node class', 'nodes', 'recommended (what its templates carry)', 'in\u00adcrease', 'de\u00adcrease',
                 'keep', 'kubelet re\u00adstarts', 'given back to pods', 'taken from pods', 'on the cold-start floor',
                 'ex\u00adceeded', 'thin', 'not con\u00adfig\u00adured', 'ok', 'not mea\u00adsured',
                 'no kube\u00adlet')
# A header above the columns it names (first column, span): short column titles read under it.
CLASS_GROUPS = ((3, 4, 'what apply would do'), (7, 2, 'memory moved'), (10, 4, 'memory risk'))


def _class_header():
    """Two header rows: the groups (apply, memory moved, memory risk) over their short column titles."""
    top, column = [], 0
    for first, span, title in CLASS_GROUPS:
        if column < first:
            top.append('<th colspan="%d">' % (first - column) if first - column > 1 else '<th>')
        top.append('<th colspan="%d" class="g">%s' % (span, _t(title)))
        column = first + span
    top.append('<th colspan="%d">' % (len(CLASS_COLUMNS) - column))
    return '<thead><tr>%s<tr>%s</thead>' % (''.join(top), ''.join(
        '<th%s>%s' % (' class="w"' if index == 2 else '', _t(title)) for index, title in enumerate(CLASS_COLUMNS)))


def _classes_table(classes):
    """Per node class (``_fleet_classes``), what to do: the reservation, the restarts, the memory moved."""
    out = ['<h2>Per node class, in figures</h2><div class="scroll"><table id="classes">%s<tbody>' % _class_header()]
    for entry in classes:
        risk = entry.get('risk') or {}
        out.append('<tr><td>%s<td>%d<td class="w">%s<td>%d<td>%d<td>%d<td>%d<td>%s<td>%s<td>%d%s<td>%d<td>%d' % (
            _t(entry['name']), entry['nodes'], '-' if entry['nodes'] == entry['not_measured'] else _t(
                _reservation_text(entry.get('recommended'))), entry['increase'],
            entry['decrease'], entry['keep'], entry['kubelet_restarts'], _gib(entry['memory_given_back_bytes']),
            _gib(entry['memory_taken_bytes']), entry['on_cold_start_prior'],
            ''.join('<td>%d' % risk.get(name, 0) for name in (_memory_risk.EXCEEDED, _memory_risk.THIN,
                                                              _memory_risk.NOT_CONFIGURED, _memory_risk.OK)),
            entry['not_measured'], entry['no_kubelet']))
    out.append('</tbody></table></div><p class="muted">A node class is the inventory\'s <code>nodealloc_node_class</code> where '
               'it is set, else the memory in whole GiB and the CPU count; each class\'s templates carry the '
               'reservation shown. Increase and decrease are the nodes whose kubelet apply would restart (where a '
               'kubelet config file was found); the memory moved is what those restarts give back to the pods or '
               'take from them. The cold-start floor holds a node whose history does not yet span a reaction time.'
               '</p>')
    return ''.join(out)


# The verdict's action as the page says it (_verdict: apply, observe, keep, fix); its class colours it.
ACTION_WORDS = {'apply': 'apply now', 'observe': 'observe', 'keep': 'keep as it is', 'fix': 'fix first'}


def _verdict_action(verdict):
    """``apply now (major)``, ``observe until 2026-12-13``; None where the entry carries no verdict."""
    action = verdict.get('action')
    if not action:
        return None
    words = ACTION_WORDS.get(action, str(action))
    if verdict.get('until'):
        words += ' until %s' % str(verdict['until'])[:10]
    if verdict.get('severity'):
        words += ' (%s)' % verdict['severity']
    return words


def _verdicts(classes):
    """What to do, one row per node class, first on the page: the class, its verdict, why, and the command."""
    if not classes:
        return ''
    out = ['<h2>What to do</h2><table id="verdicts"><tbody>']
    for index, entry in enumerate(classes):
        verdict = entry.get('verdict') if isinstance(entry.get('verdict'), dict) else {}
        action = _verdict_action(verdict)
        by_action = verdict.get('nodes_by_action') if isinstance(verdict.get('nodes_by_action'), dict) else {}
        counts = ', '.join('%s %s' % (n, _t(k)) for k, n in sorted(by_action.items()) if n)
        css = verdict.get('action') if verdict.get('action') in ACTION_WORDS else 'none'
        out.append('<tr class="verdict" id="v-%d"><td><b>%s</b><br><span class="muted">%d node%s</span>'
                   '<td class="act %s">%s%s<td class="w">%s%s' % (
                       index, _t(entry['name']), entry['nodes'], '' if entry['nodes'] == 1 else 's', css,
                       _t(action or 'no verdict'),
                       '<br><span class="muted">%s</span>' % counts if counts else '',
                       _t(verdict.get('reason') or 'this report carries no verdict (made before verdicts): see the '
                          'figures below'),
                       '<code class="cmd">%s</code>' % _t(verdict['command']) if verdict.get('command') else ''))
    out.append('</tbody></table>')
    return ''.join(out)


# A failed node's reason in the table: its first line, cut here; the whole message is folded under it.
REASON_SHOWN = 90


def _one_line(text):
    line = ' '.join(str(text).split())
    return line if len(line) <= REASON_SHOWN else line[:REASON_SHOWN - 1].rstrip() + '\u2026'


def _failed_table(indexed):
    """The nodes that could not be measured, apart from the others: host, status, class, and a one-line reason with the
    whole message folded under it (a parser's message quoting a config runs to lines)."""
    if not indexed:
        return ''
    out = ['<h2>Not measured: %d node%s</h2><p class="muted">Nothing can be decided for these until they are '
           'reached and measured; the reason is each node\'s first line, the whole message under it.</p>'
           '<table id="failed"><thead><tr><th>host<th>status<th>node class<th class="w">why</thead><tbody>'
           % (len(indexed), '' if len(indexed) == 1 else 's')]
    for index, node in indexed:
        reason = str(node.get('status_reason'))
        short = _one_line(reason)
        why = _t(short) if short == reason else '<details><summary>%s</summary><pre>%s</pre></details>' % (
            _t(short), _t(reason))
        out.append('<tr class="%s"><td><a href="#n%d">%s</a><td class="failed">%s<td data-v="-1">%s<td class="w">%s'
                   % (_status_class(node['status']), index, _e(node['host']), _e(node['status']),
                      _t(node.get('template_class') or '-'), why))
    out.append('</tbody></table>')
    return ''.join(out)


def _history_sources(sentence):
    """Where the fleet's figures came from (_fleet_report.history_sentence), at the top, above the fleet view."""
    return '<p class="sources">%s</p>' % _t(sentence) if sentence else ''


def render_html(report, rows, decision_line, explanation, history_sentence=''):
    """``rows``, ``decision_line`` and ``explanation`` give the figures shared with the text and Markdown."""
    summary = report.get('summary') or {}
    counts = ', '.join('%d %s' % (n, k) for k, n in sorted((summary.get('risk') or {}).items()))
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Kubelet reservation report</title>',
           '<style>%s</style></head><body><h1>Kubelet reservation report</h1>' % STYLE,
           '<p class="muted">Generated %s; %d nodes (risk: %s). Memory in MiB and GiB, CPU in millicores '
           '(1000m = one CPU); the JSON report has the exact bytes.</p>'
           % (_e(report['generated_at']), len(report['nodes']), _e(counts or 'none')),
           _history_sources(history_sentence),
           # Every class's verdict next: the first screen (1,280 x 800) says what to do (issue 46).
           _verdicts(report.get('classes') or []),
           _fleet_view(report),
           _failed_table([(index, node) for index, node in enumerate(report['nodes']) if 'measured' not in node]),
           '<h2>Nodes</h2><p class="muted">The measured nodes by memory risk, worst first '
           '(within a risk, the least memory reserved over the history\'s peak, as a share of the node\'s memory), '
           'then nodes without a kubelet. Click a header to sort; type in the filter to show only the rows that '
           'contain the text.</p><p><label>Filter: <input id="filter" type="search"></label></p>'
           '<table id="fleet"><thead><tr>%s</tr></thead><tbody>'
           % ''.join('<th id="c-%s">%s</th>' % (key, _e(title)) for key, title in COLUMNS)]
    out.extend(_row(index, node) for index, node in enumerate(report['nodes']) if 'measured' in node)
    out.append('</tbody></table><h2>Each node</h2>')
    details = [_detail(index, node, rows, decision_line, explanation) for index, node in enumerate(report['nodes'])]
    lazy = len(details) >= LAZY_DETAILS_FROM
    out.extend(_lazy_details(details) if lazy else (opening + body + '</details>' for opening, body in details))
    out.append('<script>%s%s</script></body></html>\n' % (LAZY_SCRIPT if lazy else '', SCRIPT))
    return ''.join(out)
