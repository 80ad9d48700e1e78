"""Where the collection under test is importable from, for tests that start Python or Ansible processes."""

from __future__ import annotations

import os

# tests/unit/utils/ -> the collection's root: a checkout (pytest with PYTHONPATH=.build) or the staged tree
# ansible-test runs in (…/ansible_collections/nodealloc/kubelet).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_PARENTS = ROOT.split(os.sep)
# The directory holding ansible_collections/: the tree's own when it is one, else the checkout's .build.
# NODEALLOC_TEST_COLLECTIONS_PATH: a collection installed elsewhere, e.g. from the tarball by a matrix lane (noxfile.py).
COLLECTIONS_PATH = (os.environ.get('NODEALLOC_TEST_COLLECTIONS_PATH')
                    or (os.sep.join(_PARENTS[:-3]) if _PARENTS[-3:-2] == ['ansible_collections'] else os.path.join(ROOT, '.build')))
