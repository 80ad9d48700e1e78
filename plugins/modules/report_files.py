#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: report_files
short_description: Write a report run's files on the controller in one call, each whole
version_added: 0.1.0
description:
  - Writes each of O(files) where its content differs, creating missing directories (mode 0755) first. Used by
    C(playbooks/recommend.yml) and C(playbooks/report_merge.yml) delegated to C(localhost) for the report (JSON,
    Markdown, HTML, CSV, the short summary, the changes) and each node class's templates.
  - Each file is written atomically and durably (a temporary file beside it, fsync, rename), so a reader or a killed run
    sees the old file or the new one, never a part.
  - A file's directory must be this user's alone (not writable by its group or others) and a symbolic link at a file's
    path is refused, not followed; the module then fails naming the path and why, and writes no later file.
  - All paths are checked before the first write (normalised, inside O(dir) where it is given, none twice).
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
  - nodealloc.kubelet._attributes.full_check_no_diff
options:
  files:
    description:
      - The files to write, each a dict of C(path) (absolute, or relative to O(dir)) and C(content) (text, written as
        UTF-8). Other keys, such as the C(class) of the entries the P(nodealloc.kubelet.node_templates#filter) filter
        returns, are ignored.
      - A C(content) that is a dict or a list (ansible-core before 2.19 turns a template whose whole text is JSON, such
        as the report's, into data) is written as JSON indented by 2 with sorted keys and a newline, the report's own form.
    type: list
    elements: dict
    required: true
  dir:
    description:
      - The directory relative paths in O(files) are under; a path that would leave it is refused.
      - Omitted, every path must be absolute.
    type: path
  mode:
    description: The mode of each file written, in octal (a file already holding its content keeps its own).
    type: str
    default: '0644'
'''

EXAMPLES = r'''
- name: Write each node class's templates under the report directory
  nodealloc.kubelet.report_files:
    dir: /srv/reports/templates
    files: "{{ facts_by_host | nodealloc.kubelet.node_templates(classes_by_host) }}"
  delegate_to: localhost
  run_once: true

- name: Write the report in its forms on the controller
  nodealloc.kubelet.report_files:
    files:
      - path: /srv/reports/reservations.json
        content: "{{ report.json }}"
      - path: /srv/reports/reservations.md
        content: "{{ report.markdown }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
written:
  description: The paths written (or, in check mode, that would be); a file that already held its content is not one.
  returned: always
  type: list
  elements: str
  sample: [/srv/reports/reservations.json]
'''

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _files_out


def main():
    module = NodeallocModule(argument_spec=dict(files=dict(type='list', elements='dict', required=True),
                                                dir=dict(type='path'), mode=dict(type='str', default='0644')),
                             supports_check_mode=True)
    try:
        mode = int(module.params['mode'], 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o7777:
        module.fail_json(msg='mode: %r is not an octal mode such as 0644' % module.params['mode'])
    try:
        written = _files_out.write_all(module.params['files'], module.params['dir'], mode, module.check_mode)
    except NodeallocError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(written), written=written)


if __name__ == '__main__':
    main()
