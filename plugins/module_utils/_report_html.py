# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The fleet report as one self-contained HTML page: inline CSS and SVG, no script, no network."""

from __future__ import annotations

import html

MIB = 1024 * 1024
WIDTH, BAR_HEIGHT, LABEL_WIDTH = 640, 18, 210
COLOURS = {'current': '#7f8c8d', 'measured now': '#e67e22', 'history peak': '#d35400',
           'recommended': '#27ae60'}


def _bars(node):
    current = (node.get('current') or {}).get('reserved_memory_bytes')
    bars = []
    if current is not None:
        bars.append(('current reserved', current, COLOURS['current']))
    bars.append(('measured non-pod now', max(0, node['measured']['non_pod_memory_bytes']), COLOURS['measured now']))
    series = (node.get('history') or {}).get('series') or []
    if series:
        bars.append(('non-pod peak, history', max(v for _t, v in series), COLOURS['history peak']))
    bars.append(('recommended reserved', node['recommended_reserved_memory_bytes'], COLOURS['recommended']))
    for name, formula in sorted((node.get('formulas') or {}).items()):
        bars.append(('%s formula' % name, formula['reserved_memory_bytes'], '#2980b9'))
    return bars


def _chart(node):
    bars = _bars(node)
    scale = max(value for _label, value, _colour in bars) or 1
    height = len(bars) * (BAR_HEIGHT + 6) + 10
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="memory of %s">'
             % (WIDTH + LABEL_WIDTH + 90, height, html.escape(node['host']))]
    for index, (label, value, colour) in enumerate(bars):
        y = 5 + index * (BAR_HEIGHT + 6)
        width = max(1, int(WIDTH * value / scale))
        parts.append('<text x="0" y="%d" font-size="12">%s</text>' % (y + 13, html.escape(label)))
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                     % (LABEL_WIDTH, y, width, BAR_HEIGHT, colour))
        parts.append('<text x="%d" y="%d" font-size="12">%.0f MiB</text>'
                     % (LABEL_WIDTH + width + 4, y + 13, value / MIB))
    parts.append('</svg>')
    return ''.join(parts)


def _sparkline(series):
    if len(series) < 2:
        return '<p class="muted">History: one reading so far.</p>'
    t0, t1 = series[0][0], series[-1][0]
    top = max(v for _t, v in series) or 1
    points = ' '.join('%.1f,%.1f' % (400 * (t - t0) / ((t1 - t0) or 1), 60 - 55 * v / top) for t, v in series)
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="410" height="64" role="img" aria-label="history">'
            '<polyline fill="none" stroke="#d35400" stroke-width="1.5" points="%s"/></svg>'
            '<p class="muted">Non-pod memory over %.1f h (%d samples), peak %.0f MiB.</p>'
            % (points, (t1 - t0) / 3600.0, len(series), top / MIB))


def render_html(report, rows):
    """``rows(node)`` gives the table rows shared with the text and Markdown renderings."""
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Kubelet reservation report</title>',
           '<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0}'
           'td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}'
           '.muted{color:#777;font-size:90%}section{border-top:2px solid #eee;padding-top:1em;margin-top:1.5em}'
           '.failed{color:#c0392b}pre{background:#f7f7f7;padding:.5em;font-size:85%;white-space:pre-wrap}</style>',
           '</head><body><h1>Kubelet reservation report</h1>',
           '<p class="muted">Generated %s. Nodes closest to a global OOM first (smallest margin between memory '
           'reserved now and measured non-pod usage).</p>' % html.escape(report['generated_at'])]
    for node in report['nodes']:
        out.append('<section><h2>%s</h2>' % html.escape(node['host']))
        if node['status'] != 'ok':
            out.append('<p class="failed">Failed: %s</p></section>' % html.escape(str(node['error'])))
            continue
        margin = node['margin_bytes']
        out.append('<p>Decision: <b>%s</b>; margin %.0f MiB (reserved now minus non-pod usage).</p>'
                   % (html.escape(str(node.get('decision'))), (margin or 0) / MIB))
        out.append(_chart(node))
        out.append(_sparkline((node.get('history') or {}).get('series') or []))
        out.append('<table><tr><th></th><th>memory</th><th>cpu</th></tr>')
        for label, memory, cpu in rows(node):
            cells = tuple(html.escape(str(v)) for v in (label, memory, cpu))
            out.append('<tr><td>%s</td><td>%s</td><td>%s</td></tr>' % cells)
        out.append('</table>')
        for line in node['not_found']:
            out.append('<p class="muted">not found: %s</p>' % html.escape(line))
        out.append('<details><summary>Explanation</summary><pre>%s</pre></details></section>'
                   % html.escape('\n'.join(node['explanation'])))
    out.append('</body></html>\n')
    return ''.join(out)
