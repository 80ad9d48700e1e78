# Private to nodealloc.kubelet: not a public API, may change without notice.
"""A recommendation in the form kubeadm or kubespray takes it, for users who keep those tools in charge.

* kubespray: host_vars read by roles/kubernetes/node/templates/kubelet-config.v1beta1.yaml.j2
  (``kube_reserved``/``system_reserved`` switch the blocks on; ``kube_memory_reserved``,
  ``kube_cpu_reserved``, ``kube_ephemeral_storage_reserved``, ``kube_pid_reserved`` and the
  ``system_*`` ones fill them; kubespray docs/operations/cgroups.md). Kubespray re-templates the
  kubelet config from these on every run, so they are where the values must live on its nodes.
* kubeadm: a patch for ``kubeadm init|join|upgrade node --patches DIR`` (kubeadm 1.25 and later,
  kubernetes/kubernetes#110405): a file named ``target[suffix][+patchtype].extension`` with target
  ``kubeletconfiguration``; kubeadm applies it to the KubeletConfiguration it writes to
  /var/lib/kubelet/config.yaml on that node (cmd/kubeadm/app/util/patches).
"""

from __future__ import annotations

import json

KUBEADM_PATCH_NAME = 'kubeletconfiguration+strategic.yaml'
_RESOURCES = (('cpu', 'cpu'), ('memory', 'memory'), ('ephemeral-storage', 'ephemeral_storage'), ('pid', 'pid'))


def kubespray_vars(kube_reserved, system_reserved):
    """{variable: value} for kubespray, only for the resources the recommendation sets."""
    result = {}
    for prefix, reserved in (('kube', kube_reserved or {}), ('system', system_reserved or {})):
        values = {'%s_%s_reserved' % (prefix, name): str(reserved[resource])
                  for resource, name in _RESOURCES if reserved.get(resource) is not None}
        if values:
            result['%s_reserved' % prefix] = True
            result.update(values)
    return result


def _yaml_scalar(value):
    # JSON strings and booleans are YAML; quoting keeps "1000" (a pid count) a string, as kubespray expects.
    return json.dumps(value)


def render_kubespray_host_vars(host, kube_reserved, system_reserved, explanation=()):
    lines = ['---', '# nodealloc.kubelet recommendation for %s (kubespray host_vars).' % host]
    lines += ['# %s' % line for line in explanation]
    lines += ['%s: %s' % (key, _yaml_scalar(value)) for key, value in kubespray_vars(kube_reserved, system_reserved).items()]
    return '\n'.join(lines) + '\n'


def render_kubeadm_patch(host, kube_reserved, system_reserved):
    """A KubeletConfiguration patch with the reservations; other fields stay as kubeadm writes them."""
    lines = ['# nodealloc.kubelet recommendation for %s: kubeadm join|upgrade node --patches <this directory>' % host,
             'apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration']
    for field, reserved in (('kubeReserved', kube_reserved or {}), ('systemReserved', system_reserved or {})):
        if reserved:
            lines.append('%s:' % field)
            lines += ['  %s: %s' % (resource, _yaml_scalar(str(value))) for resource, value in sorted(reserved.items())]
    return '\n'.join(lines) + '\n'


def handover(host, facts):
    """The files for one host from its node_reservation_facts result; None when it has no recommendation."""
    recommendation = (facts or {}).get('recommendation') or {}
    kube, system = recommendation.get('kube_reserved'), recommendation.get('system_reserved')
    if not kube and not system:
        return None
    return {
        'kubespray_host_vars': render_kubespray_host_vars(host, kube, system),
        'kubeadm_patch_name': KUBEADM_PATCH_NAME,
        'kubeadm_patch': render_kubeadm_patch(host, kube, system),
    }
