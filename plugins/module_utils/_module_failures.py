# Private to nodealloc.kubelet: not a public API, may change without notice.
"""How the modules that change a kubelet config report a failure: one sentence per kind of error."""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet_config_rules import ValidationError


def fail_arguments(exc):
    """``fail_json``'s keyword arguments for a NodeallocError or ValueError a module caught."""
    if isinstance(exc, MissingLibraryError):
        return dict(msg=missing_required_lib(exc.library, reason=exc.reason))
    if isinstance(exc, ValidationError):
        return dict(msg='refused, nothing written: %s' % exc, rule=exc.rule, field=exc.field)
    return dict(msg=str(exc))
