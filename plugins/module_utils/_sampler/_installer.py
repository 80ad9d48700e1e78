# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The sampler on a node: its script, the collection's module_utils it imports, its systemd units.

The sampler script (roles/reservations/files/nodealloc-sampler.py) imports ``_sample_once`` from a copy
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

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

PACKAGE = 'ansible_collections.nodealloc.kubelet.plugins.module_utils'
# What nodealloc-sampler.py imports; everything else comes from their own imports.
SAMPLER_IMPORTS = ('_sampler._sample_once', '_errors')
# Where, under the sampler's directory, the script looks for them (it puts its own directory on sys.path).
RELATIVE_DIR = os.path.join(*PACKAGE.split('.'))


def imported_names(source):
    """What ``source`` may import from the collection's module_utils, as names below it (``_node._procfs``).

    ``from module_utils._node import _procfs`` gives ``_node`` and ``_node._procfs``; ``from module_utils._errors import
    NodeallocError`` gives ``_errors`` and ``_errors.NodeallocError``: which of them are modules only the files can
    say (``sources`` keeps those that are).
    """
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:
                names.update(alias.name for alias in node.names)
            elif node.module.startswith(PACKAGE + '.'):
                below = node.module[len(PACKAGE) + 1:]
                names.add(below)
                names.update('%s.%s' % (below, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name[len(PACKAGE) + 1:] for alias in node.names if alias.name.startswith(PACKAGE + '.'))
    return names


def _spec(name):
    try:
        return importlib.util.find_spec('%s.%s' % (PACKAGE, name))
    except (ImportError, AttributeError, ValueError):  # the parent is a module, not a package: ``name`` is an attribute
        return None


def _source_of(full, spec):
    source = spec.loader.get_source(full) if spec is not None and spec.loader is not None else None
    if source is None:
        raise NodeallocError('the source of %s is not available here' % full)
    # Bytes, as the file holds them: Ansible's collection loader returns bytes, Python's own a str.
    return source.encode('utf-8') if isinstance(source, str) else source


def _file_name(name, spec):
    """The file ``name`` lives in, below module_utils: ``_node/_procfs.py``, a package's ``_node/__init__.py``."""
    parts = name.split('.')
    if spec.submodule_search_locations is not None:
        return '/'.join(parts + ['__init__.py'])
    return '/'.join(parts) + '.py'


def sources(roots=SAMPLER_IMPORTS):
    """``{file name: source bytes}`` of ``roots`` and every collection module_util they import, transitively.

    File names are relative to module_utils (``_sampler/_sample_once.py``); each package on the way has its
    ``__init__.py`` too, as Python needs to import from it.
    """
    found = {}
    pending = sorted(roots)
    seen = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        spec = _spec(name)
        if spec is None:
            if name in roots:
                raise NodeallocError('the source of %s.%s is not available here' % (PACKAGE, name))
            continue  # an attribute of a module, not a module
        source = _source_of('%s.%s' % (PACKAGE, name), spec)
        found[_file_name(name, spec)] = source
        parent = name.rpartition('.')[0]
        if parent:
            pending.append(parent)
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
    """Create ``path`` (and its parents, 0755) where it is missing; True when it was (or, in check mode, would be).

    One that exists must be root's alone (_safe_open.open_directory): a state or textfile directory another user owns
    or can write, or a link, is refused with the reason (``UnsafePathError``), never chmod'ed; the sampler would
    refuse to write there anyway.
    """
    if os.path.lexists(path):
        try:
            os.close(_safe_open.open_directory(path))
        except OSError as exc:
            raise NodeallocError('%s: cannot open the directory: %s' % (path, exc.strerror or exc))
        return False
    if not check_mode:
        try:
            os.makedirs(path, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise NodeallocError('%s: cannot create the directory: %s' % (path, exc.strerror or exc))
    return True


def _present(target):
    """The ``*.py`` files below ``target``, as paths relative to it (``_node/_procfs.py``)."""
    present = []
    for directory, subdirectories, names in os.walk(target, onerror=_raise):
        subdirectories[:] = sorted(name for name in subdirectories if name != '__pycache__')
        relative = os.path.relpath(directory, target)
        present.extend(name if relative == '.' else '%s/%s' % (relative.replace(os.sep, '/'), name)
                       for name in names if name.endswith('.py'))
    return sorted(present)


def _raise(exc):
    if not isinstance(exc, FileNotFoundError):
        raise NodeallocError('%s: cannot list the directory: %s' % (exc.filename, exc.strerror or exc))


def install(sampler_dir, files, check_mode=False):
    """Make ``<sampler_dir>/ansible_collections/.../module_utils`` hold exactly ``files``.

    ``files`` is keyed by the path below module_utils (``_node/_procfs.py``). Each file that differs is replaced
    (``install_files``, mode 0644); a ``*.py`` there that is not in ``files`` (left by another version of the
    collection, such as the flat layout before the domain packages) is removed. Returns ``(written, removed)``, the
    paths below module_utils, sorted; in check mode nothing is touched.
    """
    target = os.path.join(sampler_dir, RELATIVE_DIR)
    present = _present(target)
    written = install_files({os.path.join(target, *name.split('/')): (files[name], 0o644) for name in files}, check_mode)
    removed = [name for name in present if name not in files]
    if not check_mode:
        for name in removed:
            _file_io.remove_durably(os.path.join(target, *name.split('/')))
    return sorted(os.path.relpath(path, target).replace(os.sep, '/') for path in written), removed
