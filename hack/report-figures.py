"""The figures docs/reading-the-report.md and docs/getting-started.md quote, computed, and a check that the docs say them.

The figures come from the 500-node fixture's report (tests/integration/fleet_results.py: what node_reservation_facts
returns for generated nodes, put through ``_fleet_report.build_report`` as the reservation_report filter does), from
the code's defaults (``_option_specs.OPTIONS``, galaxy.yml, the playbooks) and from the report's own constants.
Each CLAIM is a doc's sentence with the figures in it; ``--check`` says which claim a doc no longer says, and which
number in a doc is neither in a claim nor on ALLOWED (each with its reason). tests/integration/test_docs_figures.py
runs the check in the suite: when the fixture or the code changes a figure, the doc fails until it says the new one.

Usage: PYTHONPATH=.build .venv/bin/python hack/report-figures.py [--check]
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))

from fleet_results import fleet  # noqa: E402

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs, _units  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _duration, _quantity  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (  # noqa: E402
    _fleet_report, _fleet_summary, _html_page, _memory_risk, _report_changes, _report_csv, _report_files, _short_summary,
    _verdict)
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _headroom  # noqa: E402

GIB = 1024.0 ** 3
FLEET_NODES = 500
SMALL_FLEET_NODES = 5
READING = 'docs/reading-the-report.md'
STARTING = 'docs/getting-started.md'


def _default(name):
    return _option_specs.OPTIONS[name]['default']


def _hours(window):
    return '%d h' % (_duration.parse_window(window) // 3600)


def _memory(value):
    return _units.memory(_quantity.quantity_value(_quantity.parse_quantity(str(value))))


def _whole(value):
    """A round constant as the docs write it: 1 GiB, 256 MiB."""
    return '%d GiB' % (value >> 30) if value % (1 << 30) == 0 else '%d MiB' % (value >> 20)


def _playbook_default(playbook, variable):
    with open(os.path.join(ROOT, 'playbooks', playbook), encoding='utf-8') as handle:
        return re.search(r'%s \| default\((\w+)\)' % variable, handle.read()).group(1)


def _galaxy():
    with open(os.path.join(ROOT, 'galaxy.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _class_label(name):
    """'8gib-2cpu' -> '8 GiB' (the size the docs name a class by)."""
    return '%s GiB' % name.split('gib')[0]


def _spread(nodes):
    shares = [node['memory_risk']['spare_share'] for node in nodes
              if (node.get('memory_risk') or {}).get('spare_share') is not None]
    return (round(100 * min(shares)), round(100 * max(shares))) if shares else (0, 0)


def _percent(value):
    return ('\u2212%d' % -value if value < 0 else '+%d' % value) + '\u00a0%'


def figures():
    """{name: text}: every figure the two docs quote, as they write it."""
    report = _fleet_report.build_report(fleet(FLEET_NODES))
    small = _fleet_report.build_report(fleet(SMALL_FLEET_NODES))
    summary = report['summary']
    classes = [entry for entry in report['classes'] if entry['name'] != 'not measured']
    by_size = sorted(classes, key=lambda entry: float(entry['name'].split('gib')[0]))
    smallest, largest = by_size[0], by_size[-1]
    nodes_of = {entry['name']: [n for n in report['nodes'] if n.get('template_class') == entry['name']]
                for entry in classes}
    low, high = _spread(nodes_of[smallest['name']])
    large_low, large_high = _spread(nodes_of[largest['name']])
    measured = [node for node in report['nodes'] if node['status'] == 'ok']
    # The node test_report_html.py's screenshot opens: the first with a change to write.
    index, example = next((number, node) for number, node in enumerate(report['nodes']) if node.get('config_diff'))
    galaxy = _galaxy()
    csv_text = _report_csv.render_csv(report)
    out = {
        'fleet.nodes': '%d' % FLEET_NODES,
        'fleet.classes': {1: 'one', 2: 'two', 3: 'three', 4: 'four'}.get(len(classes), str(len(classes))),
        'fleet.history_line': _fleet_report.history_sentence(summary),
        'fleet.on_floor': '%d' % summary.get('cold_start_floor', 0),
        'fleet.measured': '%d' % len(measured),
        'class.smallest': _class_label(smallest['name']),
        'class.smallest_name': smallest['name'],
        'class.smallest_cpus': smallest['name'].split('-')[1].replace('cpu', ''),
        'class.largest': _class_label(largest['name']),
        'class.smallest_spread': '%s to %s' % (_percent(low), _percent(high)),
        'class.largest_spread': '%s to %s' % (_percent(large_low), _percent(large_high)),
        'class.smallest_given_back': '%.1f GiB' % (smallest['memory_given_back_bytes'] / GIB),
        'class.smallest_decreases': '%d' % smallest['decrease'],
        'class.smallest_increases': '%d' % smallest['increase'],
        'class.smallest_nodes': '%d' % smallest['nodes'],
        'class.all_take': 'every class takes more memory from its pods than it gives back' if all(
            entry['memory_taken_bytes'] > entry['memory_given_back_bytes'] for entry in classes)
        else 'not every class takes more memory from its pods than it gives back',
        'class.most_increase': 'most nodes increase' if sum(entry['increase'] for entry in classes) * 2 > len(measured)
        else 'most nodes do not increase',
        'example.index': '%d' % index,
        'example.decision': _units.humanize(example['decision_reasons'][0]),
        'example.risk': example['memory_risk']['reason'],
        'page.lazy_from': '{:,}'.format(_html_page.LAZY_DETAILS_FROM),
        'summary.top': '%d' % _fleet_summary.TOP,
        # What the playbooks print: the filters' text_lines (_report_files), the short summary above three nodes.
        'job.lines_small': '%d' % len(_report_files.renderings(small)['text_lines']),
        'job.lines_fleet': '%d' % len(_report_files.renderings(report)['text_lines']),
        'short.max_lines': '%d' % _short_summary.MAX_LINES,
        'page.reason_shown': '%d' % _html_page.REASON_SHOWN,
        'short.riskiest': '%d' % _short_summary.RISKIEST,
        # KiB, not bytes: the history spans are floats of the fixture's clock, a few bytes more or less a run.
        'csv.kib': '%d' % round(len(csv_text.encode('utf-8')) / 1024.0),
        'csv.lines': '{:,}'.format(csv_text.count('\r\n')),
        # To ten thousand: the fixture's history spans follow the clock, and the JSON's line count moves by one or two.
        'json.lines': '{:,}'.format(int(round(_fleet_report.render_json(report).count('\n'), -4))),
        'changes.risk_since': '%d' % _report_changes.RISK_WORDS_SINCE,
        'changes.shown': '%d' % _report_changes.SHOWN,
        'changes.max_mib': '%d' % (_report_changes.MAX_PREVIOUS_BYTES >> 20),
        'changes.versions': '%s or %d' % (', '.join('%d' % v for v in _report_changes.READABLE_SCHEMA_VERSIONS[:-1]),
                                          _report_changes.READABLE_SCHEMA_VERSIONS[-1]),
        'default.reaction_time': _hours(_default('reaction_time')),
        'default.stabilization_window': _hours(_default('stabilization_window')),
        'default.history_window_days': '%d days' % (_duration.parse_window(_default('history_window')) // 86400),
        'default.headroom_rule': _default('memory_headroom_rule'),
        'default.headroom_percent': '%g\u00a0%%' % _default('memory_headroom_percent'),
        'default.headroom_min': _memory(_default('memory_headroom_min_bytes')),
        'default.headroom_max': _memory(_default('memory_headroom_max_bytes')),
        'default.eviction_memory': _memory(_defaults.effective_eviction_hard({})['memory.available']),
        'default.sampler_interval': {'1min': 'one reading a minute'}.get(_default('sampler_interval'),
                                                                         _default('sampler_interval')),
        'default.health_soak': '%d s' % _default('health_soak_seconds'),
        'default.health_timeout': '%d s' % _default('health_timeout_seconds'),
        'default.serial': _playbook_default('apply.yml', 'nodealloc_serial'),
        'default.max_fail': _playbook_default('apply.yml', 'nodealloc_max_fail_percentage'),
        'verdict.minor_bytes': _whole(_verdict.MINOR_BYTES),
        'verdict.minor_share': '%g\u00a0%%' % (100 * _verdict.MINOR_SHARE),
        'verdict.major_bytes': _whole(_verdict.MAJOR_BYTES),
        'verdict.major_share': '%g\u00a0%%' % (100 * _verdict.MAJOR_SHARE),
        'risk.max_reserved_share': '%g\u00a0%%' % (100 * _memory_risk.MAX_RESERVED_SHARE),
        'policy.warm_share': '%g\u00a0%%' % (100 * _headroom.WARM_SHARE),
        'galaxy.version': galaxy['version'],
        'galaxy.kubernetes_core': galaxy['dependencies']['kubernetes.core'].lstrip('>='),
    }
    return out


# (doc, sentence with {figure} names): what each doc says. Whitespace and Markdown's quote marks do not count.
CLAIMS = [
    (READING, 'renders the report of a {fleet.nodes}-node fleet ({fleet.classes} node classes'),
    (READING, '> {fleet.history_line}'),
    (READING, '(`reservations_reaction_time`, {default.reaction_time}) is raised to the **cold-start floor**'),
    (READING, 'else the size class: *{class.smallest_name}*'),
    (READING, 'so a {class.largest} class and an {class.smallest} class compare'),
    (READING, 'In the screenshot, the {class.smallest} class spreads from {class.smallest_spread}'),
    (READING, 'the {class.largest} class from {class.largest_spread}'),
    (READING, 'In the screenshot {class.all_take} ({class.most_increase}), the {class.smallest} class gives '
              '{class.smallest_given_back} back from its {class.smallest_decreases} decreases, and {fleet.on_floor} of '
              'the {fleet.measured} measured nodes rest on the cold-start floor'),
    (READING, 'opened as a dot\'s link opens it (`reservations.html#n{example.index}`)'),
    (READING, '**Decision** and its reasons in MiB/GiB and millicores (*{example.decision}*)'),
    (READING, 'the **memory risk** sentence (*{example.risk}*)'),
    (READING, 'On a page of {page.lazy_from} nodes or more'),
    (READING, 'under the `{default.headroom_rule}` rule by default (`reservations_memory_headroom_rule`)'),
    (READING, 'at least `reservations_memory_headroom_min_bytes` ({default.headroom_min}) and at most '
              '`reservations_memory_headroom_max_bytes` ({default.headroom_max})'),
    (READING, 'at least `reservations_memory_headroom_percent` ({default.headroom_percent}) of the peak'),
    (READING, 'beyond the {default.eviction_memory} eviction threshold too'),
    (READING, '`reservations_stabilization_window` ({default.stabilization_window})'),
    (READING, '**Not measured** (at most {summary.top}, with their reason); **The {summary.top} riskiest nodes**'),
    (READING, '{job.lines_small} lines for the 5-node fleet, {job.lines_fleet} for the {fleet.nodes}-node one'),
    (READING, 'the short summary: at most {short.max_lines} lines, for a chat message or a ticket'),
    (READING, 'the reason on one line (its first {page.reason_shown} characters)'),
    (READING, 'At most {short.max_lines} plain lines, the same at five nodes as at five thousand'),
    (READING, 'The suite reads the {fleet.nodes}-node fixture\'s CSV back'),
    (READING, 'that CSV is about {csv.kib} KiB in {csv.lines} lines (the header and one line per node), where the JSON '
              'is about {json.lines} lines'),
    (READING, 'the {short.riskiest} riskiest nodes (host, class, risk'),
    (READING, 'between reports of schema {changes.risk_since} or later'),
    (READING, 'the Markdown shows at most {changes.shown} of each list'),
    (READING, 'larger than {changes.max_mib} MiB, not JSON, of a schema version other than {changes.versions}, or '
              'without a host name'),
    (READING, 'between two {fleet.nodes}-node reports'),
    (READING, 'the history spans less than {policy.warm_share} of `reservations_reaction_time`'),
    (READING, '*minor*: under {verdict.minor_bytes} and under {verdict.minor_share} of the node; *major*: '
              '{verdict.major_bytes} or more, or {verdict.major_share} of the node or more'),
    (READING, 'or more than {risk.max_reserved_share} of the node\'s memory (`_memory_risk.MAX_RESERVED_SHARE`)'),
    (STARTING, 'nodealloc-kubelet-{galaxy.version}.tar.gz'),
    (STARTING, 'version: ">={galaxy.kubernetes_core}"'),
    (STARTING, 'Until that history spans\nthe reaction time (`reservations_reaction_time`, {default.reaction_time})'),
    (STARTING, '{default.sampler_interval} into its history'),
    (STARTING, 'Come back a reaction time later ({default.reaction_time})'),
    (STARTING, '`reservations_history_window`, {default.history_window_days}'),
    (STARTING, "(each class's verdict and command, then the {short.riskiest} riskiest nodes)"),
    (STARTING, '(`reservations_health_soak_seconds`, {default.health_soak}; `reservations_health_timeout_seconds`, '
               '{default.health_timeout})'),
    (STARTING, '(a number or a share, default `{default.serial}`)'),
    (STARTING, '`nodealloc_max_fail_percentage` (default `{default.max_fail}`)'),
    (STARTING, 'at `{default.max_fail}`\nthe first failed node stops it'),
]

# (doc or None for both, pattern around a number, reason): numbers no figure gives. A pattern anchored at a line's
# start (^) allows every number of the lines it matches.
ALLOWED = [
    (None, r'^#+ \d+\.', 'a section number of getting-started.md'),
    (None, r'step \d', 'a step of getting-started.md'),
    (READING, r'reserved − peak [<≥] 0|0 ≤ reserved|reserved ≤ 0', "a risk rule's zero (the sign of the spare)"),
    (READING, r'-k 500', "the selector of test_report_html.py's 500-node test"),
    (None, r'\d{3,4}\s*px|1400×2000|1280×800|1,280×800|1,280', 'a screen size the page is checked at (test_report_html.py)'),
    (READING, r'5,000-node page would otherwise be about 55 MB',
     'benchmarks/report_render.py measured it (docs/benchmarks.md)'),
    (READING, r'from 2023 or later', 'the year DecompressionStream reached every major browser (Firefox 113, Safari 16.4)'),
    (READING, r'5-node fleet', 'the small fleet of the job output figure (SMALL_FLEET_NODES)'),
    (READING, r'RFC 4180', 'the CSV format\'s standard'),
    (STARTING, r'node\d\.example|gpu\d\.example', 'an inventory host name'),
    (STARTING, r'16gib-4cpu', 'a size class name, as _headroom.node_class names one'),
    (STARTING, r':9090', "Prometheus' port"),
    (STARTING, r'nodealloc_serial=10%|max_fail_percentage=0', 'an example command line'),
    (None, r'^\|.*`(reservations_)?\w+`\s*\|\s*\w+\s*\|\s*`[^`]*`\s*\|',
     'an option table row: tests/unit/test_docs_match_code.py checks its default against the code'),
]

NUMBER = re.compile(r'(?<![\w.#-])[-+\u2212]?\d[\d,]*(?:\.\d+)?(?![\w-])')


def _flat(text):
    """``text`` with Markdown's quote marks and line breaks gone: a sentence reads the same however it wraps."""
    return re.sub(r'\s+', ' ', re.sub(r'(?m)^>\s?', '', text.replace('\u00a0', ' '))).strip()


def claims(values):
    """[(doc, claimed sentence)] with the figures in."""
    return [(doc, re.sub(r'\{([\w.]+)\}', lambda m: values[m.group(1)], text)) for doc, text in CLAIMS]


def problems(values, read=None):
    """What the docs say otherwise: claims not found, and numbers neither in a claim nor allowed (with their words)."""
    read = read or (lambda doc: open(os.path.join(ROOT, doc), encoding='utf-8').read())
    found = []
    sentences = {}
    for doc, sentence in claims(values):
        sentences.setdefault(doc, []).append(_flat(sentence))
    for doc, claimed in sentences.items():
        # A pattern anchored at a line's start allows its whole line: the line is left out.
        lines = [line for line in read(doc).splitlines() if not any(
            pattern.startswith('^') and re.match(pattern, line) for where, pattern, _reason in ALLOWED if where in (None, doc))]
        flat = _flat('\n'.join(lines))
        covered = []
        for sentence in claimed:
            places = [m.span() for m in re.finditer(re.escape(sentence), flat)]
            if not places:
                found.append('%s does not say: %s' % (doc, sentence))
            covered += places
        for where, pattern, _reason in ALLOWED:
            if where in (None, doc) and not pattern.startswith('^'):
                covered += [m.span() for m in re.finditer(pattern, flat)]
        for match in NUMBER.finditer(flat):
            if not any(start <= match.start() and match.end() <= end for start, end in covered):
                found.append('%s: %s is in no claim and not allowed: ...%s...'
                             % (doc, match.group(), flat[max(0, match.start() - 60):match.end() + 60]))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='exit 1 when a doc says otherwise')
    args = parser.parse_args()
    values = figures()
    width = max(len(name) for name in values)
    for name, value in values.items():
        print('%-*s  %s' % (width, name, value))
    if args.check:
        found = problems(values)
        for problem in found:
            print(problem, file=sys.stderr)
        sys.exit(1 if found else 0)


if __name__ == '__main__':
    main()
