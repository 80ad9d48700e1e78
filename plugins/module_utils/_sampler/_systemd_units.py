# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The sampler's systemd units and its options file, rendered from the role's settings.

No value of an option reaches a command line: ``ExecStart`` names only the script and its options file
(``sampler.json``, written as JSON), so a quote, a ``$`` or a ``%`` in a path or a window is data the script
reads, not words systemd splits (systemd.service(5) "Command lines": quotes, ``$VAR`` and ``%`` specifiers are
all expanded in ``ExecStart``). What must stand in a unit (the sampler's directory, the directories it may
write, ``Nice``, ``MemoryMax``, ``CPUQuota``, the timer's interval) is checked for a form that needs no
quoting at all, and refused otherwise: a newline there would start a directive of its own.

The sandbox (systemd.exec(5)); ``systemd-analyze security --offline=true`` scores the service 0.9 on systemd 252,
and tests/unit/plugins/module_utils/_sampler/test__systemd_units.py keeps it at or below 2.0:

* The sampler runs as uid 0 with an empty capability bounding set, not as a user of its own: the files it
  appends to are shared with root processes (the module's ``record`` writes the history, the role writes the
  decision), and node_exporter's textfile directory is root's. Without capabilities uid 0 writes only what root
  owns, and ``ProtectSystem=strict`` leaves it only the directories in ``ReadWritePaths``.
* What it reads needs no privilege: ``/proc/meminfo``, ``/proc/stat``, ``/proc/locks``, ``/proc/<pid>/{cmdline,
  cgroup,stat,status}``, ``/proc/swaps`` and cgroup files are world-readable. ``/proc/<pid>/ns/*`` of a process with more
  capabilities is not (ptrace access mode, kernel/ptrace.c ``__ptrace_may_access``): _kubelet_process tells a
  containerised kubelet apart by ``NSpid`` in ``status`` instead. Hence no ``ProtectProc=invisible`` (it hides
  other users' processes, and root's from a root without ``CAP_SYS_PTRACE``) and no ``ProcSubset=pid`` (it hides
  ``/proc/meminfo``).
* No network at all (``PrivateNetwork``, ``IPAddressDeny=any``, every address family refused), no devices, no
  new privileges, the ``@system-service`` system calls less ``@privileged`` and ``@resources``.
* Every directive is one systemd 247 (Debian 11) knows: ``RestrictAddressFamilies=AF_UNIX`` then ``~AF_UNIX``
  empties the allow-list, where 249's ``none`` would be an error on 247.
"""

from __future__ import annotations

import json
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError

SERVICE_NAME = 'nodealloc-sampler.service'
TIMER_NAME = 'nodealloc-sampler.timer'
SCRIPT_NAME = 'nodealloc-sampler.py'
OPTIONS_NAME = 'sampler.json'
PYTHON = '/usr/bin/python3'
# The code's directory is read-only in the sandbox: the bytecode the interpreter would write beside it goes to a
# cache directory systemd creates and makes writable (CacheDirectory=), or every run would compile it again.
PYCACHE_NAME = 'nodealloc-sampler'
PYCACHE_DIR = '/var/cache/' + PYCACHE_NAME

# settings key -> (the script's option name in sampler.json): _option_specs.SAMPLER_OPTIONS, their one home.
OPTION_KEYS = _option_specs.sampler_option_keys(settings_only=True)


def _checked(name, value, rule):
    """The value as text when it has the form ``rule`` (an _option_forms check, the one home of these forms)."""
    text = str(value)
    reason = rule(text)
    if reason:
        raise NodeallocError('%s=%r cannot go into a systemd unit: it %s' % (name, text, reason))
    return text


def _unit_path(name, value):
    path = _checked(name, value, _option_forms.unit_path)
    if '/../' in path + '/' or path.endswith('/..'):
        raise NodeallocError('%s=%r cannot go into a systemd unit: it must not climb with ..' % (name, path))
    return os.path.normpath(path)


def _nice(value):
    try:
        nice = int(str(value))
    except ValueError:
        nice = None
    if nice is None or not -20 <= nice <= 19:
        raise NodeallocError('nice=%r cannot go into a systemd unit: it must be an integer from -20 to 19' % (value,))
    return nice


def writable_dirs(settings):
    """The directories the sampler writes in: its history's, its state's and its textfile's (when it writes one)."""
    dirs = {_unit_path('state_path', os.path.dirname(settings['state_path'])),
            _unit_path('history_path', os.path.dirname(settings['history_path']))}
    if settings.get('textfile_path'):
        dirs.add(_unit_path('textfile_path', os.path.dirname(settings['textfile_path'])))
    return sorted(dirs)


def options_json(settings):
    """``sampler.json``: the script's options, as data (the script reads it with ``--config``)."""
    return json.dumps({key: settings[name] for name, key in OPTION_KEYS if name in settings},
                      indent=1, sort_keys=True) + '\n'


def service(settings, sampler_dir):
    """nodealloc-sampler.service: one run of the script, sandboxed (see the module docstring).

    ``-I``: no PYTHON* variables, no user site, not the working directory; ``-S``: no site module (stdlib only), a
    third of the interpreter's start-up, which is most of a run's CPU (docs/benchmarks-history.md, "sampler_cost").
    """
    sampler_dir = _unit_path('sampler_dir', sampler_dir)
    lines = [
        '# Written by nodealloc.kubelet (sampler_code); options in %s.' % os.path.join(sampler_dir, OPTIONS_NAME),
        '[Unit]',
        'Description=nodealloc: record one measurement of non-pod usage and write its metrics',
        '',
        '[Service]',
        'Type=oneshot',
        'Nice=%d' % _nice(settings['nice']),
        'IOSchedulingClass=idle',
        'MemoryMax=%s' % _checked('memory_max', settings['memory_max'], _option_forms.systemd_bytes),
        'CPUQuota=%s' % _checked('cpu_quota', settings['cpu_quota'], _option_forms.systemd_percent),
        'CacheDirectory=%s' % PYCACHE_NAME,
        'ExecStart=%s -I -S -X pycache_prefix=%s %s --config %s' % (
            PYTHON, PYCACHE_DIR, os.path.join(sampler_dir, SCRIPT_NAME), os.path.join(sampler_dir, OPTIONS_NAME)),
        'UMask=0022',  # node_exporter (another user) reads the textfile
        'User=root',
        'CapabilityBoundingSet=',
        'AmbientCapabilities=',
        'NoNewPrivileges=yes',
        'ProtectSystem=strict',
        # "-": a directory missing at start is left out rather than failing the unit (sampler_code creates them).
        'ReadWritePaths=%s' % ' '.join('-' + path for path in writable_dirs(settings)),
        'ProtectHome=yes',
        'PrivateTmp=yes',
        'PrivateDevices=yes',
        'DevicePolicy=closed',
        'PrivateMounts=yes',
        'PrivateNetwork=yes',
        'IPAddressDeny=any',
        'RestrictAddressFamilies=AF_UNIX',
        'RestrictAddressFamilies=~AF_UNIX',
        'ProtectKernelTunables=yes',
        'ProtectKernelModules=yes',
        'ProtectKernelLogs=yes',
        'ProtectControlGroups=yes',
        'ProtectClock=yes',
        'ProtectHostname=yes',
        'RestrictNamespaces=yes',
        'RestrictRealtime=yes',
        'RestrictSUIDSGID=yes',
        'LockPersonality=yes',
        'MemoryDenyWriteExecute=yes',
        'RemoveIPC=yes',
        'KeyringMode=private',
        'SystemCallArchitectures=native',
        'SystemCallFilter=@system-service',
        'SystemCallFilter=~@privileged @resources',
        # A call outside the filter fails with EPERM (the run reports it) rather than killing the run with SIGSYS.
        'SystemCallErrorNumber=EPERM',
    ]
    return '\n'.join(lines) + '\n'


def timer(settings):
    """nodealloc-sampler.timer: a run every ``interval``."""
    interval = _checked('interval', settings['interval'], _option_forms.systemd_timespan)
    return '\n'.join([
        '# Written by nodealloc.kubelet (sampler_code).',
        '[Unit]',
        'Description=nodealloc: measure non-pod usage every %s' % interval,
        '',
        '[Timer]',
        'OnBootSec=2min',
        'OnUnitActiveSec=%s' % interval,
        'AccuracySec=10s',
        '',
        '[Install]',
        'WantedBy=timers.target',
    ]) + '\n'


def files(settings, sampler_dir, unit_dir):
    """``{path: (content, mode)}``: the two units under ``unit_dir`` and ``sampler.json`` in ``sampler_dir``."""
    return {
        os.path.join(unit_dir, SERVICE_NAME): (service(settings, sampler_dir), 0o644),
        os.path.join(unit_dir, TIMER_NAME): (timer(settings), 0o644),
        os.path.join(sampler_dir, OPTIONS_NAME): (options_json(settings), 0o644),
    }
