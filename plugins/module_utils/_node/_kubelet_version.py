# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The kubelet binary's version, asked of the binary itself (``kubelet --version``), and what it refuses on this node.

The one node reader that runs a process; moved here from the facts orchestrator as it was (_gather).
"""

from __future__ import annotations

import shutil
import subprocess

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _version_rules
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_process

VERSION_TIMEOUT_SECONDS = 30  # a kubelet under emulation (the VM tests) takes seconds just to start


def run_version_command(command):
    """What ``command`` (``[kubelet, '--version']``) prints, or raises OSError/ValueError."""
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                              timeout=VERSION_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL, cwd='/',
                              env=_kubelet_process.PROBE_ENVIRONMENT)
    except subprocess.TimeoutExpired:
        raise ValueError('no answer within %d s' % VERSION_TIMEOUT_SECONDS)
    if done.returncode != 0:
        raise ValueError('exit status %d' % done.returncode)
    return done.stdout.decode('utf-8', 'replace')


def kubelet_version(kubelet, config, cgroup_version, not_found, proc_root='/proc'):
    """The kubelet binary's version, and what it refuses with this config on this node (_version_rules)."""
    command = _kubelet_process.version_command(kubelet['argv'], kubelet['pid'], proc_root, shutil.which, not_found)
    result = {'command': command, 'text': None, 'version': None, 'git_version': None}
    parsed = None
    if command is None:
        if kubelet['pid'] is None:  # else version_command said why not
            not_found.append('no kubelet binary to ask its version (no running kubelet, no kubelet on the PATH)')
    else:
        try:
            result['text'] = run_version_command(command).strip()
            parsed = _version_rules.parse(result['text'])
        except (OSError, ValueError) as exc:
            not_found.append('%s failed: %s' % (' '.join(command), exc))
        if result['text'] is not None and parsed is None:
            not_found.append('%s named no version: %r' % (' '.join(command), result['text'][:200]))
    if parsed:
        result.update(version=parsed['version'], git_version=parsed['git_version'])
    environment = _kubelet_process.environment_names(kubelet['pid'], proc_root) if kubelet['pid'] else None
    config_dir_in_use = bool(kubelet['argv'] and _kubelet_process.config_paths(kubelet['argv'])[1])
    verdict = _version_rules.check(parsed, cgroup_version, config, config_dir_in_use,
                                   dict.fromkeys(environment or ()))
    result.update(features=_version_rules.features(parsed),
                  fail_cgroup_v1=_version_rules.fail_cgroup_v1(parsed, config),
                  refusals=verdict['refusals'], warnings=verdict['warnings'] if kubelet_found(kubelet, config) else [])
    return result


def kubelet_found(kubelet, config):
    """A kubelet process or a kubelet config was found (the report's ``no_kubelet`` is the opposite).

    Where neither is, the warnings about what a kubelet would do on this node (failCgroupV1, cgroup v1's end of life)
    speak of one that is not there: the module would print them on every run of a machine that runs no kubelet
    (issue 46). The cgroup's ``end_of_life`` field still says it.
    """
    return bool(kubelet.get('pid') or kubelet.get('config_path') or kubelet.get('config_dir') or config)
