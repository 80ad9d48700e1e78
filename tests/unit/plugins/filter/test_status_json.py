# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The on-node step's status files are the bytes the role's copy tasks wrote with Ansible's to_nice_json.

Beside the filters, not the module_utils tests: ``ansible-test units`` gives tests under
tests/unit/plugins/module_utils only ``ansible.module_utils``, and this compares with ``ansible.plugins.filter``.
"""

from __future__ import annotations

import pytest
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _step_sequence


@pytest.mark.parametrize('content', [
    {'action': 'increase', 'eviction_hard_memory_bytes': 104857600, 'recommended_kubepods_memory_limit_bytes': 3221225472},
    {'reserved_memory_bytes': 1073741824, 'memory_headroom_bytes': 134217728},
    {'action': 'keep', 'eviction_hard_memory_bytes': None},
    {'nested': {'b': [1, 2.5, 'x'], 'a': True}, 'unicode': 'n\u00e9'},
])
def test_status_files_are_what_the_roles_to_nice_json_copy_wrote(tmp_path, content):
    # The copy tasks wrote "{{ content | to_nice_json }}\n": the same bytes, so a file from before is not rewritten.
    path = tmp_path / 'sub' / 'status.json'
    _step_sequence.write_status({'on_success': [{'path': str(path), 'content': content}]}, 'on_success')
    assert path.read_text() == to_nice_json(content) + '\n'
