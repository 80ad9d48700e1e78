# Private to nodealloc.kubelet: not a public API, may change without notice.
"""RFC 7386 JSON merge patch, the merge the kubelet applies to its drop-in files.

cmd/kubelet/app/server.go ``mergeKubeletConfigurations`` marshals the base
config to JSON and applies each ``*.conf`` drop-in with
``jsonpatch.MergePatch``: objects merge key by key, any other value
(lists included) replaces, and ``null`` deletes.
"""

from __future__ import annotations

import copy


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
