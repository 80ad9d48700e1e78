"""plan() on arbitrary shapes of the config it reads: refusals or a plan, never an exception of another kind."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError, ValidationError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _node_plan
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import json_values

CONFIG = '/var/lib/kubelet/config.yaml'
reserved = st.one_of(json_values, st.dictionaries(st.sampled_from(['memory', 'cpu', 'ephemeral-storage', 'pid']),
                                                  st.one_of(json_values, st.sampled_from(['1Gi', '5', '1e999999', '-1',
                                                                                          '100m', '1e59']))))


def node(current, file_fields, config_dir):
    recommended = {'kube_reserved': {'memory': '1Gi', 'cpu': '100m'}, 'system_reserved': {'memory': '512Mi', 'cpu': '100m'},
                   'reserved_memory_bytes': 3 << 29, 'reserved_millicores': 200, 'eviction_hard_memory_bytes': 100 << 20,
                   'kubepods_memory_limit_bytes': 6 << 30, 'memory_headroom_bytes': 200 << 20}
    # The decision is made on reservations _gather validated (it refuses others, naming the file); the plan also
    # reads each file's own fields, which nobody validated: those, and ``current``, are what varies here.
    decision = _decision.decide({'kube_reserved': {'memory': '2Gi'}, 'system_reserved': {}}, recommended,
                                {'allow_decrease': True})
    return {
        'kubelet': {'config_path': CONFIG, 'config_dir': config_dir, 'unit': 'kubelet.service',
                    'ownership': {'managers': [], 'evidence': [], 'config_dir': config_dir, 'refusal': None},
                    'version': {'refusals': [], 'warnings': []},
                    'reservation_files': {CONFIG: {'fields': file_fields, 'format': 'yaml', 'exists': True}}},
        'cgroup': {'kubepods_limit_file': '/sys/fs/cgroup/kubepods.slice/memory.max'},
        'current': current, 'recommendation': recommended, 'decision': decision,
    }


@given(st.fixed_dictionaries({'kube_reserved': reserved, 'system_reserved': reserved}),
       # A file's fields are a mapping (_config_file refuses a document that is not one), of anything.
       st.fixed_dictionaries({}, optional={'kubeReserved': reserved, 'systemReserved': reserved, 'kind': json_values}),
       st.sampled_from([None, '/etc/kubernetes/kubelet.conf.d']),
       st.sampled_from([{}, {'use_drop_in': True}, {'use_drop_in': 'auto'}]))
@cpu_deadline
def test_plan_on_any_config_shape(current, file_fields, config_dir, options):
    try:
        planned = _node_plan.plan(node(current, file_fields, config_dir), options)
    except (NodeallocError, ValidationError):
        return
    assert isinstance(planned['refusals'], list) and all(isinstance(r, str) for r in planned['refusals'])
    assert isinstance(planned['report']['config_diff'], list)
