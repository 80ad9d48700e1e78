#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: sampler_code
short_description: Install the nodealloc sampler on a node (its code, its script, its systemd units)
version_added: 0.1.0
description:
  - Writes the collection's module_utils that the sampler script (C(nodealloc-sampler.py), installed by the
    role C(nodealloc.kubelet.reservations)) imports, under O(path)C(/ansible_collections/nodealloc/kubelet/plugins/module_utils).
  - The files come from this module's own payload (Ansible packs in the module_utils a module imports), so one call
    installs them all; the set is the sampler's import closure, found by reading the sources' import statements.
  - Each file that differs is replaced atomically; a C(*.py) file there that the sampler no longer imports (left by
    another version of the collection) is removed. Nothing else in O(path) is touched.
  - With O(script), O(units) and O(state_dir), the same call writes the sampler script and its systemd units and creates
    its state directory, so that installing the sampler costs a node one module run instead of one per file.
  - With O(start_timer), the same call also reloads systemd when a unit changed and enables and starts
    C(nodealloc-sampler.timer) where it is not, so that a node whose sampler is in place costs one module run that
    changes nothing. Without it, no unit is reloaded or started; RV(units_written) says when a daemon reload is due.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: partial
    details:
      - The script and the units are shown as a diff; the module_utils are the collection's own sources, and RV(written)
        and RV(removed) name those that change.
  idempotent:
    support: full
options:
  path:
    description: The sampler's directory (C(reservations_sampler_dir) of the role C(nodealloc.kubelet.reservations)), where C(nodealloc-sampler.py) lives.
    type: path
    required: true
  script:
    description:
      - The sampler script's content, written to O(path)C(/nodealloc-sampler.py) (mode 0755) when it differs.
      - Omitted, the script is left as it is.
    type: str
  units:
    description:
      - systemd unit file names and their contents, written under O(unit_dir) (mode 0644) where they differ.
      - For units of your own; the sampler's come from O(settings).
    type: dict
    default: {}
  settings:
    description:
      - The sampler's settings. Given, the module renders C(nodealloc-sampler.service) and C(nodealloc-sampler.timer)
        under O(unit_dir) and the script's options file O(path)C(/sampler.json), and creates the textfile's directory.
      - The unit runs C(nodealloc-sampler.py --config) O(path)C(/sampler.json), so no option value is part of its command
        line. The sampler's directory, the directories it writes in (those of O(settings.history_path),
        O(settings.state_path) and O(settings.textfile_path)) and the resource settings must have a form that needs no
        quoting in a unit file (absolute paths of letters, digits and C(. _ + @ / -)); the module fails otherwise.
      - The service is sandboxed (no capabilities, read-only file system but those directories, no network); see
        C(docs/monitoring.md).
    type: dict
    suboptions:
      history_path:
        description: The node's history (C(reservations_history_path)).
        type: path
        required: true
      state_path:
        description: The sampler's state file.
        type: path
        required: true
      decision_path:
        description: The role's last decision, read for the metrics.
        type: path
        required: true
      textfile_path:
        description: The metrics file for node_exporter's textfile collector; an empty string writes none.
        type: str
        required: true
      percentile:
        description: The policy percentile of the window figures.
        type: float
        required: true
      history_window:
        description: The history window, a Go duration such as C(7d).
        type: str
        required: true
      sample_seconds:
        description: The CPU sample when no previous run is known.
        type: float
        required: true
      cgroup_driver:
        description:
          - The kubelet's cgroup driver, as the facts module found it. Where both C(kubepods.slice) and C(kubepods)
            exist, the sampler measures the one this driver names, as the facts module does; unset, the first found.
        type: str
        choices: [systemd, cgroupfs]
        version_added: 0.1.0
      nice:
        description: The service's C(Nice=).
        type: int
        required: true
      memory_max:
        description: The service's C(MemoryMax=).
        type: str
        required: true
      cpu_quota:
        description: The service's C(CPUQuota=).
        type: str
        required: true
      interval:
        description: The timer's C(OnUnitActiveSec=).
        type: str
        required: true
  unit_dir:
    description: Where O(units) are written.
    type: path
    default: /etc/systemd/system
  start_timer:
    description:
      - Given O(settings), run C(systemctl daemon-reload) when a unit was written, then C(systemctl enable) and
        C(systemctl start) C(nodealloc-sampler.timer) where C(systemctl is-enabled) and C(systemctl is-active) say it
        is not, as M(ansible.builtin.systemd_service) with O(ansible.builtin.systemd_service#module:enabled=true) and
        O(ansible.builtin.systemd_service#module:state=started) would.
      - In check mode only the two questions are asked; a timer systemd cannot answer for (not installed yet) would be
        enabled and started.
    type: bool
    default: false
    version_added: 0.1.0
  state_dir:
    description:
      - The directory the sampler keeps its history, state and last decision in; created (mode 0755) when missing.
      - Omitted, no directory is created other than those the files need.
    type: path
notes:
  - A run killed between two files can leave the copy mixed between two versions of the collection; the next run
    completes it. Each file is whole, the old or the new.
'''

EXAMPLES = r'''
- name: Install the sampler's module_utils
  nodealloc.kubelet.sampler_code:
    path: /usr/local/lib/nodealloc

- name: Install the sampler, its code and its units
  nodealloc.kubelet.sampler_code:
    path: /usr/local/lib/nodealloc
    state_dir: /var/lib/nodealloc
    script: "{{ lookup('ansible.builtin.file', 'nodealloc-sampler.py', rstrip=false) }}"
    settings:
      history_path: /var/lib/nodealloc/history.jsonl
      state_path: /var/lib/nodealloc/sampler-state.json
      decision_path: /var/lib/nodealloc/decision.json
      textfile_path: /var/lib/node_exporter/textfile_collector/nodealloc.prom
      percentile: 100
      history_window: 7d
      sample_seconds: 10
      nice: 15
      memory_max: 64M
      cpu_quota: 20%
      interval: 1min
    start_timer: true
'''

RETURN = r'''
files:
  description: The file names the sampler's code consists of.
  returned: always
  type: list
  elements: str
  sample: [_errors.py, _sampler/__init__.py, _sampler/_sample_once.py]
written:
  description: The module_utils files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
removed:
  description: The stale module_utils files removed (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
directory:
  description: Where the module_utils files are.
  returned: always
  type: str
  sample: /usr/local/lib/nodealloc/ansible_collections/nodealloc/kubelet/plugins/module_utils
script_written:
  description: Whether the script was written (or, in check mode, would be).
  returned: always
  type: bool
units_written:
  description: The unit file names written (or, in check mode, that would be); a daemon reload is due when not empty.
  returned: always
  type: list
  elements: str
  sample: [nodealloc-sampler.service]
options_written:
  description: Whether O(path)C(/sampler.json) was written (or, in check mode, would be).
  returned: always
  type: bool
state_dir_created:
  description: Whether O(state_dir) was created (or, in check mode, would be).
  returned: always
  type: bool
daemon_reloaded:
  description: Whether systemd was reloaded because a unit was written (or, in check mode, would be).
  returned: when O(start_timer) is true
  type: bool
timer_enabled:
  description: Whether C(nodealloc-sampler.timer) was enabled (or, in check mode, would be); false where it already was.
  returned: when O(start_timer) is true
  type: bool
timer_started:
  description: Whether C(nodealloc-sampler.timer) was started (or, in check mode, would be); false where it was active.
  returned: when O(start_timer) is true
  type: bool
'''

import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _installer, _systemd_units, _timer
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NodeallocModule
# Imported so that Ansible packs the sampler's code into this module's payload; _installer reads it back.
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once  # noqa: F401 pylint: disable=unused-import


SCRIPT_NAME = 'nodealloc-sampler.py'


def _text(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace')
    except (FileNotFoundError, NotADirectoryError):
        return ''


# The sampler's settings, as the script and its run take them (_option_specs.SAMPLER_OPTIONS, their one home).
SETTINGS_SPEC = _option_specs.sampler_settings_spec()


def main():
    module = NodeallocModule(argument_spec=dict(path=dict(type='path', required=True), script=dict(type='str'),
                                                units=dict(type='dict', default={}),
                                                unit_dir=dict(type='path', default='/etc/systemd/system'),
                                                state_dir=dict(type='path'),
                                                settings=dict(type='dict', options=SETTINGS_SPEC),
                                                start_timer=dict(type='bool', default=False)),
                             supports_check_mode=True)
    params = module.params
    path = params['path']
    units = {os.path.join(params['unit_dir'], name): str(content) for name, content in params['units'].items()}
    script_path = os.path.join(path, SCRIPT_NAME)
    wanted = {target: (content, 0o644) for target, content in units.items()}
    if params['script'] is not None:
        wanted[script_path] = (params['script'], 0o755)
    settings = params['settings']
    if params['start_timer'] and not settings:
        module.fail_json(msg='start_timer needs settings: the timer is the one rendered from them')
    options_path = os.path.join(path, _systemd_units.OPTIONS_NAME)
    textfile_dir_created = False
    try:
        if settings:
            rendered = _systemd_units.files(settings, path, params['unit_dir'])
            units.update({target: content for target, (content, _mode) in rendered.items() if target != options_path})
            wanted.update(rendered)
            # ReadWritePaths= leaves a missing directory out of the sandbox: the textfile's must exist before a run.
            if settings['textfile_path']:
                textfile_dir_created = _installer.ensure_directory(os.path.dirname(settings['textfile_path']), module.check_mode)
        state_dir_created = bool(params['state_dir']) and _installer.ensure_directory(params['state_dir'], module.check_mode)
        files = _installer.sources()
        before = {target: _text(target) for target in wanted} if module._diff else {}  # read before the write
        written_paths = _installer.install_files(wanted, check_mode=module.check_mode)
        written, removed = _installer.install(path, files, check_mode=module.check_mode)
        units_written = sorted(os.path.basename(target) for target in written_paths if target in units)
        timer = {}
        if params['start_timer']:
            timer = _timer.ensure_started(lambda argv: module.run_command(argv, check_rc=False),
                                          module.get_bin_path('systemctl'), _systemd_units.TIMER_NAME,
                                          reload=bool(units_written), check_mode=module.check_mode)
    except NodeallocError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=bool(written or removed or written_paths or state_dir_created or textfile_dir_created
                               or any(timer.values())),
                  files=sorted(files), written=written, removed=removed, directory=os.path.join(path, _installer.RELATIVE_DIR),
                  script_written=script_path in written_paths, units_written=units_written,
                  options_written=options_path in written_paths and bool(settings), state_dir_created=state_dir_created,
                  **timer)
    if module._diff:
        result['diff'] = [{'before_header': target, 'after_header': target, 'before': before[target],
                           'after': wanted[target][0]} for target in written_paths]
    module.exit_json(**result)


if __name__ == '__main__':
    main()
