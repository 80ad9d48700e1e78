"""docs/architecture.md kept true, and plugins/module_utils' import graph kept layered as that page says.

The page's tables have one row per file of ``plugins/`` (a package's empty ``__init__.py`` aside); a module name the
page uses must exist. The import graph is read from the sources with ``ast`` (every import, including those inside
functions), not by importing them.

Run as a script it prints the graph and every import that breaks the rule, and exits 1 when there is one::

    python tests/unit/test_architecture.py [collection root]
"""

from __future__ import annotations

import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = 'ansible_collections.nodealloc.kubelet.plugins.module_utils'
PAGE = os.path.join('docs', 'architecture.md')

# Shared plumbing: imports no package, only each other.
PLUMBING = ('_errors', '_safe_open', '_file_io', '_state_dir', '_units', '_option_forms', '_shown_text')
# Bottom first. A module may import modules of its own layer and of the layers below it, never above.
LAYERS = (
    PLUMBING,
    ('_kubelet',),
    ('_option_specs', '_module_glue'),  # the options: the plumbing and the kubelet's model only
    ('_node',),
    ('_policy',),
    ('_sampler',),
    ('_rollout',),
    ('_report',),
    ('_gather',),  # the orchestrator node_reservation_facts calls
)


def module_utils_sources(root=ROOT):
    """{dotted name below module_utils: path}; a package's ``__init__.py`` is the package's own name."""
    base = os.path.join(root, 'plugins', 'module_utils')
    sources = {}
    for directory, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in sorted(files):
            if name.endswith('.py'):
                parts = os.path.relpath(os.path.join(directory, name), base)[:-3].split(os.sep)
                if parts[-1] == '__init__':
                    parts = parts[:-1]
                if parts:
                    sources['.'.join(parts)] = os.path.join(directory, name)
    return sources


def _imported(node, module, modules):
    """The module_utils modules one import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        return [alias.name[len(PREFIX) + 1:] for alias in node.names if alias.name.startswith(PREFIX + '.')]
    if node.level:  # relative: from the package ``module`` is in (or is, for a package's __init__)
        package = module.split('.')[:-node.level]
        base = '.'.join(package + ([node.module] if node.module else []))
    elif node.module == PREFIX or (node.module or '').startswith(PREFIX + '.'):
        base = node.module[len(PREFIX) + 1:]
    else:
        return []
    names = []
    for alias in node.names:
        submodule = (base + '.' + alias.name) if base else alias.name
        names.append(submodule if submodule in modules or not base else base)
    return names


def import_graph(root=ROOT):
    """{module: set of the module_utils modules it imports}, read with ast."""
    sources = module_utils_sources(root)
    graph = {}
    for module, path in sources.items():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        graph[module] = {name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                         for name in _imported(node, module, sources) if name != module}
    return graph


def layer(module):
    top = module.split('.')[0]
    for index, members in enumerate(LAYERS):
        if top in members:
            return index
    return None


def cycles(graph):
    """Each strongly connected group of two or more modules (Tarjan), as a sorted list."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def layering_problems(graph):
    problems = []
    for module in sorted(graph):
        if layer(module) is None:
            problems.append('%s is in no layer: add it to LAYERS here and to %s' % (module, PAGE))
            continue
        for target in sorted(graph[module]):
            if target not in graph:
                problems.append('%s imports %s, which is no module_utils file' % (module, target))
            elif module.split('.')[0] in PLUMBING and '.' in target:
                problems.append('%s is plumbing and imports the package module %s' % (module, target))
            elif layer(target) is not None and layer(target) > layer(module):
                problems.append('%s imports %s, a layer above it (%s over %s)' % (
                    module, target, '/'.join(LAYERS[layer(target)]), '/'.join(LAYERS[layer(module)])))
    for group in cycles(graph):
        problems.append('import cycle among: %s' % ', '.join(group))
    return problems


def format_graph(graph):
    return '\n'.join('%s -> %s' % (module, ' '.join(sorted(graph[module]))) for module in sorted(graph))


def test_module_utils_imports_point_down_only_and_never_in_a_circle():
    graph = import_graph()
    problems = layering_problems(graph)
    assert not problems, '\n'.join(problems) + '\n\nThe import graph:\n' + format_graph(graph)


def test_the_layering_check_sees_an_upward_import_a_plumbing_import_and_a_cycle():
    graph = {'_errors': set(), '_kubelet._quantity': {'_errors'}, '_node._procfs': {'_kubelet._quantity'}}
    assert layering_problems(graph) == []
    upward = dict(graph, **{'_kubelet._quantity': {'_node._procfs'}})
    assert layering_problems(upward)[0] == ('_kubelet._quantity imports _node._procfs, a layer above it '
                                            '(_node over _kubelet)')
    plumbing = dict(graph, _errors={'_kubelet._quantity'})
    assert 'plumbing and imports the package module _kubelet._quantity' in layering_problems(plumbing)[0]
    circle = dict(graph, **{'_kubelet._quantity': {'_kubelet._eviction'}, '_kubelet._eviction': {'_kubelet._quantity'}})
    assert layering_problems(circle) == ['import cycle among: _kubelet._eviction, _kubelet._quantity']
    assert layering_problems(dict(graph, _new={'_errors'}))[0].startswith('_new is in no layer')


def test_the_graph_reads_every_form_of_import(tmp_path):
    base = tmp_path / 'plugins' / 'module_utils'
    (base / '_node').mkdir(parents=True)
    (base / '_node' / '__init__.py').write_text('')
    (base / '_errors.py').write_text('')
    (base / '_units.py').write_text('')
    (base / '_node' / '_procfs.py').write_text(
        'from %s import _errors\n'
        'def later():\n    import %s._units\n' % (PREFIX, PREFIX))
    (base / '_node' / '_cgroup.py').write_text('from . import _procfs\nfrom .._units import memory\n')
    assert import_graph(str(tmp_path)) == {'_node': set(), '_errors': set(), '_units': set(),
                                           '_node._procfs': {'_errors', '_units'},
                                           '_node._cgroup': {'_node._procfs', '_units'}}


def plugin_files(root=ROOT):
    """Every file of plugins/ a row must describe, relative to plugins/ (a package's empty __init__.py aside)."""
    base = os.path.join(root, 'plugins')
    found = set()
    for directory, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in files:
            path = os.path.join(directory, name)
            if name.endswith('.py') and not (name == '__init__.py' and os.path.getsize(path) == 0):
                found.add(os.path.relpath(path, base).replace(os.sep, '/'))
    return found


def table_rows(text):
    """The file each table row describes: its first cell, when that is one `path.py`."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip('|').split('|')] if line.startswith('|') else []
        match = re.fullmatch(r'`([\w./-]+\.py)`', cells[0]) if cells else None
        if match:
            rows.append(match.group(1))
    return rows


def _top_level_names(path):
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def unknown_module_names(text, sources):
    """Names of module_utils modules the page uses (`_pkg/_mod`, `_mod`, `_mod.attr`; bare in its diagrams)
    that no file or top-level name holds."""
    by_base = {}
    for module in sources:
        by_base.setdefault(module.split('.')[-1], []).append(module)
    blocks = re.findall(r'```\n(.*?)```', text, re.S)
    tokens = re.findall(r'`([^`\s]+)`', re.sub(r'```.*?```', '', text, flags=re.S))
    bare = r'(?<![\w.])_[a-z]\w*(?:/_[a-z]\w*)?(?:\.\w+)?'
    tokens += [word for block in blocks for word in re.findall(bare, block)]
    unknown = []
    for token in tokens:
        match = re.fullmatch(r'(_[a-z]\w*)(?:/(_[a-z]\w*))?/?(?:\.(\w+))?', token)
        if not match or token.endswith('.py'):
            continue
        package, name, attribute = match.groups()
        modules = ['%s.%s' % (package, name)] if name else by_base.get(package, [])
        modules = [m for m in modules if m in sources]
        if not modules or (attribute and not any(attribute in _top_level_names(sources[m]) for m in modules)):
            unknown.append(token)
    return sorted(set(unknown))


def _page(root=ROOT):
    with open(os.path.join(root, PAGE)) as handle:
        return handle.read()


def test_architecture_page_has_a_row_for_every_plugin_file_and_none_for_a_missing_one():
    rows = table_rows(_page())
    files = plugin_files()
    assert len(rows) == len(set(rows)), sorted(r for r in rows if rows.count(r) > 1)
    assert sorted(files - set(rows)) == [], 'files without a row in %s' % PAGE
    assert sorted(set(rows) - files) == [], 'rows in %s for files that do not exist' % PAGE


def test_architecture_page_states_the_package_order_the_check_enforces():
    packages = {module.split('.')[0] for module in module_utils_sources() if '.' in module}
    order = [name for members in LAYERS for name in members if name in packages]
    stated = re.search(r'the order: (_\w+(?: < _\w+)*)', _page())
    assert stated and stated.group(1).split(' < ') == order, (stated and stated.group(1), order)


def test_architecture_page_names_only_modules_and_functions_that_exist():
    assert unknown_module_names(_page(), module_utils_sources()) == []


def test_the_page_checks_see_a_new_file_a_stale_row_and_a_stale_name(tmp_path):
    base = tmp_path / 'plugins' / 'module_utils' / '_node'
    base.mkdir(parents=True)
    (base / '__init__.py').write_text('')
    (base / '_procfs.py').write_text('def read_meminfo():\n    pass\n')
    (base / '_cgroup.py').write_text('')
    page = '| file | holds |\n|---|---|\n| `module_utils/_node/_procfs.py` | /proc |\n| `modules/gone.py` | x |\n'
    rows = table_rows(page)
    assert plugin_files(str(tmp_path)) - set(rows) == {'module_utils/_node/_cgroup.py'}
    assert set(rows) - plugin_files(str(tmp_path)) == {'modules/gone.py'}
    sources = module_utils_sources(str(tmp_path))
    assert unknown_module_names('`_procfs.read_meminfo`, `_node/_procfs`, `_node`\n```\n _procfs, _cgroup\n```\n',
                                sources) == []
    assert unknown_module_names('`_procfs.read_stat` and `_node/_swap`\n```\n _measure (_procfs)\n```\n',
                                sources) == ['_measure', '_node/_swap', '_procfs.read_stat']


def main(argv):
    root = argv[1] if len(argv) > 1 else ROOT
    graph = import_graph(root)
    print(format_graph(graph))
    problems = layering_problems(graph)
    for problem in problems:
        print('BROKEN: ' + problem)
    print('%d modules, %d import edges, %d problems' % (len(graph), sum(len(t) for t in graph.values()),
                                                        len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
