# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A report run's files on the controller (the report in its six forms, each class's node templates), written in one
module run.

As one ``ansible.builtin.copy`` task per file they cost two module runs each (stat, then copy): 7 s of a one-node
``recommend.yml --check`` on a busy machine went to the report's six files, and a fleet of two classes wrote some
twenty templates the same way (issue 48). Each file goes through ``_file_io.write_atomic``: whole or not at all, in a
directory this user alone can write, never through a symbolic link; a file that already holds the content is left
as it is.
"""

from __future__ import annotations

import json
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _safe_open
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError


def plan(files, directory=None):
    """The absolute path and bytes of each of ``files`` (dicts of ``path``, absolute or relative to ``directory``, and
    ``content``; other keys ignored), checked before any write: each a normalised file path inside ``directory`` where
    it is given, none twice."""
    planned = []
    for entry in files:
        path, content = entry.get('path'), entry.get('content')
        if isinstance(content, (dict, list)):
            # ansible-core before 2.19 turns a template whose whole text is JSON (the report's .json) into data: the
            # report's own serialisation (_fleet_report.render_json) gives its text back byte for byte.
            content = json.dumps(content, indent=2, sort_keys=True) + '\n'
        if not isinstance(path, str) or not isinstance(content, str):
            raise NodeallocError('each file needs a path and a content, both text; got %s: nothing was written'
                                 % sorted(entry))
        if directory:
            path = os.path.join(directory, path)
        if not os.path.isabs(path) or os.path.normpath(path) != path or path.endswith('/') or (
                directory and not path.startswith(os.path.normpath(directory).rstrip('/') + '/')):
            raise NodeallocError('%r: not a normalised file path%s: nothing was written'
                                 % (path, ' inside %s' % directory if directory else ', absolute'))
        planned.append((path, content.encode('utf-8', 'surrogateescape')))
    paths = [path for path, _data in planned]
    if len(set(paths)) != len(paths):
        raise NodeallocError('%s: named twice: nothing was written' % sorted({p for p in paths if paths.count(p) > 1}))
    return planned


def differs(path, data):
    """Whether ``path`` is missing or holds something other than ``data`` (read as write_atomic would reach it)."""
    try:
        return _safe_open.read_bytes(path) != data
    except FileNotFoundError:
        return True


def write_all(files, directory, mode, check_mode):
    """Write each of ``files`` (``plan``) whose content differs, creating missing directories (0755); the paths
    written (or, in check mode, that would be)."""
    planned = plan(files, directory)
    written = []
    for path, data in planned:
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            if check_mode:
                written.append(path)
                continue
            try:
                os.makedirs(directory, mode=0o755, exist_ok=True)
            except OSError as exc:
                raise NodeallocError('%s: cannot create the directory: %s' % (directory, exc.strerror or exc))
        if differs(path, data):
            if not check_mode:
                _file_io.write_atomic(path, data, mode=mode)
            written.append(path)
    return written
