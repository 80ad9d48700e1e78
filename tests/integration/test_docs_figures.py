"""Every figure docs/reading-the-report.md and docs/getting-started.md quote is hack/report-figures.py's, computed
from the 500-node fixture's report and the code's defaults: a claim the docs no longer say, or a number in them that
is in no claim and on no allowlist, fails (issue 46 item 6: five of twelve claims checked had drifted)."""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _script():
    spec = importlib.util.spec_from_file_location('report_figures', os.path.join(ROOT, 'hack', 'report-figures.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def script():
    return _script()


@pytest.fixture(scope='module')
def values(script):
    return script.figures()


def _docs(script):
    texts = {}
    for doc in (script.READING, script.STARTING):
        with open(os.path.join(ROOT, doc), encoding='utf-8') as handle:
            texts[doc] = handle.read()
    return texts


def test_the_docs_say_the_figures_of_the_fixture_and_the_code(script, values):
    assert script.problems(values) == []


def test_every_allowed_number_says_why(script):
    assert all(reason and len(reason) > 10 for _doc, _pattern, reason in script.ALLOWED)


# The claims issue 46 found false, put back into today's docs: each must fail the check.
def _drifted(values):
    return [
        ('docs/getting-started.md', '`reservations_history_window`, %s' % values['default.history_window_days'],
         '`reservations_history_window`, 3 days'),
        ('docs/reading-the-report.md', '(%s) and' % values['default.headroom_min'], '(100 MiB) and'),
        ('docs/reading-the-report.md', 'gives %s back from its %s decreases' % (
            values['class.smallest_given_back'], values['class.smallest_decreases']), 'gives 4.3 GiB back from its 15 decreases'),
        ('docs/reading-the-report.md', 'reading). %s node(s) are held' % values['fleet.on_floor'], 'reading). 419 node(s) are held'),
        ('docs/reading-the-report.md', '%s lines for the 5-node fleet, %s for the' % (
            values['job.lines_small'], values['job.lines_fleet']), 'the same length at 500 nodes as at 5, the'),
    ]


@pytest.mark.parametrize('case', range(5))
def test_a_claim_issue_46_found_false_fails_the_check(script, values, case):
    doc, now, before = _drifted(values)[case]
    texts = _docs(script)
    # What the docs say today, however it wraps (a quote's '>' too), replaced by what they said before.
    wrapped = re.compile(r'\s+(?:>\s*)?'.join(re.escape(word) for word in now.replace('\u00a0', ' ').split()))
    drifted = dict(texts)
    drifted[doc], replaced = wrapped.subn(before, texts[doc].replace('\u00a0', ' '))
    assert replaced == 1
    found = script.problems(values, read=lambda name: drifted[name])
    assert [problem for problem in found if problem.startswith(doc + ' does not say')], found
    assert all(problem.startswith(doc) for problem in found), found
