# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Argument specs shared by modules; the matching docs are the _kubelet and _policy doc fragments."""

from __future__ import annotations

KUBELET_OPTIONS = dict(
    kubelet_config_path=dict(type='path', default='/var/lib/kubelet/config.yaml'),
    kubelet_config_dir=dict(type='path'),
    kubelet_process_names=dict(type='list', elements='str', default=['kubelet']),
    runtime_process_names=dict(type='list', elements='str',
                               default=['containerd', 'crio', 'dockerd', 'cri-dockerd']),
    kubepods_cgroup=dict(type='str'),
    cgroup_root=dict(type='path'),
)

POLICY_OPTIONS = dict(
    memory_headroom_percent=dict(type='float', default=10.0),
    memory_headroom_min_bytes=dict(type='int', default=104857600),
    cpu_headroom_percent=dict(type='float', default=10.0),
    cpu_headroom_min_millicores=dict(type='int', default=50),
    change_threshold_percent=dict(type='float', default=10.0),
    change_threshold_min_bytes=dict(type='int', default=67108864),
    change_threshold_min_millicores=dict(type='int', default=50),
    history=dict(type='bool', default=True),
    history_path=dict(type='path', default='/var/lib/nodealloc/history.jsonl'),
    history_window=dict(type='str', default='7d'),
    percentile=dict(type='float', default=100.0),
    stabilization_window=dict(type='str', default='24h'),
    single_reading_headroom_factor=dict(type='float', default=2.0),
    min_reserved=dict(type='str', default='256Mi'),
    max_reserved_fraction=dict(type='float', default=0.5),
    policy=dict(type='str', default='measured', choices=['measured', 'gke', 'aks', 'aks-legacy', 'eks', 'openshift']),
    floor_policy=dict(type='str', default='none', choices=['none', 'gke', 'aks', 'aks-legacy', 'eks', 'openshift']),
    max_pods=dict(type='int'),
    reaction_time=dict(type='str', default='24h'),
    jump_headroom_factor=dict(type='float', default=1.5),
    cold_start_prior=dict(type='str', default='gke', choices=['none', 'gke', 'aks', 'aks-legacy', 'eks', 'openshift']),
    cpu_guarantee=dict(type='str', default='reserve', choices=['reserve', 'report']),
)

OUTPUT_OPTIONS = dict(
    textfile_path=dict(type='path'),
)
