"""Make the staged collection importable as ansible_collections.nodealloc.kubelet."""

from __future__ import annotations

import os
import sys

_BUILD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '.build')
if os.path.isdir(_BUILD) and _BUILD not in sys.path:
    sys.path.insert(0, _BUILD)
