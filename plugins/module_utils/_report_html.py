# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report as one self-contained HTML page: inline CSS, SVG and a few lines of script, no network.

Layout, made to read at hundreds of nodes: a fleet table first (one row per node, nodes that could not be
measured first, then closest to a global OOM), then one folded ``<details>`` per node with its memory and
CPU charts, its history on time and memory axes, the config diff apply would write, and the arithmetic.
The table sorts by any column when its header is clicked, or when the page is opened with
``#sort=<column>`` (``#sort=host``, ``#sort=-headroom`` for descending); without script it stays in the
report's own order. Charts use CSS classes, not per-element styles, to keep the page small.
"""

from __future__ import annotations

import datetime
import html

MIB = 1024 * 1024
BAR_WIDTH, BAR_HEIGHT, LABEL_WIDTH = 360, 14, 170
PLOT_WIDTH, PLOT_HEIGHT, PLOT_LEFT, PLOT_BOTTOM = 420, 90, 60, 20
STYLE = (
    'body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}'
    'td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}'
    'th{background:#f0f0f0;cursor:pointer}.muted{color:#777;font-size:90%}'
    'tr.failed td,tr.unreachable td,.failed{color:#c0392b}td.high{background:#f5b7b1}td.medium{background:#fcf3cf}'
    'details{border-top:1px solid #ddd;padding:.3em 0}summary{cursor:pointer}'
    'pre{background:#f7f7f7;padding:.5em;font-size:85%;white-space:pre-wrap}'
    'ins{color:#1e8449;text-decoration:none}del{color:#c0392b;text-decoration:none}'
    'svg{display:block;margin:.3em 0}svg text{font-size:11px}rect{height:14px}.ax{stroke:#999;fill:none}.gr{stroke:#eee}'
    '.m{text-anchor:middle}.e{text-anchor:end}'
    '.cur{fill:#7f8c8d}.now{fill:#e67e22}.pk{fill:#d35400}.rec{fill:#27ae60}.cap{fill:#bdc3c7}.hl{fill:none;stroke:#d35400}'
)
# Sorts the fleet table by the clicked column (numbers by data-v, text by content); "#sort=col" or
# "#sort=-col" in the address does the same on load. The page reads fine with script disabled.
SCRIPT = (
    "function s(c,d){var t=document.getElementById('fleet'),b=t.tBodies[0],i=[].indexOf.call(t.rows[0].cells,"
    "document.getElementById('c-'+c));if(i<0)return;var r=[].slice.call(b.rows);r.sort(function(x,y){"
    "var p=x.cells[i],q=y.cells[i],a=p.dataset.v,z=q.dataset.v;var o=(a!==undefined&&z!==undefined)?a-z:"
    "p.textContent.localeCompare(q.textContent);return d?-o:o});r.forEach(function(e){b.appendChild(e)});"
    "t.dataset.sorted=(d?'-':'')+c}"
    "document.querySelectorAll('#fleet th').forEach(function(h){h.onclick=function(){var c=h.id.slice(2);"
    "s(c,document.getElementById('fleet').dataset.sorted===c)}});"
    "var m=/^#sort=(-?)(\\w+)$/.exec(location.hash);if(m)s(m[2],m[1]==='-');"
)
COLUMNS = (('host', 'host'), ('status', 'status'), ('decision', 'decision'),
           ('memory', 'memory reserved: now \u2192 recommended'), ('cpu', 'CPU reserved: now \u2192 recommended'),
           ('headroom', 'headroom left (MiB)'), ('risk', 'risk'))
RISK_RANK = {'unknown': 0, 'high': 1, 'medium': 2, 'low': 3}


def _e(value):
    """Escaped for an attribute value or text."""
    return html.escape(str(value), quote=True)


def _t(value):
    """Escaped for text content only (quotes stay as they are: shorter, and diffs read as YAML)."""
    return html.escape(str(value), quote=False)


def _mib(value):
    return '%.0f' % (value / MIB)


def _bar_chart(name, bars, unit_format):
    """Horizontal bars, one per (label, value, css class); value labels in the chart's unit."""
    scale = max([value for _label, value, _css in bars] + [1])
    height = len(bars) * (BAR_HEIGHT + 4) + 6
    parts = ['<svg width="%d" height="%d" aria-label="%s">' % (LABEL_WIDTH + BAR_WIDTH + 90, height, _e(name))]
    for index, (label, value, css) in enumerate(bars):
        y = 3 + index * (BAR_HEIGHT + 4)
        width = max(1, int(BAR_WIDTH * value / scale))
        # rect's height comes from the style sheet (rect{height:14px}), once for the page.
        parts.append('<text y="%d">%s</text><rect x="%d" y="%d" width="%d" class="%s"/>'
                     '<text x="%d" y="%d">%s</text>'
                     % (y + 11, _t(label), LABEL_WIDTH, y, width, css,
                        LABEL_WIDTH + width + 4, y + 11, unit_format(value)))
    parts.append('</svg>')
    return ''.join(parts)


def _memory_chart(node):
    current = (node.get('current') or {}).get('reserved_memory_bytes')
    bars = []
    if current is not None:
        bars.append(('reserved now', current, 'cur'))
    bars.append(('non-pod now', max(0, node['measured']['non_pod_memory_bytes']), 'now'))
    series = (node.get('history') or {}).get('series') or []
    if series:
        bars.append(('non-pod peak, history', max(v for _t, v in series), 'pk'))
    bars.append(('recommended', node['recommended_reserved_memory_bytes'], 'rec'))
    return _bar_chart('memory', bars, lambda v: '%s MiB' % _mib(v))


def _cpu_chart(node):
    bars = []
    if node.get('reserved_now_millicores') is not None:
        bars.append(('reserved now', node['reserved_now_millicores'], 'cur'))
    bars.append(('non-pod now (%gs sample)' % node['measured']['sample_seconds'],
                 node['measured']['non_pod_millicores'], 'now'))
    bars.append(('recommended', node['recommended_reserved_millicores'], 'rec'))
    if node.get('capacity_millicores'):
        bars.append(('capacity', node['capacity_millicores'], 'cap'))
    return _bar_chart('CPU', bars, lambda v: '%dm' % v)


def _utc(seconds, with_date):
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime('%m-%d %H:%M' if with_date else '%H:%M:%S')


def _history_chart(node):
    """Non-pod memory over time: a time axis (UTC) with four ticks and a MiB axis from 0 to the peak."""
    series = (node.get('history') or {}).get('series') or []
    if len(series) < 2:
        return '<p class="muted">History: %s.</p>' % ('one reading so far' if series else 'none')
    t0, t1 = series[0][0], series[-1][0]
    span = (t1 - t0) or 1
    top = max(v for _t, v in series) or 1
    left, bottom = PLOT_LEFT, PLOT_HEIGHT
    # One relative path (l dx dy ...) is about half the size of a polyline's absolute points.
    coordinates = [(int(round(left + PLOT_WIDTH * (t - t0) / span)), int(round(bottom - (PLOT_HEIGHT - 8) * v / top)))
                   for t, v in series]
    line = 'M%d %d' % coordinates[0] + 'l' + ' '.join(
        '%d %d' % (x - px, y - py) for (px, py), (x, y) in zip(coordinates, coordinates[1:]))
    parts = ['<svg width="%d" height="%d" aria-label="history">' % (left + PLOT_WIDTH + 40, PLOT_HEIGHT + PLOT_BOTTOM + 4),
             '<path class="ax" d="M%d 0V%dH%d"/>' % (left, bottom, left + PLOT_WIDTH)]
    with_date = span >= 86400
    parts.append('<path class="gr" d="%s"/><g class="m">'
                 % ''.join('M%d 0V%d' % (left + PLOT_WIDTH * index / 3, bottom) for index in range(1, 4)))
    for index in range(4):
        parts.append('<text x="%d" y="%d">%s</text>'
                     % (left + PLOT_WIDTH * index / 3, bottom + 14, _utc(t0 + span * index / 3, with_date)))
    parts.append('</g><g class="e">')
    for value in (0, top / 2, top):
        y = bottom - (PLOT_HEIGHT - 8) * value / top
        parts.append('<text x="%d" y="%d">%s</text>' % (left - 4, y + 4, _mib(value)))
    parts.append('</g><path class="hl" d="%s"/></svg>' % line)
    parts.append('<p class="muted">Non-pod memory (MiB) against time (UTC) over %.1f h, %d readings, peak %s MiB.</p>'
                 % (span / 3600.0, len(series), _mib(top)))
    return ''.join(parts)


def _diff(node):
    """The unified diff without its two file-name lines (the path is said once above it)."""
    lines = node.get('config_diff') or []
    if not lines:
        return '<p class="muted">Apply would not change kubeReserved or systemReserved.</p>'
    out = []
    for line in lines[2:]:
        tag = 'ins' if line.startswith('+') else 'del' if line.startswith('-') else None
        out.append('<%s>%s</%s>' % (tag, _t(line), tag) if tag else _t(line))
    return ('<p>What apply would write into %s:</p><pre class="diff">%s</pre>'
            % (_t(node.get('kubelet_config') or 'the kubelet config'), '\n'.join(out)))


def _row(index, node):
    status = node['status']
    cells = ['<td><a href="#n%d">%s</a></td>' % (index, _e(node['host'])), '<td>%s</td>' % _e(status)]
    if status != 'ok':
        cells.append('<td>-</td><td data-v="-1">-</td><td data-v="-1">-</td><td data-v="-1e18">-</td>')
    else:
        reserved = (node.get('current') or {}).get('reserved_memory_bytes')
        now_cpu = node.get('reserved_now_millicores')
        cells.append('<td>%s</td>' % _e(node.get('decision')))
        cells.append('<td data-v="%d">%s \u2192 %s</td>' % (
            node['recommended_reserved_memory_bytes'], '?' if reserved is None else _mib(reserved) + ' MiB',
            _mib(node['recommended_reserved_memory_bytes']) + ' MiB'))
        cells.append('<td data-v="%d">%s \u2192 %dm</td>' % (
            node['recommended_reserved_millicores'], '?' if now_cpu is None else '%dm' % now_cpu,
            node['recommended_reserved_millicores']))
        cells.append('<td data-v="%d">%s</td>' % (node['margin_bytes'], _mib(node['margin_bytes'])))
    cells.append('<td class="%s" data-v="%d">%s</td>' % (node['risk'], RISK_RANK[node['risk']], node['risk']))
    return '<tr class="%s">%s</tr>' % (status, ''.join(cells))


def _detail(index, node, rows):
    if node['status'] != 'ok':
        return ('<details id="n%d"><summary>%s: <span class="failed">%s</span></summary><p class="failed">%s</p>'
                '</details>' % (index, _e(node['host']), _e(node['status']), _e(node['error'])))
    out = ['<details id="n%d"><summary>%s: %s, risk %s</summary>'
           % (index, _e(node['host']), _e(node.get('decision')), node['risk']),
           '<p>Margin %s MiB (reserved now minus non-pod usage). %s</p>'
           % (_mib(node['margin_bytes']), _e(' '.join(node.get('decision_reasons') or []))),
           _memory_chart(node), _cpu_chart(node), _history_chart(node), _diff(node),
           '<table><tr><th><th>memory<th>cpu']
    for label, memory, cpu in rows(node):
        # </td> and </tr> are optional in HTML; leaving them out keeps 500 nodes' tables a fifth smaller.
        out.append('<tr><td>%s<td>%s<td>%s' % (_t(label), _t(memory), _t(cpu)))
    out.append('</table>')
    if node['not_found']:
        out.append('<p class="muted">Not found: %s</p>' % _t('; '.join(node['not_found'])))
    out.append('<pre>%s</pre></details>' % _t('\n'.join(node['explanation'])))
    return ''.join(out)


def render_html(report, rows):
    """``rows(node)`` gives the table rows shared with the text and Markdown renderings."""
    summary = report.get('summary') or {}
    counts = ', '.join('%d %s' % (n, k) for k, n in sorted((summary.get('risk') or {}).items()))
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Kubelet reservation report</title>',
           '<style>%s</style></head><body><h1>Kubelet reservation report</h1>' % STYLE,
           '<p class="muted">Generated %s; %d nodes (risk: %s). Nodes that could not be measured first, then the '
           'smallest margin between memory reserved now and non-pod memory measured. Click a header to sort.</p>'
           % (_e(report['generated_at']), len(report['nodes']), _e(counts or 'none')),
           '<table id="fleet"><thead><tr>%s</tr></thead><tbody>'
           % ''.join('<th id="c-%s">%s</th>' % (key, _e(title)) for key, title in COLUMNS)]
    out.extend(_row(index, node) for index, node in enumerate(report['nodes']))
    out.append('</tbody></table><h2>Nodes</h2>')
    out.extend(_detail(index, node, rows) for index, node in enumerate(report['nodes']))
    out.append('<script>%s</script></body></html>\n' % SCRIPT)
    return ''.join(out)
