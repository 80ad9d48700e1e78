# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Give a kubeadm-managed kubelet a ``--config-dir`` and take it away again, as edits the on-node step journals.

kubeadm's drop-in 10-kubeadm.conf (kubernetes/release cmd/krel/templates/latest/kubeadm/10-kubeadm.conf) reads
/etc/sysconfig/kubelet, or /etc/default/kubelet in the .deb (kubeadm.spec rewrites the path), and passes
``$KUBELET_EXTRA_ARGS`` from it to the kubelet last; kubeadm never writes that file. So the flag goes there.

An edit is a small dict the step writes into its journal before it touches anything, and into its record of what
the role enabled once the kubelet is verified on it:

* ``{'kind': 'file', 'path', 'before_b64', 'after_sha256'}``: ``before_b64`` is the file's bytes before (None: it
  did not exist), ``after_sha256`` the SHA-256 of what the edit leaves (None: the edit removes the file). Undoing it
  puts ``before`` back only while the file still holds what the edit left, like a config restore.
* ``{'kind': 'dir', 'path', 'created': bool}``: a directory the edit created (undo removes it, only if empty) or
  removed (undo makes it again).

Nothing here restarts anything; ``_step_primitives`` restarts, waits for health and soaks around these edits.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._kubelet_ownership import parse_environment_file

VARIABLE = 'KUBELET_EXTRA_ARGS'
_LINE = re.compile(r'^\s*%s=' % VARIABLE)


def flag(config_dir):
    return '--config-dir=%s' % config_dir


def _sha256(data):
    return None if data is None else hashlib.sha256(data).hexdigest()


def _read(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _split(text):
    """(lines, index of the KUBELET_EXTRA_ARGS line systemd uses: the last one, or None)."""
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if _LINE.match(line)]
    return lines, (found[-1] if found else None)


def with_flag(text, config_dir):
    """The environment file with ``--config-dir=`` appended to KUBELET_EXTRA_ARGS (the line added if missing)."""
    lines, index = _split(text or '')
    current = parse_environment_file(lines[index]).get(VARIABLE, '') if index is not None else ''
    if flag(config_dir) in current.split():
        return text
    line = '%s="%s"' % (VARIABLE, ' '.join(part for part in (current, flag(config_dir)) if part))
    if index is None:
        lines.append(line)
    else:
        lines[index] = line
    return '\n'.join(lines) + '\n'


def plan_enable(extra_args_file, config_dir):
    """The edits that give the kubelet ``--config-dir=config_dir``: [] when it has it and the directory exists."""
    edits = []
    if not os.path.isdir(config_dir):
        edits.append({'kind': 'dir', 'path': config_dir, 'created': True})
    before = _read(extra_args_file)
    text = None if before is None else before.decode('utf-8', 'surrogateescape')
    after = with_flag(text, config_dir)
    if after != text:
        data = after.encode('utf-8', 'surrogateescape')
        edits.append({'kind': 'file', 'path': extra_args_file, 'after_sha256': _sha256(data),
                      'before_b64': None if before is None else base64.b64encode(before).decode('ascii'),
                      '_data': data})
    return edits


def plan_disable(record):
    """The edits that take back what ``record`` (the edits a step enabled with) did, as far as the node still holds it.

    A file the enabling edit left is put back only while it holds what that edit wrote; a directory only if the
    enabling edit created it and it is empty by then. Returns (edits, [sentences about what is left and why]).
    """
    edits, left = [], []
    for edit in record:
        if edit['kind'] == 'file':
            current = _read(edit['path'])
            if _sha256(current) != edit['after_sha256']:
                left.append('%s changed since --config-dir was added, left as it is' % edit['path'])
                continue
            before = None if edit['before_b64'] is None else base64.b64decode(edit['before_b64'])
            edits.append({'kind': 'file', 'path': edit['path'], 'after_sha256': _sha256(before),
                          'before_b64': None if current is None else base64.b64encode(current).decode('ascii'),
                          '_data': before})
    for edit in record:
        if edit['kind'] == 'dir' and edit['created']:
            edits.append({'kind': 'dir', 'path': edit['path'], 'created': False})
    return edits, left


def journal_form(edits):
    """The edits without the bytes to write (the journal keeps what undoing needs, not what doing needed)."""
    return [{k: v for k, v in edit.items() if not k.startswith('_')} for edit in edits]


def apply(edits):
    """Carry the edits out in order; a directory to remove that is not empty stays (someone else's files are in it)."""
    done = []
    for edit in edits:
        if edit['kind'] == 'dir' and edit['created']:
            os.makedirs(edit['path'], mode=0o755, exist_ok=True)
        elif edit['kind'] == 'dir':
            try:
                os.rmdir(edit['path'])
            except FileNotFoundError:
                pass
            except OSError:
                done.append('%s is not empty, left' % edit['path'])
                continue
        elif edit['_data'] is None:
            with contextlib.suppress(FileNotFoundError):
                _file_io.remove_durably(edit['path'])
        else:
            mode = 0o644
            with contextlib.suppress(FileNotFoundError):
                mode = os.stat(edit['path']).st_mode & 0o7777
            # kubeadm's environment file, where it lives (a link to it stays a link).
            _file_io.write_atomic(edit['path'], edit['_data'], mode=mode, follow_symlinks=True)
        done.append(describe(edit))
    return done


def undo(edits):
    """Undo journalled edits, last first, each only over what it left. Returns sentences of what was done."""
    done = []
    for edit in reversed(edits):
        if edit['kind'] == 'dir':
            if edit['created']:
                try:
                    os.rmdir(edit['path'])
                    done.append('removed %s' % edit['path'])
                except FileNotFoundError:
                    pass
                except OSError:
                    done.append('%s is not empty, left' % edit['path'])
            elif not os.path.isdir(edit['path']):
                os.makedirs(edit['path'], mode=0o755)
                done.append('made %s again' % edit['path'])
            continue
        current = _read(edit['path'])
        if _sha256(current) != edit['after_sha256']:
            if current is not None or edit['after_sha256'] is not None:
                done.append('%s changed since, left as it is' % edit['path'])
            continue
        if edit['before_b64'] is None:
            if current is not None:
                _file_io.remove_durably(edit['path'])
                done.append('removed %s' % edit['path'])
        else:
            mode = 0o644
            with contextlib.suppress(FileNotFoundError):
                mode = os.stat(edit['path']).st_mode & 0o7777
            _file_io.write_atomic(edit['path'], base64.b64decode(edit['before_b64']), mode=mode, follow_symlinks=True)
            done.append('put %s back' % edit['path'])
    return done


def describe(edit):
    if edit['kind'] == 'dir':
        return ('created %s' if edit['created'] else 'removed %s') % edit['path']
    if edit['_data'] is None:
        return 'removed %s' % edit['path']
    return 'wrote %s' % edit['path']
