"""The defaults, windows and units the docs quote are the code's (_option_specs): a doc that says otherwise fails.

Read: every Markdown table row naming an option (``reservations_<name>`` or ``<name>``) with a type and a default
(README.md, docs/*.md), every ``default:`` of roles/reservations/meta/argument_specs.yml, and the history window
quoted in prose ("peak over N days", "N-day window").
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = [os.path.join(ROOT, 'README.md')] + sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')))
ROW = re.compile(r'^\|\s*`(?:reservations_)?(\w+)`\s*\|\s*(\w+)\s*\|\s*`([^`]*)`\s*\|')
WINDOW = re.compile(r'peak over (\d+) days?|(\d+)-day (?:history )?window|history window of (\d+) days?')


def _same(quoted, default):
    if default is None:
        return quoted.lower() in ('', 'none', 'null', '~')
    if isinstance(default, bool):
        return quoted.lower() == str(default).lower()
    if isinstance(default, (int, float)):
        try:
            return float(quoted) == float(default)
        except ValueError:
            return False
    return quoted.strip('\'"') == str(default)


def _quoted_defaults():
    for path in DOCS:
        with open(path, encoding='utf-8') as handle:
            for number, line in enumerate(handle, 1):
                match = ROW.match(line)
                if match and match.group(1) in _option_specs.OPTIONS:
                    yield '%s:%d' % (os.path.relpath(path, ROOT), number), match.group(1), match.group(3)


@pytest.mark.parametrize('where, name, quoted', list(_quoted_defaults()))
def test_a_default_quoted_in_a_doc_table_is_the_code_s(where, name, quoted):
    default = _option_specs.OPTIONS[name]['default']
    assert _same(quoted, default), '%s quotes %s default %r; the code has %r' % (where, name, quoted, default)


def test_the_docs_quote_defaults_at_all():
    assert len(list(_quoted_defaults())) >= 5  # the parser finds the survey tables: the test above is not empty


def test_the_role_argument_spec_defaults_are_the_code_s():
    with open(os.path.join(ROOT, 'roles', 'reservations', 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    checked = 0
    for entry in specs.values():
        for name, option in (entry.get('options') or {}).items():
            bare = name[len(_option_specs.ROLE_PREFIX):] if name.startswith(_option_specs.ROLE_PREFIX) else None
            if bare in _option_specs.OPTIONS and 'default' in option:
                checked += 1
                assert _same(str(option['default']) if option['default'] is not None else '',
                             _option_specs.OPTIONS[bare]['default']), (name, option['default'])
    assert checked >= 10


def test_the_history_window_quoted_in_prose_is_the_code_s():
    window = _option_specs.OPTIONS['history_window']['default']
    days = int(window[:-1]) if window.endswith('d') else None
    found = []
    for path in DOCS + [os.path.join(ROOT, 'roles', 'reservations', 'meta', 'argument_specs.yml')]:
        with open(path, encoding='utf-8') as handle:
            for number, line in enumerate(handle, 1):
                for match in WINDOW.finditer(line):
                    quoted = int(next(group for group in match.groups() if group))
                    found.append(('%s:%d' % (os.path.relpath(path, ROOT), number), quoted))
    wrong = [(where, quoted) for where, quoted in found if quoted != days]
    assert not wrong, 'the history window is %s; quoted otherwise at %s' % (window, wrong)
