"""Run a module's main() in-process with module args, as the model collections test their modules.

exit_json and fail_json raise instead of exiting, so a test gets the result dict back either way.
"""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class AnsibleExitJson(Exception):
    pass


class AnsibleFailJson(Exception):
    pass


def _exit_json(_module, **result):
    raise AnsibleExitJson(result)


def _fail_json(_module, msg, **result):
    raise AnsibleFailJson(dict(result, msg=msg, failed=True))


def run_module(main, args, monkeypatch):
    """The result of ``main()`` run with ``args`` (a failure's result carries failed=True and msg)."""
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', _fail_json)
    with patch_module_args(args):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as caught:
            main()
    return caught.value.args[0]
