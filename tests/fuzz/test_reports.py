"""The report renderers with hostile strings in every value a node or a result file gives them.

Markdown is checked by a real CommonMark renderer (markdown-it-py): no raw HTML, no block and no table cell beyond
the report's own. HTML is checked by parsing (html.parser): no tag, attribute or script beyond the page's own.
"""

from __future__ import annotations

import datetime
import html.parser

from hypothesis import given, settings
from markdown_it import MarkdownIt

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import within_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _memory_risk
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import hostile_text
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._report.test__fleet_report import (
    headings_are_ours, result)

GI = 1 << 30
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def measured_result(words):
    """A measured node as the facts module returns it, whose words (config path, cgroup, not-found lines, decision
    reasons, explanation) are ``words``."""
    node = result(GI, current_memory='1Gi', kubelet_pid=1, config_path='/etc/' + words)
    node['not_found'] = [words]
    node['decision']['reasons'] = [words]
    node['recommendation']['explanation'] = node['recommendation']['explanation'] + [words]
    node['cgroup'].update(mode=words, driver=words, kubepods=words)
    return node


def report_of(host, status, reason, words):
    return _fleet_report.build_report({host: {'status': status, 'status_reason': reason},
                                       host + '-m': measured_result(words)}, now=NOW)


# A whole report per example: fewer examples than the parsers get, to keep the suite's time (about 40 ms each).
REPORT_EXAMPLES = settings(max_examples=max(10, settings.default.max_examples // 4))


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.classes, self.scripts, self.attributes = [], set(), 0, set()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.scripts += tag == 'script'
        for name, value in attrs:
            self.attributes.add(name)
            if name == 'class':
                self.classes.update((value or '').split())


def _page(report):
    page = Page()
    page.feed(within_deadline(_fleet_report.render_html, report))
    return page


# The page's own tags and classes, from a report of plain words: a hostile value must add none (status and risk
# reach a class only as one of the fixed words).
PLAIN = _page(report_of('plain', 'failed', 'plain', 'plain'))
# markdown-it loads its rules on its first parse (about 0.1 s of CPU): spent here, not in the first example's limit.
MarkdownIt('commonmark').enable('table').parse(
    _fleet_report.render_markdown(report_of('plain', 'failed', 'plain', 'plain')))
PAGE_TAGS = set(PLAIN.tags)
# The style's row classes (tr.failed, tr.unreachable; ok and no_kubelet rows) and its risk classes.
CLASS_WORDS = PLAIN.classes | {'ok', 'no_kubelet', 'failed', 'unreachable'} | set(_memory_risk.ORDER)


@REPORT_EXAMPLES
@given(hostile_text, hostile_text, hostile_text, hostile_text)
def test_html_page(host, status, reason, words):
    report = report_of(host or 'h', status or 's', reason, words)
    for node in report['nodes']:
        node['risk'] = status  # a slice report on the shared merge volume may carry any risk
    page = _page(report)
    assert page.scripts == 1 and set(page.tags) <= PAGE_TAGS, set(page.tags) - PAGE_TAGS
    assert page.classes <= CLASS_WORDS, page.classes - CLASS_WORDS
    assert not [a for a in page.attributes if a.startswith('on')]


def _cells_match_headers(tokens):
    """Every row of every table has as many cells as its header: a value's ``|`` added no cell."""
    header, count = None, 0
    for token in tokens:
        if token.type == 'table_open':
            header = None
        elif token.type in ('th_open', 'td_open'):
            count += 1
        elif token.type == 'tr_close':
            if header is None:
                header = count
            elif count != header:
                return False
            count = 0
    return True


@REPORT_EXAMPLES
@given(hostile_text, hostile_text, hostile_text, hostile_text)
def test_markdown(host, status, reason, words):
    report = report_of(host or 'h', status or 's', reason, words)
    tokens = MarkdownIt('commonmark').enable('table').parse(within_deadline(_fleet_report.render_markdown, report))
    assert not [t for t in tokens if t.type == 'html_inline' or (t.type == 'html_block' and t.content.strip() not in (
        '<details><summary>Explanation</summary>', '</details>'))]
    assert not [t for t in tokens for c in (t.children or []) if c.type == 'html_inline']
    # Only the report's own headings, one h2 per node after "Each node"; every table row has its header's cells.
    assert headings_are_ours(tokens, len(report['nodes']))
    assert _cells_match_headers(tokens)
    assert not [t for t in tokens if t.type == 'link_open']


@REPORT_EXAMPLES
@given(hostile_text, hostile_text, hostile_text, hostile_text)
def test_text_and_awx_summary(host, status, reason, words):
    report = report_of(host or 'h', status or 's', reason, words)
    for line in within_deadline(_fleet_report.render_text_lines, report) + _fleet_report.summary_lines(report):
        assert not [c for c in line if ord(c) < 32 or 127 <= ord(c) < 160 or c in '\u2028\u2029'], repr(line)
    for counts in report['summary'].values():
        if isinstance(counts, dict):
            assert all(key.replace('_', '').replace('-', '').replace('.', '').isalnum() and key.isascii()
                       for key in counts), counts
