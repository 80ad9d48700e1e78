# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private doc fragment of nodealloc.kubelet: how a measurement becomes a reservation.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r'''
options:
  memory_headroom_percent:
    description:
      - Memory added on top of the measured non-pod working set, as a percentage of it.
      - The larger of this and O(memory_headroom_min_bytes) is added, then the sum is rounded up to whole MiB.
    type: float
    default: 10.0
  memory_headroom_min_bytes:
    description:
      - The least memory headroom, in bytes, however small the measured usage.
    type: int
    default: 104857600
  cpu_headroom_percent:
    description:
      - CPU added on top of the measured non-pod CPU use, as a percentage of it.
    type: float
    default: 10.0
  cpu_headroom_min_millicores:
    description:
      - The least CPU headroom, in millicores.
    type: int
    default: 50
  change_threshold_percent:
    description:
      - A recommendation becomes an action (RV(decision.action) V(increase) or V(decrease)) only when the
        recommended total (kubeReserved + systemReserved) differs from the current total by more than this
        percentage of the current total, and by more than O(change_threshold_min_bytes) for memory or
        O(change_threshold_min_millicores) for CPU. Otherwise the action is V(keep) and no kubelet restarts.
    type: float
    default: 10.0
  change_threshold_min_bytes:
    description: The least memory difference, in bytes, that is worth a kubelet restart.
    type: int
    default: 67108864
  change_threshold_min_millicores:
    description: The least CPU difference, in millicores, that is worth a kubelet restart.
    type: int
    default: 50
'''
