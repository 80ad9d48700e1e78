#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: sampler_code
short_description: Install the Python code the nodealloc sampler imports on a node
version_added: 0.1.0
description:
  - Writes the collection's module_utils that the sampler script (C(nodealloc-sampler.py), installed by the
    role C(nodealloc.kubelet.reservations)) imports, under O(path)C(/ansible_collections/nodealloc/kubelet/plugins/module_utils).
  - The files come from this module's own payload (Ansible packs in the module_utils a module imports), so one call
    installs them all; the set is the sampler's import closure, found by reading the sources' import statements.
  - Each file that differs is replaced atomically; a C(*.py) file there that the sampler no longer imports (left by
    another version of the collection) is removed. Nothing else in O(path) is touched.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details:
      - The files are the collection's own sources; RV(written) and RV(removed) name what changes.
  idempotent:
    support: full
options:
  path:
    description: The sampler's directory (C(reservations_sampler_dir) of the role C(nodealloc.kubelet.reservations)), where C(nodealloc-sampler.py) lives.
    type: path
    required: true
notes:
  - A run killed between two files can leave the copy mixed between two versions of the collection; the next run
    completes it.
'''

EXAMPLES = r'''
- name: Install the sampler's module_utils
  nodealloc.kubelet.sampler_code:
    path: /usr/local/lib/nodealloc
'''

RETURN = r'''
files:
  description: The file names the sampler's code consists of.
  returned: always
  type: list
  elements: str
  sample: [_errors.py, _sampler.py]
written:
  description: The files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
removed:
  description: The stale files removed (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
directory:
  description: Where the files are.
  returned: always
  type: str
  sample: /usr/local/lib/nodealloc/ansible_collections/nodealloc/kubelet/plugins/module_utils
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _sampler_code
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
# Imported so that Ansible packs the sampler's code into this module's payload; _sampler_code reads it back.
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _sampler  # noqa: F401 pylint: disable=unused-import


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type='path', required=True)), supports_check_mode=True)
    path = module.params['path']
    try:
        files = _sampler_code.sources()
        written, removed = _sampler_code.install(path, files, check_mode=module.check_mode)
    except NodeallocError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(written or removed), files=sorted(files), written=written, removed=removed,
                     directory=os.path.join(path, _sampler_code.RELATIVE_DIR))


if __name__ == '__main__':
    main()
