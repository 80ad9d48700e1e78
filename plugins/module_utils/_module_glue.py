# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What the modules share: their argument specs and how a module reports a failure.

The argument specs are built from _option_specs.OPTIONS (the one home of types, defaults and ranges).

Add an option there, with the modules that take it; the doc fragments and modules' DOCUMENTATION are
compared with it by tests/unit/plugins/module_utils/test__option_specs.py.
"""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import CONFIG, FACTS, STEP, argument_spec
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError, ValidationError

NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)
KUBELET_CONFIG_OPTIONS = argument_spec(CONFIG)
KUBELET_RESERVATIONS_APPLY_OPTIONS = argument_spec(STEP)


def fail_arguments(exc):
    """``fail_json``'s keyword arguments for a NodeallocError or ValueError a module caught."""
    if isinstance(exc, MissingLibraryError):
        return dict(msg=missing_required_lib(exc.library, reason=exc.reason))
    if isinstance(exc, ValidationError):
        return dict(msg='refused, nothing written: %s' % exc, rule=exc.rule, field=exc.field)
    return dict(msg=str(exc))
