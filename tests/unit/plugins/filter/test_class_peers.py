"""The class_peers filter: which peers' records a node decides again with."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.filter.class_peers import FilterModule

class_peers = FilterModule().filters()['class_peers']


def record(jump_mib, node_class=(16, 4), cold=False, jump_days=3):
    return {'node_class': list(node_class), 'cold_start': cold,
            'jumps': {'reaction_seconds': 86400, 'memory_bytes': None if cold else 600 << 20,
                      'millicores': None if cold else 0, 'warm': not cold,
                      'memory_jump_bytes': 0 if cold else jump_mib << 20, 'jump_days': 0 if cold else jump_days},
            'reserved_memory_bytes': None if cold else 2 << 30, 'reserved_millicores': None if cold else 200}


def test_a_node_gets_its_class_peers_only_where_they_change_its_decision():
    # 'a' is young (one day of jumps): 'b' lends it a larger jump; 'b' has days of jumps of its own, so keeps them
    # (issue 38: peers lend jumps to a young node, no peaks to anyone); 'd' is cold and takes the class's prior.
    records = {'a': record(10, jump_days=1), 'b': record(300), 'c': record(5000, node_class=(32, 8)),
               'd': record(0, cold=True), 'unreachable': None}
    assert class_peers(records, 'a') == [records['b'], records['d']]
    assert class_peers(records, 'b') == []
    assert class_peers(records, 'c') == []
    assert class_peers(records, 'd') == [records['a'], records['b']]
    assert class_peers(records, 'unreachable') == [] and class_peers(records, 'not-in-the-run') == []


def test_anything_but_a_dict_of_records_is_an_error():
    with pytest.raises(AnsibleFilterError, match='keyed by host'):
        class_peers([record(1)], 'a')


def test_a_named_class_pools_only_with_its_own_name_never_with_a_pool_of_the_same_size():
    # A GPU pool and a general pool, both 16 GiB / 4 CPUs: the inventory's nodealloc_node_class keeps them apart.
    # The young ones (a day of jumps) are those peers lend to (issue 38).
    gpu, general, unnamed = (dict(record(10, jump_days=1), class_name='gpu'), dict(record(900), class_name='general'),
                             record(10, jump_days=1))
    gpu_busy = dict(record(300), class_name='gpu')
    records = {'gpu': gpu, 'general': general, 'unnamed': unnamed, 'gpu-busy': gpu_busy}
    assert class_peers(records, 'gpu') == [gpu_busy]
    assert class_peers(records, 'unnamed') == []  # a size class does not take a named pool's peaks either
