# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Who manages a node's kubelet, where its config lives, and which flags would override a file.

Read from files, so that it works (and is tested) on a file tree as well as on a node:

* the kubelet's systemd unit as ``systemctl show -p FragmentPath,DropInPaths,EnvironmentFiles``
  would report it: the first ``kubelet.service`` on the unit search path, every
  ``kubelet.service.d/*.conf`` drop-in (a name in an earlier directory masks the same name in a
  later one; applied in name order), ``Environment=`` and ``EnvironmentFile=`` (a leading ``-``:
  optional), ``ExecStart=`` (an empty one resets the list) - systemd.unit(5), systemd.exec(5);
* ``ExecStart`` expanded as systemd.service(5) "Command lines" does: ``$VAR`` alone is split
  into words, ``${VAR}`` is one word; values from ``EnvironmentFile=`` override ``Environment=``;
* kubeadm: its drop-in ``10-kubeadm.conf`` (kubernetes/release
  ``cmd/krel/templates/latest/kubeadm/10-kubeadm.conf``: ``$KUBELET_KUBEADM_ARGS`` from
  ``/var/lib/kubelet/kubeadm-flags.env``, ``$KUBELET_EXTRA_ARGS`` from ``/etc/default/kubelet``
  on Debian or ``/etc/sysconfig/kubelet`` on RPM systems), its config ``/var/lib/kubelet/config.yaml``
  (cmd/kubeadm/app/constants ``KubeletConfigurationFileName``), rewritten by ``kubeadm upgrade node``;
* kubespray: ``/etc/kubernetes/kubelet.env`` (``KUBELET_ARGS``, roles/kubernetes/node/templates/
  kubelet.env.v1beta1.j2) and ``/etc/kubernetes/kubelet-config.yaml`` (kubelet-config.v1beta1.yaml.j2),
  both re-templated on every kubespray run.

Flags win over the config file and its drop-ins (cmd/kubelet/app/server.go
``kubeletConfigFlagPrecedence``): a reservation flag makes whatever we write dead text.
"""

from __future__ import annotations

import os
import re
import shlex

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._kubelet_process import config_paths, flag_values
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node._procfs import joined, read_file_text

# systemd.unit(5) "System Unit Search Path", highest priority first (the directories a packaged
# or admin-written kubelet.service lives in).
UNIT_DIRS = ('/etc/systemd/system', '/run/systemd/system', '/usr/local/lib/systemd/system',
             '/usr/lib/systemd/system', '/lib/systemd/system')
# Flags that set what kubelet_config writes or validates against (cmd/kubelet/app/options/options.go).
RESERVATION_FLAGS = ('--kube-reserved', '--system-reserved', '--eviction-hard', '--eviction-soft',
                     '--eviction-soft-grace-period', '--eviction-minimum-reclaim', '--kube-reserved-cgroup',
                     '--system-reserved-cgroup', '--enforce-node-allocatable')
KUBEADM_FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env'
KUBEADM_DROP_IN = '10-kubeadm.conf'
KUBEADM_EXTRA_ARGS_FILES = ('/etc/default/kubelet', '/etc/sysconfig/kubelet')
KUBESPRAY_ENV = '/etc/kubernetes/kubelet.env'
KUBESPRAY_CONFIG = '/etc/kubernetes/kubelet-config.yaml'
_VARIABLE = re.compile(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)')


def _path(root, path):
    return joined(root, path.lstrip('/'))


def _read(root, path):
    try:
        return read_file_text(_path(root, path))
    except OSError:
        return None


def _logical_lines(text):
    """Lines with backslash continuations joined, comments and blanks dropped."""
    lines, pending = [], ''
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line[0] in '#;'):
            continue
        if line.endswith('\\'):
            pending += line[:-1] + ' '
            continue
        lines.append(pending + line)
        pending = ''
    if pending:
        lines.append(pending)
    return lines


def parse_environment_file(text):
    """systemd.exec(5) EnvironmentFile=: ``KEY=VALUE`` lines, quotes removed; returns {key: value}."""
    values = {}
    for line in _logical_lines(text or ''):
        key, sep, value = line.partition('=')
        key = key.strip()
        if not sep or not re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] in '"\'' and value[-1] == value[0]:
            value = value[1:-1]
        values[key] = value
    return values


def parse_unit(text):
    """The [Service] settings we need: [(key, value)] in file order."""
    settings, section = [], None
    for line in _logical_lines(text or ''):
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1]
            continue
        key, sep, value = line.partition('=')
        if sep and section == 'Service' and key.strip() in ('ExecStart', 'Environment', 'EnvironmentFile'):
            settings.append((key.strip(), value.strip()))
    return settings


def unit_files(unit, root='/'):
    """(FragmentPath, DropInPaths) of ``unit`` as systemd would load them."""
    fragment = None
    for directory in UNIT_DIRS:
        candidate = joined(directory, unit)
        if os.path.isfile(_path(root, candidate)):
            fragment = candidate
            break
    drop_ins = {}
    for directory in UNIT_DIRS:
        drop_in_dir = joined(directory, unit + '.d')
        try:
            names = os.listdir(_path(root, drop_in_dir))
        except OSError:
            continue
        for name in names:
            if name.endswith('.conf') and name not in drop_ins:
                drop_ins[name] = joined(drop_in_dir, name)
    return fragment, [drop_ins[name] for name in sorted(drop_ins)]


def _expand(exec_start, variables):
    """ExecStart words after systemd's expansion, each with the variable it came from (or None)."""
    try:
        words = shlex.split(exec_start)
    except ValueError:
        words = exec_start.split()
    expanded = []
    for word in words:
        alone = re.match(r'^\$([A-Za-z_][A-Za-z0-9_]*)$', word)
        if alone:
            expanded += [(part, alone.group(1)) for part in variables.get(alone.group(1), '').split()]
            continue
        used = [m.group(1) or m.group(2) for m in _VARIABLE.finditer(word)]
        text = _VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), ''), word)
        expanded.append((text, used[0] if used else None))
    if expanded and expanded[0][0][:1] in '-@+!:':
        expanded[0] = (expanded[0][0].lstrip('-@+!:'), expanded[0][1])
    return expanded


def read_unit(unit=_defaults.UNIT, root='/'):
    """The unit's files, environment and ExecStart, with where each piece came from."""
    fragment, drop_ins = unit_files(unit, root)
    exec_start, exec_source = None, None
    environment, env_source = {}, {}
    env_files = []
    for path in ([fragment] if fragment else []) + drop_ins:
        for key, value in parse_unit(_read(root, path)):
            if key == 'ExecStart':
                exec_start, exec_source = (value or None), (path if value else None)
            elif key == 'Environment':
                try:
                    assignments = shlex.split(value)
                except ValueError:
                    assignments = value.split()
                for assignment in assignments:
                    name, sep, val = assignment.partition('=')
                    if sep:
                        environment[name], env_source[name] = val, '%s (Environment=)' % path
            elif key == 'EnvironmentFile' and value:
                env_files.append((value.lstrip('-'), value.startswith('-')))
    # EnvironmentFile= values override Environment= ones, later files over earlier ones.
    for env_file, _optional in env_files:
        for name, val in parse_environment_file(_read(root, env_file)).items():
            environment[name], env_source[name] = val, env_file
    words = _expand(exec_start, environment) if exec_start else []
    return {
        'fragment_path': fragment,
        'drop_in_paths': drop_ins,
        'environment_files': [path for path, _optional in env_files],
        'exec_start_source': exec_source,
        'argv': [word for word, _var in words],
        'word_sources': [(word, ('%s ($%s, used by ExecStart in %s)' % (env_source.get(var, 'unset'), var, exec_source))
                          if var else 'ExecStart in %s' % exec_source) for word, var in words],
    }


def _flag_sources(word_sources):
    """{flag: source} for every ``--flag`` in expanded ExecStart words."""
    sources = {}
    for word, source in word_sources:
        if word.startswith('--'):
            sources[word.partition('=')[0]] = source
    return sources


def detect(argv=None, unit=None, root='/'):
    """What manages this kubelet and what would override a file we write; never raises on a missing file.

    ``argv`` is the running kubelet's command line (None when no kubelet runs): its flags are
    the ones in force; the unit files say where each came from.
    """
    unit = unit or _defaults.UNIT
    service = read_unit(unit, root)
    unit_argv = service['argv']
    live = argv if argv else unit_argv
    flags = flag_values(live or [])
    sources = _flag_sources(service['word_sources'])
    evidence = []

    def exists(path):
        return os.path.exists(_path(root, path))

    managers = []
    kubeadm = [p for p in (KUBEADM_FLAGS_ENV,) if exists(p)] + [
        p for p in service['drop_in_paths'] if os.path.basename(p) == KUBEADM_DROP_IN]
    if kubeadm:
        managers.append('kubeadm')
        evidence += ['kubeadm: %s' % p for p in kubeadm]
    kubespray = [p for p in (KUBESPRAY_ENV, KUBESPRAY_CONFIG) if exists(p)]
    if kubespray:
        managers.append('kubespray')
        evidence += ['kubespray: %s' % p for p in kubespray]

    extra_args_file = next((p for p in KUBEADM_EXTRA_ARGS_FILES if p in service['environment_files']), None) \
        or next((p for p in KUBEADM_EXTRA_ARGS_FILES if exists(p)), None) \
        or (KUBEADM_EXTRA_ARGS_FILES[0] if exists('/etc/debian_version') else KUBEADM_EXTRA_ARGS_FILES[1])

    reservation_flags = []
    for flag in RESERVATION_FLAGS:
        if flag in flags:
            source = sources.get(flag) or ("the running kubelet's command line (not in %s)"
                                           % ', '.join([service['fragment_path'] or unit] + service['drop_in_paths']))
            reservation_flags.append({'flag': flag, 'value': flags[flag], 'source': source})
    # The one reading of --config/--config-dir (_kubelet_process.config_paths), here of the flags in force.
    config_path, config_dir = config_paths(live or [])
    return {
        'managers': managers,
        'evidence': evidence,
        'unit': {k: service[k] for k in ('fragment_path', 'drop_in_paths', 'environment_files', 'exec_start_source')},
        'flags_from': 'running kubelet' if argv else ('unit files' if unit_argv else None),
        'config_path': config_path,
        'config_dir': config_dir,
        'config_dir_source': sources.get('--config-dir') if config_dir else None,
        'reservation_flags': reservation_flags,
        'kubeadm_extra_args_file': extra_args_file,
        'kubeadm_extra_args': parse_environment_file(_read(root, extra_args_file)).get('KUBELET_EXTRA_ARGS', ''),
        'refusal': refusal(reservation_flags),
    }


def refusal(reservation_flags):
    """The message that stops a write when command-line flags would override it, or None."""
    if not reservation_flags:
        return None
    return ('the kubelet has %s on its command line, which overrides any config file or drop-in '
            '(flags win: cmd/kubelet/app/server.go kubeletConfigFlagPrecedence); nothing written. Remove %s '
            'there and restart the kubelet, so that its config decides (docs/coexistence.md)' % (
                '; '.join('%s=%s (from %s)' % (f['flag'], f['value'], f['source']) for f in reservation_flags),
                'it' if len(reservation_flags) == 1 else 'them'))
