"""nodealloc sampler: measure once, record the reading in the node's history, write the metrics, exit.

Installed by the nodealloc.kubelet.reservations role (reservations_install_sampler, on by default)
with the collection's module_utils beside it, and run by nodealloc-sampler.timer. It only measures
and records (no policy, no kubelet config): see plugins/module_utils/_sampler/_sample_once.py. Needs python3 only.
The unit runs it with ``--config PATH``: its options as a JSON object (``sampler.json``, written by the
sampler_code module), so that no option value is ever part of the unit's command line; a flag given
after it wins over the file's value.
Usage: nodealloc-sampler.py [--config PATH] [--history PATH] [--state PATH] [--textfile PATH|''] [--decision PATH]
                            [--percentile P] [--window 7d] [--sample-seconds S] [--step-dir DIR]
                            [--cgroup-driver systemd|cgroupfs]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once  # noqa: E402
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError  # noqa: E402

# (flag, default, type, help): derived from _option_specs.SAMPLER_OPTIONS, the one home of the sampler's settings
# (their defaults are _sample_once.DEFAULTS); a flag is ``--`` and the setting's key in sampler.json.
_SETTINGS = _option_specs.SAMPLER_OPTIONS
_KEYS = _option_specs.sampler_option_keys()  # (setting name, key)
_KINDS = {'float': float, 'int': int}
OPTIONS = (('--config', '', str, "a JSON object of these options (keys: %s); the flags win"
            % ', '.join(key for _name, key in _KEYS)),) + tuple(
    ('--' + key.replace('_', '-'), _sample_once.DEFAULTS[name], _KINDS.get(_SETTINGS[name]['type'], str),
     _SETTINGS[name]['description']) for name, key in _KEYS)


def parse_args(argv, fast=True):
    """The options as a dict keyed like argparse's dest; argparse only for --help, a mistake, or ``fast=False``.

    Importing argparse, with the gettext, locale and shutil it loads, was a sixth of a run's CPU.
    """
    if not fast:
        return _parse_with_argparse(argv)
    values = {flag[2:].replace('-', '_'): default for flag, default, _type, _help in OPTIONS}
    types = {flag: kind for flag, _default, kind, _help in OPTIONS}
    index = 0
    try:
        while index < len(argv):
            flag, equals, value = argv[index].partition('=')
            if not equals:
                index += 1
                value = argv[index]
                if value.startswith('--'):
                    raise ValueError(value)
            values[flag[2:].replace('-', '_')] = types[flag](value)
            index += 1
        return values
    except (IndexError, KeyError, ValueError):
        return _parse_with_argparse(argv)


def _parse_with_argparse(argv):
    import argparse

    parser = argparse.ArgumentParser(prog='nodealloc-sampler')
    for flag, default, kind, help_text in OPTIONS:
        parser.add_argument(flag, default=default, type=kind, help=help_text)
    return vars(parser.parse_args(argv))


def with_config(args, argv):
    """``args`` with the values of ``--config``'s file for the options not given as flags."""
    if not args['config']:
        return args
    import json

    with open(args['config'], 'r', encoding='utf-8') as handle:
        config = json.load(handle)
    if not isinstance(config, dict):
        raise ValueError('%s: not a JSON object' % args['config'])
    given = {arg.partition('=')[0][2:].replace('-', '_') for arg in argv if arg.startswith('--')}
    kinds = {flag[2:].replace('-', '_'): kind for flag, _default, kind, _help in OPTIONS}
    unknown = sorted(set(config) - set(kinds) - {'config'})
    if unknown:
        raise ValueError('%s: unknown options %s' % (args['config'], ', '.join(unknown)))
    return dict(args, **{key: kinds[key](value) for key, value in config.items() if key not in given})


def main(argv):
    args = parse_args(argv)
    try:
        args = with_config(args, argv)
    except (OSError, ValueError, TypeError) as exc:
        sys.stderr.write('nodealloc-sampler: --config: %s\n' % exc)
        return 1
    options = {name: args[key] for name, key in _KEYS}
    try:
        figures, problems = _sample_once.run(options)
    except (NodeallocError, ValueError) as exc:
        sys.stderr.write('nodealloc-sampler: %s\n' % exc)
        return 1
    for problem in problems:
        sys.stderr.write('nodealloc-sampler: %s\n' % problem)
    if figures['mid_change']:
        sys.stderr.write('nodealloc-sampler: not recorded: a nodealloc step holds the node lock (the node is mid-change)\n')
    return 0 if figures['recorded'] or figures['mid_change'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
