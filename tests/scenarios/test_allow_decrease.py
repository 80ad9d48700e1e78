"""reservations_allow_decrease on real nodes: the run an alert starts (docs/monitoring.md) never lowers a reservation.

One node reserves far more memory than its history needs, so the role, by default, decides a decrease; the same
run with ``-e reservations_allow_decrease=false`` keeps the memory and says why. What is checked is the decision the
facts module made on the node, read from the report, never a number the test wrote. The nspawn nodes read the host's
/proc/meminfo, so the history and the reservation are set in shares of the host's memory M, with the history
(0.45 M) about what a busy test machine uses and the reservation (0.88 M) well above the history plus its headroom
(0.45 M + the 768 MiB least headroom since issue 38, a flat history having no jump; 0.675 M at issue 29's 50 %).
The reservations are capped at 0.7 M (reservations_max_reserved_fraction): however
much a busy host uses when the node reads it (a full run once read more than 0.52 M, which at a 0.9 cap made the memory
recommendation land within the 10 % threshold and the memory decision keep), the memory recommendation stays 0.18 M
below the reservation, past the threshold. Its CPU at the 0.9 cap the test sets, so that a busy host's CPU cannot turn
the run into an increase.
"""

from __future__ import annotations

import json
import os

from helpers.rollout import output_tail, run_playbook
from nodes import nodeio, testnodes
from test_class_pooling import HISTORY, SHIPPED_HEADROOM_MIN, host_memory_gib, history

MIB = 1 << 20


def decision(fleet, node, tmp_path, *extra):
    report_dir = tmp_path / ('report%d' % len(list(tmp_path.iterdir())))
    result = run_playbook(fleet, 'playbooks/recommend.yml', '--check', '-enodealloc_hosts=%s' % node['name'],
                          '-enodealloc_report_dir=%s' % report_dir, '-ereservations_max_reserved_fraction=0.7',
                          # The shipped least headroom: the fleet's own reaches the cap on every node.
                          '-ereservations_memory_headroom_min_bytes=%d' % SHIPPED_HEADROOM_MIN, *extra)
    assert result.returncode == 0, output_tail(result)
    with open(report_dir / 'reservations.json', encoding='utf-8') as handle:
        (entry,) = json.load(handle)['nodes']
    return entry


def test_a_run_with_allow_decrease_false_keeps_a_reservation_the_default_run_would_lower(fresh_fleet, tmp_path):
    node = fresh_fleet['nodes'][0]
    memory_mib = int(host_memory_gib() * 1024)
    cpu_cap_millicores = int(0.9 * os.cpu_count() * 1000)  # the nspawn nodes see the host's CPUs
    config = testnodes.KUBELET_CONFIG.replace(
        'systemReserved:\n  memory: 100Mi',
        'systemReserved:\n  cpu: %dm\n  memory: %dMi' % (cpu_cap_millicores - 100, int(0.88 * memory_mib)))
    assert config != testnodes.KUBELET_CONFIG
    nodeio.ssh(node, 'cat > /var/lib/kubelet/config.yaml && systemctl restart kubelet.service', stdin=config)
    nodeio.wait_healthy(node)
    nodeio.write_text(node, HISTORY, history(0.45 * memory_mib / 1024.0, 0.0))

    default = decision(fresh_fleet, node, tmp_path)
    assert default['status'] == 'ok' and default['decision'] == 'decrease', '\n'.join(
        default['decision_reasons'] + default['explanation'])
    assert default['recommended_reserved_memory_bytes'] < default['current']['reserved_memory_bytes']
    # The memory itself decreases (not only the CPU): what allow_decrease=false must then keep.
    assert any(reason.startswith('memory: ') and 'beyond the threshold' in reason
               for reason in default['decision_reasons']), '\n'.join(default['decision_reasons'])

    kept = decision(fresh_fleet, node, tmp_path, '-ereservations_allow_decrease=false')
    assert kept['status'] == 'ok' and kept['decision'] == 'keep', '\n'.join(
        kept['decision_reasons'] + kept['explanation'])
    assert kept['config_diff'] == []
    assert any('memory decrease not made: allow_decrease is false' in reason
               for reason in kept['decision_reasons']), '\n'.join(kept['decision_reasons'])
