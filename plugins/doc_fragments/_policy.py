# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private doc fragment of nodealloc.kubelet: how a measurement becomes a reservation.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r'''
options:
  memory_headroom_rule:
    description:
      - How the memory added on top of P, the history window's peak of non-pod memory (its O(percentile)), is sized.
      - V(jumps), bytes from the node's own jumps above the preceding peak (the history cut into O(reaction_time)
        periods; each period's peak above every reading before it), the largest of them in O(history_window),
        at least O(memory_headroom_min_bytes) and at most O(memory_headroom_max_bytes). A node with fewer than two
        such periods of its own also takes the largest jump of its class's peers (O(class_peers)) and
        O(memory_headroom_percent) of P, under the same bounds.
      - V(percent), the rule before, O(memory_headroom_percent) of P, at least O(memory_headroom_min_bytes).
      - The headroom is added and the sum rounded up to whole MiB.
    type: str
    choices: [jumps, percent]
    default: jumps
  memory_headroom_percent:
    description:
      - Memory added on top of P as a percentage of P, under O(memory_headroom_rule=percent), and for a node with
        fewer than two days of jumps of its own under O(memory_headroom_rule=jumps).
    type: float
    default: 50.0
  memory_headroom_min_bytes:
    description:
      - The least memory headroom, however small the measured usage or the node's jumps. Plain bytes
        (V(805306368)) or a Kubernetes quantity (V(768Mi), V(1Gi)).
    type: raw
    default: 805306368
  memory_headroom_max_bytes:
    description:
      - The most memory headroom the O(memory_headroom_rule=jumps) rule adds (never below
        O(memory_headroom_min_bytes)). Plain bytes (V(2147483648)) or a Kubernetes quantity (V(2Gi)).
    type: raw
    default: 2147483648
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
      - A decrease becomes an action (RV(decision.action) V(decrease)) only when the recommended total
        (kubeReserved + systemReserved) is below the current total by more than this percentage of the current total,
        and by more than O(change_threshold_min_bytes) for memory or O(change_threshold_min_millicores) for CPU.
        An increase needs only the minimum (the percentage would eat into the headroom), and acts within it when
        what is reserved leaves less than half the headroom. Otherwise the action is V(keep) and no kubelet restarts.
    type: float
    default: 10.0
  change_threshold_min_bytes:
    description:
      - The least memory difference that is worth a kubelet restart. Plain bytes (V(67108864)) or a Kubernetes
        quantity (V(64Mi)).
    type: raw
    default: 67108864
  change_threshold_min_millicores:
    description: The least CPU difference, in millicores, that is worth a kubelet restart.
    type: int
    default: 50
  history:
    description:
      - Recommend from the history of measurements on the node (O(history_path)); the recommendation uses the
        O(percentile) of the window. Readings are appended by the sampler, or by a module run with O(record=true).
    type: bool
    default: true
  history_path:
    description: The history file (JSON lines, bounded, rotated). The directory is created when missing.
    type: path
    default: /var/lib/nodealloc/history.jsonl
  history_window:
    description:
      - How far back the recommendation looks, as V(7d), V(24h), V(90m) or any Go duration.
      - P is the peak over it, and the jumps of O(memory_headroom_rule=jumps) are read in it; a week keeps a
        weekday's peak over a quiet weekend.
    type: str
    default: 7d
  percentile:
    description:
      - The percentile of non-pod usage over the window the reservation must cover. V(100) (the peak) by default,
        because reserving too little risks a global OOM that takes the kubelet down, while reserving a little too
        much only wastes memory. Lower values trade that safety for capacity.
    type: float
    default: 100.0
  stabilization_window:
    description:
      - Increases act at once. A decrease acts only once the history covers this window and the lower value has
        held through it (the recommendation never goes below the peak of this window).
    type: str
    default: 24h
  allow_decrease:
    description:
      - V(false) keeps, per resource, what is reserved where the recommendation is lower (the reason says so); increases
        act as ever. For a run started to raise the reservation, such as one the C(NodeallocNearReservation) alert
        starts on a single node, which measures without its class's climbs and could otherwise decide lower.
    type: bool
    default: true
  reserve_ephemeral_storage:
    description:
      - V(true) writes the recommended C(ephemeral-storage) (measured non-pod use of the kubelet's filesystem x 1.5, at
        least 1 GiB) into the reservation, in the map that holds it today, else C(systemReserved); a change of it
        alone restarts the kubelet like any other.
      - V(false) (the default) recommends and reports it beside allocatable C(ephemeral-storage), and writes today's
        maps back as they are, so that an upgrade of the collection restarts no kubelet for a resource nobody asked to
        reserve.
    type: bool
    default: false
    version_added: 0.1.0
  reserve_pids:
    description:
      - V(true) writes the recommended C(pid) (the peak of the node's tasks outside the pods over its history x 1.5,
        rounded up to a hundred, at least 1000) into the reservation, in the map that holds it today, else
        C(systemReserved); a change of it alone restarts the kubelet like any other. A reservation that with the hard
        C(pid.available) threshold would take every PID of the node is refused before any write.
      - V(false) (the default) recommends and reports it beside the kubepods C(pids.max) it would give, and writes
        today's maps back as they are, so that an upgrade of the collection restarts no kubelet for a resource nobody
        asked to reserve.
    type: bool
    default: false
    version_added: 0.1.0
  min_reserved:
    description: The least memory kubeReserved + systemReserved may add up to, as a quantity.
    type: str
    default: 256Mi
  max_reserved_fraction:
    description: The most of the node's memory the reservations may take; a larger need is capped and reported.
    type: float
    default: 0.5
  policy:
    description:
      - V(measured) recommends from the measurement. A vendor name applies that vendor's static formula instead
        (see C(docs/formulas.md)); the formulas are always returned in RV(formulas) for comparison.
    type: str
    default: measured
    choices: [measured, gke, aks, aks-legacy, aks-hardened, eks, openshift]
  floor_policy:
    description: Recommend from the measurement, but never below what this vendor formula reserves.
    type: str
    default: none
    choices: [none, gke, aks, aks-legacy, aks-hardened, eks, openshift]
  max_pods:
    description: Maximum pods per node for the formulas that use it (AKS, EKS); by default the kubelet's C(maxPods), else 110.
    type: int
  reaction_time:
    description:
      - How long a reservation stays before the next run can change it (how often the playbook is applied), as a
        duration (C(30m), C(24h), C(7d)).
      - Until the history spans one reaction time (nine tenths of it, since runs are scheduled minutes apart from one day to
        the next), it has not seen the node's daily cycle, and the cold-start prior is the floor (O(cold_start_prior)).
    type: str
    default: 24h
  jump_headroom_factor:
    description:
      - Deprecated and ignored since the climb rule it scaled is gone; the headroom is O(memory_headroom_percent) of
        the history window's peak of non-pod memory.
        Setting it warns; it is removed in 1.0.0.
    type: float
  cold_start_prior:
    description:
      - Until the history spans one reaction time, the reservation is at least what this vendor formula reserves (see
        C(docs/formulas.md)), and more where P plus headroom is more, unless a node of the same class with such a
        history was measured in the same run (O(class_peers)), whose reservation is then the floor instead.
      - Where the node's class has a class model with enough data (at least 3 node-days of readings with C(pods), see
        C(docs/arithmetic.md) section The class model), the model replaces this prior for memory, as the class's
        envelope at the node's maxPods. The prior still floors CPU.
      - V(none) applies the rule to the short history alone.
    type: str
    default: gke
    choices: [none, gke, aks, aks-legacy, aks-hardened, eks, openshift]
  cpu_guarantee:
    description:
      - V(reserve) raises the reserved CPU until the CPU C(system.slice) is guaranteed under contention (its own
        C(cpu.shares) or C(cpu.weight) against the kubepods weight the kubelet writes) covers the measured non-pod
        CPU plus headroom, capped by O(max_reserved_fraction). V(report) only reports that guarantee.
    type: str
    default: reserve
    choices: [reserve, report]
  openshift_sizing_version:
    description:
      - The version of OpenShift's automatic node sizing the V(openshift) formula follows, as a node's
        C(/etc/node-sizing-version.json) names it. V(2) (the default for new nodes) reserves 0.06 + 0.012 x (CPUs - 1)
        cores, V(1) the older CPU tiers; both at least 0.5 core. See C(docs/formulas.md).
    type: int
    default: 2
    choices: [1, 2]
    version_added: 0.1.0
'''
