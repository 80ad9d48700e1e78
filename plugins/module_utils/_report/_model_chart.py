# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Per node class, non-pod memory against pods (issue 45 item 5): what the class model rests on, as the report draws it.

One small chart per class with a model (``_model_template.view``): its nodes' bucket medians and largest readings
(downsampled), the fitted line (intercept + slope x pods), the envelope (above every reading: what the reservation
takes at maxPods), EKS's line (11 MiB a pod + 255 MiB) and the figure at maxPods. Every text through ``html.escape``:
class names come from the inventory or from labels a node sets on itself.
"""

from __future__ import annotations

import html

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _model_template

MIB = 1 << 20
WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 380, 190, 52, 12, 34
CSS = ('.mp{fill:#2980b9;fill-opacity:.35}.ml{stroke:#2980b9;stroke-width:1.5;fill:none}'
       '.me{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:5 3;fill:none}.mk{stroke:#7f8c8d;stroke-width:1.5;'
       'stroke-dasharray:2 3;fill:none}.charts{display:flex;flex-wrap:wrap;gap:16px}'
       '.charts figure{width:%dpx;margin:0}') % WIDTH


def _t(value):
    """Escaped for text and for a double-quoted attribute alike (the class name also lands in aria-label)."""
    return html.escape(str(value), quote=True)


def chart(name, shown):
    """The SVG figure of one class (``shown``: ``_model_template.view``'s)."""
    model, max_pods = shown['model'], shown['max_pods']
    slope = model['slope_bytes_per_pod']
    values = [value for _pods, value in shown['points']]
    top_bytes = max(values + [shown['at_max_pods_bytes'], shown['eks_at_max_pods_bytes'], MIB])
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - TOP - BOTTOM

    def x_of(pods):
        return LEFT + plot_w * min(pods, max_pods) / float(max_pods)

    def y_of(value):
        return TOP + plot_h * (1 - value / float(top_bytes))

    def line(intercept, end, css):
        return '<path class="%s" d="M%.1f %.1fL%.1f %.1f"/>' % (css, x_of(0), y_of(intercept), x_of(max_pods), y_of(end))

    label = _t('non-pod memory against pods, ' + name)
    parts = ['<svg width="%d" height="%d" role="img" aria-label="%s">' % (WIDTH, HEIGHT, label)]
    parts.append('<path class="ax" d="M%d %dV%dH%d"/>' % (LEFT, TOP, TOP + plot_h, LEFT + plot_w))
    parts.extend('<circle class="mp" r="2" cx="%.1f" cy="%.1f"/>' % (x_of(pods), y_of(value))
                 for pods, value in shown['points'])
    parts.append(line(model['intercept_bytes'], model['intercept_bytes'] + slope * max_pods, 'ml'))
    parts.append(line(model['envelope_bytes'], shown['at_max_pods_bytes'], 'me'))
    parts.append(line(_model_template.EKS_BASE_BYTES, shown['eks_at_max_pods_bytes'], 'mk'))
    parts.append('<g class="m"><text x="%d" y="%d">0</text><text x="%d" y="%d">pods</text></g>'
                 '<text class="e" x="%d" y="%d">maxPods %d</text>'
                 % (LEFT, TOP + plot_h + 13, LEFT + plot_w / 2, TOP + plot_h + 27, LEFT + plot_w, TOP + plot_h + 13,
                    max_pods))
    parts.append('<g class="e"><text x="%d" y="%d">%.1f GiB</text><text x="%d" y="%d">0</text></g>'
                 % (LEFT - 4, TOP + 8, top_bytes / float(1 << 30), LEFT - 4, TOP + plot_h))
    parts.append('<text class="e" x="%d" y="%.1f">%.0f MiB at maxPods</text>' % (
        LEFT + plot_w - 4, y_of(shown['at_max_pods_bytes']) + 18, shown['at_max_pods_bytes'] / float(MIB)))
    parts.append('</svg>')
    line_text = _model_template.header_line(shown)
    return ('<figure><figcaption><b>%s</b></figcaption>%s<figcaption>%s</figcaption></figure>'
            % (_t(name), ''.join(parts), _t(line_text)))


def charts(classes):
    """The section for every class with a model ('' with none)."""
    figures = [chart(entry['name'], entry['model']) for entry in classes if entry.get('model')]
    if not figures:
        return ''
    return ('<h2>Per node class: non-pod memory against pods</h2><p>What each class\'s nodes spend outside their pods '
            'as their pods vary (their history lines\' <code>pods</code>), and the line the reservation takes at '
            'maxPods (docs/arithmetic.md, "The class model"). Dots: each node\'s median and largest readings per pod '
            'count; blue: the fitted line; red dashed: the envelope, above every reading (what the reservation takes '
            'at maxPods); grey dotted: EKS\'s 11 MiB a pod + 255 MiB.</p><div class="charts">%s</div>' % ''.join(figures))
