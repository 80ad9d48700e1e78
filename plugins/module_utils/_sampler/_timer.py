# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The sampler's timer in systemd: reloaded after a unit changed, enabled and started, each only where it is due.

``sampler_code`` does this in the call that installs the sampler (its ``start_timer``). As a task of its own
(``ansible.builtin.systemd_service``) it was one more module run on every node on every run, mostly to learn that
nothing was due: 0.6-0.7 s a node on nspawn nodes and 26 s of a 3-guest measure play on emulated guests (issue 48).
What counts as enabled and started is what ``systemd_service`` with ``enabled: true`` and ``state: started``
reads: ``systemctl is-enabled`` and ``systemctl is-active`` exiting 0.
"""

from __future__ import annotations

from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError


def ensure_started(run, systemctl, timer, reload, check_mode):
    """Reload systemd (``reload``: a unit file changed), then enable and start ``timer`` where it is not.

    ``run(argv)`` returns ``(rc, stdout, stderr)`` (AnsibleModule.run_command); ``systemctl`` is its path, or None
    where there is none. In check mode only the two questions run; a timer systemd cannot answer for (its unit not
    installed yet, no systemd running) would be enabled and started. Returns what was done, or would be:
    ``daemon_reloaded``, ``timer_enabled``, ``timer_started``.
    """
    if not systemctl:
        if check_mode:
            return {'daemon_reloaded': bool(reload), 'timer_enabled': True, 'timer_started': True}
        raise NodeallocError('systemctl not found: the sampler runs from a systemd timer')
    if reload and not check_mode:
        _must(run, [systemctl, 'daemon-reload'])
    enabled = run([systemctl, 'is-enabled', timer])[0] == 0
    active = run([systemctl, 'is-active', timer])[0] == 0
    if not check_mode:
        if not enabled:
            _must(run, [systemctl, 'enable', timer])
        if not active:
            _must(run, [systemctl, 'start', timer])
    return {'daemon_reloaded': bool(reload), 'timer_enabled': not enabled, 'timer_started': not active}


def _must(run, argv):
    rc, out, err = run(argv)
    if rc != 0:
        raise NodeallocError('%s failed (exit %d): %s' % (' '.join(argv[1:]), rc, (err or out).strip()[:500]))
