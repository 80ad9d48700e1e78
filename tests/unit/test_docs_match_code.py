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


# The two operator pages (issue 37): every name they write in backticks, code blocks included, is one the code has.
GUIDES = [os.path.join(ROOT, 'docs', name) for name in ('getting-started.md', 'reading-the-report.md')]
CODE = re.compile(r'```.*?```|`[^`\n]+`', re.S)
ROLE_VARIABLE = re.compile(r'\breservations_\w+')
# A playbook variable (nodealloc_serial, nodealloc_report_dir, nodealloc_node_class); not a metric family nodealloc_*.
PLAYBOOK_VARIABLE = re.compile(r'\bnodealloc_\w*[a-z0-9](?![\w*])')
PLAYBOOK = re.compile(r'\bplaybooks/(\w+)\.yml|\bnodealloc\.kubelet\.(\w+)')
SORT = re.compile(r'#sort=-?(\w+)')
LINK = re.compile(r'\]\(([^)#\s]+)')


def _role_variables():
    with open(os.path.join(ROOT, 'roles', 'reservations', 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    spec_names = {name for entry in specs.values() for name in (entry.get('options') or {})}
    return spec_names & {_option_specs.ROLE_PREFIX + name for name in _option_specs.role_option_names()}


def _collection_content():
    """What nodealloc.kubelet.<name> may name: a playbook, a plugin or the role."""
    files = glob.glob(os.path.join(ROOT, 'playbooks', '*.yml')) + glob.glob(os.path.join(ROOT, 'plugins', '*', '*.py'))
    names = {os.path.splitext(os.path.basename(path))[0] for path in files}
    return names | set(os.listdir(os.path.join(ROOT, 'roles')))


def _playbook_text():
    text = ''
    for path in sorted(glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            text += handle.read()
    return text


def guide_problems(path):
    """Names in ``path``'s backticks the code does not have, and links to files that do not exist."""
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _html_page

    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    role_variables, content, playbook_text = _role_variables(), _collection_content(), _playbook_text()
    playbooks = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))}
    sort_keys = {key for key, _title in _html_page.COLUMNS}
    problems = []
    for quoted in CODE.findall(text):
        problems += ['unknown role variable %s' % name for name in ROLE_VARIABLE.findall(quoted)
                     if name not in role_variables]
        problems += ['%s is in no playbook' % name for name in PLAYBOOK_VARIABLE.findall(quoted)
                     if not re.search(r'\b%s\b' % name, playbook_text)]
        for file_name, fqcn_name in PLAYBOOK.findall(quoted):
            if file_name and file_name not in playbooks:
                problems.append('no playbooks/%s.yml' % file_name)
            if fqcn_name and fqcn_name not in content:
                problems.append('no nodealloc.kubelet.%s' % fqcn_name)
        problems += ['the fleet table has no column %s' % key for key in SORT.findall(quoted) if key not in sort_keys]
    for target in LINK.findall(text):
        if not os.path.exists(os.path.join(os.path.dirname(path), target)) and not target.startswith(
                ('http://', 'https://', '../tests/output/')):
            problems.append('link to a missing file %s' % target)
    return problems


@pytest.mark.parametrize('path', GUIDES, ids=os.path.basename)
def test_every_name_in_the_operator_guides_is_the_code_s(path):
    assert guide_problems(path) == []


def test_the_guide_check_finds_a_misspelt_name(tmp_path):
    with open(GUIDES[0], encoding='utf-8') as handle:
        text = handle.read()
    assert '`reservations_history_window`' in text and 'nodealloc.kubelet.observe' in text  # what is misspelt below
    misspelt = tmp_path / 'getting-started.md'
    misspelt.write_text(text.replace('`reservations_history_window`', '`reservations_history_windows`')
                        .replace('nodealloc.kubelet.observe', 'nodealloc.kubelet.observ')
                        .replace('nodealloc_serial=', 'nodealloc_serail='), encoding='utf-8')
    problems = guide_problems(str(misspelt))
    assert 'unknown role variable reservations_history_windows' in problems
    assert 'no nodealloc.kubelet.observ' in problems
    assert 'nodealloc_serail is in no playbook' in problems
