# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: class_peers
short_description: The records of a node's class peers that would change its decision
version_added: 0.1.0
description:
  - Takes every node's C(class_record) (as M(nodealloc.kubelet.node_reservation_facts) returns it), keyed by host,
    and returns the records of the other nodes of the given host's class (the inventory's C(nodealloc_node_class)
    where set, else memory size rounded to whole GiB and CPU count, the class the report and the node templates
    group by; a named class never pools with a size class) when deciding with them would change something - a larger window peak than the host's own,
    or, for a host whose history does not yet span one reaction time, a peer that has such a history.
  - Returns an empty list otherwise, so the role decides a node again (with the reading it already took, not a
    second measurement) only where pooling matters.
author:
  - nodealloc.kubelet developers (@nodealloc)
options:
  _input:
    description: Each host's C(class_record), keyed by inventory hostname; hosts without one (not measured) are skipped.
    type: dict
    required: true
  host:
    description: The host whose peers are wanted.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Decide again with the node's class
  nodealloc.kubelet.node_reservation_facts:
    class_peers: "{{ records_by_host | nodealloc.kubelet.class_peers(inventory_hostname) }}"
'''

RETURN = r'''
_value:
  description: The peers' records to pass to the module's C(class_peers); empty when they would change nothing.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy._headroom import peers_that_matter


def class_peers(records, host):
    if not isinstance(records, dict):
        raise AnsibleFilterError('class_peers: expects a dict of class records keyed by host, got %s'
                                 % type(records).__name__)
    own = records.get(host)
    others = [record for name, record in records.items() if name != host and isinstance(record, dict)]
    return peers_that_matter(own if isinstance(own, dict) else None, others)


class FilterModule:
    def filters(self):
        return {'class_peers': class_peers}
