# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The kubelet's own defaults and names, and our names beside them: the one home of each.

Everything here is what a kubelet does when its configuration says nothing, or where a kubeadm node keeps
things; the options (_option_specs), the kubelet arithmetic (_node_allocatable) and the readers take them from
here. Each value names the upstream source it mirrors (kubernetes/kubernetes unless said otherwise).
"""

from __future__ import annotations

# k8s.io/kubelet/config/v1beta1 (register.go GroupName "kubelet.config.k8s.io", SchemeGroupVersion v1beta1): the only
# version that carries the KubeletConfiguration kind.
API_VERSION = 'kubelet.config.k8s.io/v1beta1'
KIND = 'KubeletConfiguration'

# cmd/kubeadm/app/constants/constants.go: KubeletRunDirectory (/var/lib/kubelet) + KubeletConfigurationFileName
# (config.yaml), the file kubeadm writes and points the kubelet's --config at; read when no running kubelet names one.
CONFIG_PATH = '/var/lib/kubelet/config.yaml'

# The systemd unit of the kubelet in the kubeadm packages (kubernetes/release cmd/krel/templates/latest/kubelet/
# kubelet.service) and in kubespray: the unit restarted when no running kubelet tells us its own.
UNIT = 'kubelet.service'

# pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration: HealthzBindAddress "127.0.0.1",
# HealthzPort 10248 (pkg/cluster/ports KubeletHealthzPort); the kubelet serves /healthz there.
HEALTHZ_BIND_ADDRESS = '127.0.0.1'
HEALTHZ_PORT = 10248
HEALTHZ_URL = 'http://%s:%d/healthz' % (HEALTHZ_BIND_ADDRESS, HEALTHZ_PORT)

# pkg/kubelet/apis/config/v1beta1/defaults.go: ``if obj.MaxPods == 0 { obj.MaxPods = 110 }``.
MAX_PODS = 110

# pkg/kubelet/apis/config/v1beta1/defaults.go DefaultNodeAllocatableEnforcement: only a nil enforceNodeAllocatable
# becomes ["pods"]; an explicit empty list stays empty (no enforcement).
ENFORCE_NODE_ALLOCATABLE = ('pods',)

# pkg/kubelet/eviction/defaults_linux.go DefaultEvictionHard, which cmd/kubelet/app/server.go loadConfigFile applies
# only when the config sets no evictionHard at all. imagefs.inodesFree joined it in 1.30 (kubernetes#121834, not
# cherry-picked: "only valid for >= 1.30", kubernetes/website#44696); before, four signals. Its memory.available also as
# bytes, for the readers that must not load the quantity parser (the sampler's metrics).
EVICTION_HARD_MEMORY_AVAILABLE_BYTES = 100 * 1024 * 1024
EVICTION_HARD_BEFORE_1_30 = {
    'memory.available': '%dMi' % (EVICTION_HARD_MEMORY_AVAILABLE_BYTES // (1024 * 1024)),
    'nodefs.available': '10%',
    'nodefs.inodesFree': '5%',
    'imagefs.available': '15%',
}
EVICTION_HARD = dict(EVICTION_HARD_BEFORE_1_30, **{'imagefs.inodesFree': '5%'})
EVICTION_HARD_IMAGEFS_INODES_FROM = (1, 30)
# mergeDefaultEvictionSettings (k8s.io/kubelet config/v1beta1 types.go): new in 1.33 (kubernetes#127577, release-1.33
# notes). Without it, or before 1.33 (an older kubelet ignores the unknown field), a config's evictionHard replaces
# the default whole: "other signals that are not specified in this configuration will be set to 0".
MERGE_DEFAULT_EVICTION_FROM = (1, 33)


def _release(version):
    """(major, minor) from a {'version': '1.35.0', ...} (the facts' kubelet.version, _version_rules.parse), or None."""
    text = (version or {}).get('version')
    if not text:
        return None
    major, minor = str(text).split('.')[:2]
    return int(major), int(minor)


def default_eviction_hard(version=None):
    """The kubelet's default evictionHard for its version; an unknown version is taken as a current one."""
    release = _release(version)
    if release is not None and release < EVICTION_HARD_IMAGEFS_INODES_FROM:
        return dict(EVICTION_HARD_BEFORE_1_30)
    return dict(EVICTION_HARD)


def effective_eviction_hard(config, version=None):
    """The evictionHard map a kubelet of ``version`` runs with ``config``: the default when the config sets none; a
    set map alone (every other signal 0, no threshold), unless mergeDefaultEvictionSettings (1.33+) fills the
    default's other signals in. cmd/kubelet/app/server.go loadConfigFile."""
    hard = config.get('evictionHard')
    if hard is None:
        return default_eviction_hard(version)
    release = _release(version)
    if config.get('mergeDefaultEvictionSettings') is True and (release is None
                                                               or release >= MERGE_DEFAULT_EVICTION_FROM):
        return dict(default_eviction_hard(version), **hard)
    return dict(hard)


# cmd/kubelet/app/server.go mergeKubeletConfigurations: under --config-dir the kubelet reads only files whose
# extension (filepath.Ext) is ".conf", walked in lexical order; anything else there is ignored.
DROP_IN_SUFFIX = '.conf'

# Ours, not the kubelet's: the drop-in we write into --config-dir. "50-" sorts it after a distribution's low-numbered
# base files and before an admin's late overrides (a later file wins in the merge).
DROP_IN_NAME = '50-nodealloc.conf'

# The drop-in directory the kubelet documentation names as its example (kubernetes/website
# content/en/docs/tasks/administer-cluster/kubelet-config-file.md, "--config-dir=/etc/kubernetes/kubelet.conf.d"):
# where enable_config_dir points a kubeadm node's kubelet.
KUBEADM_CONFIG_DIR = '/etc/kubernetes/kubelet.conf.d'


def effective_enforce_node_allocatable(value):
    """enforceNodeAllocatable as the kubelet applies it: absent (None) is ["pods"], [] is no enforcement."""
    return list(ENFORCE_NODE_ALLOCATABLE) if value is None else list(value)


def drop_in_path(drop_in_dir):
    """Our drop-in's path in ``drop_in_dir``: kubelet_reservations_apply's drop_in_name default (the role never passes
    another), where the plan writes and the facts read it."""
    return drop_in_dir.rstrip('/') + '/' + DROP_IN_NAME


def drop_in_name_problem(name):
    """Why ``name`` cannot be our drop-in's file name (None when it can): a plain name the kubelet reads."""
    if '/' in name or not name.endswith(DROP_IN_SUFFIX):
        return 'must be a file name ending in %s (the kubelet reads only those)' % DROP_IN_SUFFIX
    return None
