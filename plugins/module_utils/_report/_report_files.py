# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Every file a report run writes, and what its job prints (issue 46): one home for both filters.

``renderings`` adds to ``_fleet_report.renderings`` (JSON, Markdown, HTML, text) the CSV (``_report_csv``), the short
summary (``_short_summary``) and the changes file (``_report_changes``); ``SUFFIXES`` names the file each is written
to, after the report's path without its suffix (``reports/reservations``). The job prints the whole text for a
fleet of at most ``_fleet_report.JOB_OUTPUT_NODES`` nodes, else the short summary.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _units as units
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import (
    _fleet_report, _report_changes, _report_csv, _short_summary)

# rendering: what follows the report's path in its file name (recommend.yml and report_merge.yml write each).
SUFFIXES = (('json', '.json'), ('markdown', '.md'), ('html', '.html'), ('csv', '.csv'),
            ('short_summary_text', '-summary.txt'), ('changes_markdown', '-changes.md'))


def where(report_path):
    """The phrase the short summary ends with: where each file is."""
    if not report_path:
        return None
    return '%s%s, %s' % (report_path, SUFFIXES[0][1], ', '.join(suffix for _key, suffix in SUFFIXES[1:]))


def renderings(report, report_path=None):
    """``_fleet_report.renderings`` plus ``csv``, ``short_summary`` (lines), ``short_summary_text`` and
    ``changes_markdown``; ``text_lines``, what the job prints, is the short summary above ``JOB_OUTPUT_NODES``
    nodes, and the whole text with the changes' one line below it."""
    out = _fleet_report.renderings(report)
    short = _short_summary.lines(report, where(report_path))
    out.update(csv=_report_csv.render_csv(report), short_summary=short, short_summary_text='\n'.join(short) + '\n',
               changes_markdown=_report_changes.document(report.get('changes')))
    if len(report['nodes']) > _fleet_report.JOB_OUTPUT_NODES:
        out['text_lines'] = short
    elif report.get('changes'):
        out['text_lines'] = out['text_lines'] + ['', units.plain_text(_report_changes.headline(report['changes']))]
    return out
