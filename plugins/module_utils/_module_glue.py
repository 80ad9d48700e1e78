# Private to nodealloc.kubelet: not a public API, may change without notice.
"""What the modules share: their argument specs, how a module reports a failure, and the AnsibleModule they return through.

The argument specs are built from _option_specs.OPTIONS (the one home of types, defaults and ranges).

Add an option there, with the modules that take it; the doc fragments and modules' DOCUMENTATION are
compared with it by tests/unit/plugins/module_utils/test__option_specs.py.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import CONFIG, FACTS, STEP, argument_spec
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError, ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._shown_text import shown_result

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


# Options that carry data other results already hold (the class's records, an earlier call's basis, the histories the
# controller read, the pods' requests): ansible-core returns every option in the result's ``invocation``, and the role
# registers that result on every host, so a class of 1,000 nodes would keep 1,000 copies of about a megabyte of peer
# records in the controller's memory and in every AWX job event. The invocation names their size instead (issue 45).
SUMMARIZED_OPTIONS = ('class_peers', 'basis', 'prometheus_history', 'class_history', 'pod_requests')


def summarized(value):
    """What ``invocation.module_args`` shows of a SUMMARIZED_OPTIONS value: None as it is, else its kind and size."""
    if value is None:
        return None
    count = len(value) if isinstance(value, (list, dict)) else 1
    return '(%s of %d item%s, not repeated in the invocation)' % (
        type(value).__name__, count, '' if count == 1 else 's')


class NodeallocModule(AnsibleModule):
    """The AnsibleModule every module of ours returns through: its result, its failure (``msg`` too) and its warnings
    are valid UTF-8 (_shown_text.shown_result: each byte of node text that is not UTF-8 as ``\\xNN``), since they may
    hold a cgroup, a command line or a file name read from the node, and ansible-core refuses a result that is not;
    and its ``invocation`` gives the SUMMARIZED_OPTIONS by their size."""

    def _invocation(self, kwargs):
        if 'invocation' in kwargs or not isinstance(self.params, dict):
            return kwargs
        args = dict(self.params)
        for name in SUMMARIZED_OPTIONS:
            if name in args:
                args[name] = summarized(args[name])
        return dict(kwargs, invocation={'module_args': args})

    def exit_json(self, **kwargs):
        super().exit_json(**shown_result(self._invocation(kwargs)))

    def fail_json(self, msg, **kwargs):
        super().fail_json(shown_result(msg), **shown_result(self._invocation(kwargs)))

    def warn(self, warning, **kwargs):
        super().warn(shown_result(warning), **kwargs)
