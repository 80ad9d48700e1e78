"""ansible-test sanity's compile and import checks of node-side code, run by one node's python3.

Run inside a Debian release's tree (tests/integration/test_node_pythons.py), as ``python3 -I THIS ROOT``, where
ROOT holds ``ansible/module_utils`` (what Ansible ships to a node with each module; the rest of ``ansible`` is
controller code, as in ansible-test's import check) and the collection's ``plugins/modules`` and
``plugins/module_utils`` under ``ansible_collections/nodealloc/kubelet``. Prints one JSON object: the Python
version, the files compiled and the modules imported, and what failed in each (warnings count as failures, as a
SyntaxWarning for an invalid escape sequence is on the way to being an error in newer Pythons). Written for the
oldest node Python claimed (3.9): nothing newer in it.
"""

import importlib
import json
import os
import sys
import traceback
import warnings

PACKAGE = 'ansible_collections.nodealloc.kubelet.plugins'


def main(root):
    sys.path.insert(0, root)
    report = {'python': '%d.%d' % sys.version_info[:2], 'compiled': [], 'imported': [], 'errors': {}}
    names = []
    for kind in ('module_utils', 'modules'):
        top = os.path.join(root, PACKAGE.replace('.', '/'), kind)
        for directory, subdirectories, files in os.walk(top):
            subdirectories[:] = sorted(name for name in subdirectories if name != '__pycache__')
            below = os.path.relpath(directory, top)
            for name in sorted(files):
                if not name.endswith('.py') or name == '__init__.py':
                    continue
                path = os.path.join(directory, name)
                inner = name if below == '.' else '%s/%s' % (below, name)
                relative = 'plugins/%s/%s' % (kind, inner)
                with open(path, 'rb') as handle:
                    source = handle.read()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter('error')
                        compile(source, path, 'exec', dont_inherit=True)
                    report['compiled'].append(relative)
                except (SyntaxError, Warning, ValueError) as error:
                    report['errors'][relative] = 'compile: %s: %s' % (type(error).__name__, error)
                    continue
                names.append((relative, '%s.%s.%s' % (PACKAGE, kind, inner[:-3].replace('/', '.'))))
    for relative, module in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('error')
                importlib.import_module(module)
            report['imported'].append(relative)
        except BaseException:  # pylint: disable=broad-except  # anything an import raises is the finding
            report['errors'][relative] = 'import: ' + traceback.format_exc(limit=3)
    print(json.dumps(report))


if __name__ == '__main__':
    main(sys.argv[1])
