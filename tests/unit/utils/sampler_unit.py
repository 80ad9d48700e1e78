"""The sampler unit's command line as the role renders it at its defaults, without Ansible.

Used by the unit test of the script's options and by benchmarks/sampler_cost.py, so both run what the role installs.
"""

from __future__ import annotations

import os
import shlex

import jinja2
import yaml

ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                    'roles', 'reservations')


def exec_start_argv(**overrides):
    """ExecStart of nodealloc-sampler.service split into argv: the role's defaults, then its vars/main.yml, then overrides."""
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        context = yaml.safe_load(handle)
    context.update(overrides)
    with open(os.path.join(ROLE, 'vars', 'main.yml')) as handle:
        role_vars = yaml.safe_load(handle)
    with open(os.path.join(ROLE, 'templates', 'nodealloc-sampler.service.j2')) as handle:
        exec_start = [line for line in handle if line.startswith('ExecStart=')][0][len('ExecStart='):]
    environment = jinja2.Environment()
    environment.filters['dirname'] = os.path.dirname
    for name, value in role_vars.items():  # each may use the defaults and the ones before it
        context[name] = environment.from_string(value).render(context)
    return shlex.split(environment.from_string(exec_start).render(context))
