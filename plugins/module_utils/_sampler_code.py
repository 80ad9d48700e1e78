# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The sampler on a node: its script, the collection's module_utils it imports, its systemd units.

The sampler script (roles/reservations/files/nodealloc-sampler.py) imports ``_sampler`` from a copy
of the collection's module_utils beside it. ``sources`` finds that import closure from the source
files themselves (the same AST walk Ansible does to pack a module's module_utils), and ``install``
makes the node's copy hold exactly those files. The ``sampler_code`` module runs both on the node:
Ansible packs into its payload the module_utils it imports, which include this closure, so one
module call installs them. Copying them file by file cost two round trips per file per node
(55 s of a 4-node rollout), and copying the directory would carry the controller's ``__pycache__``.
The same call writes the script and the units (``install_files``) and creates the state directory:
as separate file, copy and template tasks they were 8 of the 10 module runs the sampler cost a node on
every run (113 s of the 247 s two rollouts of three VM guests spent in Ansible tasks).
"""

from __future__ import annotations

import ast
import importlib.util
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

PACKAGE = 'ansible_collections.nodealloc.kubelet.plugins.module_utils'
# What nodealloc-sampler.py imports; everything else comes from their own imports.
SAMPLER_IMPORTS = ('_sampler', '_errors')
# Where, under the sampler's directory, the script looks for them (it puts its own directory on sys.path).
RELATIVE_DIR = os.path.join(*PACKAGE.split('.'))


def imported_names(source):
    """The collection module_utils names that ``source`` imports (at any depth of the file)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:
                names.update(alias.name for alias in node.names)
            elif node.module.startswith(PACKAGE + '.'):
                names.add(node.module[len(PACKAGE) + 1:].split('.')[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name[len(PACKAGE) + 1:].split('.')[0]
                         for alias in node.names if alias.name.startswith(PACKAGE + '.'))
    return names


def _source_of(name):
    full = '%s.%s' % (PACKAGE, name)
    spec = importlib.util.find_spec(full)
    source = spec.loader.get_source(full) if spec is not None and spec.loader is not None else None
    if source is None:
        raise NodeallocError('the source of %s is not available here' % full)
    # Bytes, as the file holds them: Ansible's collection loader returns bytes, Python's own a str.
    return source.encode('utf-8') if isinstance(source, str) else source


def sources(roots=SAMPLER_IMPORTS):
    """``{file name: source bytes}`` of ``roots`` and every collection module_util they import, transitively."""
    found = {}
    pending = sorted(roots)
    while pending:
        name = pending.pop()
        if name + '.py' in found:
            continue
        source = _source_of(name)
        found[name + '.py'] = source
        pending.extend(sorted(imported_names(source)))
    return found


def _bytes(content):
    return content.encode('utf-8') if isinstance(content, str) else content


def _differs(path, data, mode):
    try:
        with open(path, 'rb') as handle:
            same = handle.read() == data and (os.fstat(handle.fileno()).st_mode & 0o7777) == mode
    except FileNotFoundError:
        return True
    except OSError as exc:
        raise NodeallocError('%s: cannot read the file: %s' % (path, exc.strerror or exc))
    return not same


def install_files(wanted, check_mode=False):
    """Make each path of ``wanted`` (``{path: (content, mode)}``) hold that content with that mode.

    A file that differs in either is replaced atomically and durably (the one write path), its directory
    created (0755) where missing. Returns the paths written, sorted; in check mode nothing is touched.
    """
    written = sorted(path for path, (content, mode) in wanted.items() if _differs(path, _bytes(content), mode))
    if check_mode:
        return written
    for path in written:
        content, mode = wanted[path]
        ensure_directory(os.path.dirname(path))
        _file_io.write_atomic(path, content, mode=mode)  # it takes str or bytes
    return written


def ensure_directory(path, check_mode=False):
    """Create ``path`` (and its parents, 0755) where it is missing; True when it was (or, in check mode, would be)."""
    if os.path.isdir(path):
        return False
    if not check_mode:
        try:
            os.makedirs(path, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise NodeallocError('%s: cannot create the directory: %s' % (path, exc.strerror or exc))
    return True


def install(sampler_dir, files, check_mode=False):
    """Make ``<sampler_dir>/ansible_collections/.../module_utils`` hold exactly ``files``.

    Each file that differs is replaced (``install_files``, mode 0644); a ``*.py`` there that is not in
    ``files`` (left by another version of the collection) is removed. Returns ``(written, removed)``, the
    file names, sorted; in check mode nothing is touched.
    """
    target = os.path.join(sampler_dir, RELATIVE_DIR)
    try:
        present = sorted(name for name in os.listdir(target) if name.endswith('.py'))
    except FileNotFoundError:
        present = []
    except OSError as exc:
        raise NodeallocError('%s: cannot list the directory: %s' % (target, exc.strerror or exc))
    written = install_files({os.path.join(target, name): (files[name], 0o644) for name in files}, check_mode)
    removed = [name for name in present if name not in files]
    if not check_mode:
        for name in removed:
            _file_io.remove_durably(os.path.join(target, name))
    return sorted(os.path.basename(path) for path in written), removed
