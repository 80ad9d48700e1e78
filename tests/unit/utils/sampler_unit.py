"""The sampler's units and options as the role installs them at its defaults, without Ansible.

Used by the unit tests of the units and of the script's options, and by benchmarks/sampler_cost.py, so they run
what the role installs: the role's defaults and the plan's state paths (_node_plan.state_paths, what
node_reservation_facts returns as plan.paths) give the settings its sampler task passes to sampler_code, and
module_utils/_sampler/_systemd_units renders them as that module does.
"""

from __future__ import annotations

import json
import os
import shlex

import jinja2
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _node_plan
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _systemd_units

OMIT = '__omit_place_holder__'
ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                    'roles', 'reservations')


def role_context(**overrides):
    """The role's defaults, then overrides, then the plan's paths for its history (tasks/measure.yml keeps the plan)."""
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        context = yaml.safe_load(handle)
    context.update(overrides)
    context['_reservations_plan'] = {
        'paths': _node_plan.state_paths({'history_path': context['reservations_history_path']})}
    return context


def settings(**overrides):
    """``(settings, sampler_dir)``: what tasks/sampler.yml passes to sampler_code, read from that task itself."""
    # Outside a play the facts module's result is undefined: a setting taken from it falls back to omit, as Ansible
    # leaves the option out.
    context = dict(role_context(**overrides), omit=OMIT)
    with open(os.path.join(ROLE, 'tasks', 'sampler.yml')) as handle:
        task = yaml.safe_load(handle)[0]['nodealloc.kubelet.sampler_code']
    environment = jinja2.Environment(undefined=jinja2.ChainableUndefined)
    rendered = {name: environment.from_string(value).render(context) for name, value in task['settings'].items()}
    rendered = {name: value for name, value in rendered.items() if value != OMIT}
    return rendered, environment.from_string(task['path']).render(context)


def exec_start_argv(**overrides):
    """The unit's ExecStart split into argv, its ``--config`` replaced by the options file's values as flags.

    The script reads the same options either way; callers swap paths and durations in the flags. With the sampler's
    directory overridden (a scratch install), its bytecode cache goes under it too, not to the node's cache directory.
    """
    values, sampler_dir = settings(**overrides)
    unit = _systemd_units.service(values, sampler_dir)
    argv = shlex.split([line for line in unit.splitlines() if line.startswith('ExecStart=')][0][len('ExecStart='):])
    options = json.loads(_systemd_units.options_json(values))
    if 'reservations_sampler_dir' in overrides:
        argv = [arg.replace(_systemd_units.PYCACHE_DIR, os.path.join(sampler_dir, 'pycache')) for arg in argv]
    config = argv.index('--config')
    flags = []
    for key, value in sorted(options.items()):
        flags += ['--' + key.replace('_', '-'), str(value)]
    return argv[:config] + flags
