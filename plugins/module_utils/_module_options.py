# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The modules' argument specs, built from _option_specs.OPTIONS (the one home of types, defaults and ranges).

Add an option there, with the modules that take it; the doc fragments and modules' DOCUMENTATION are
compared with it by tests/unit/plugins/module_utils/test__option_specs.py.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import CONFIG, FACTS, STEP, argument_spec

NODE_RESERVATION_FACTS_OPTIONS = argument_spec(FACTS)
KUBELET_CONFIG_OPTIONS = argument_spec(CONFIG)
KUBELET_RESERVATIONS_APPLY_OPTIONS = argument_spec(STEP)
