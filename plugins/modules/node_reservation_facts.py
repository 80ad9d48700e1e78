#!/usr/bin/python
# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: node_reservation_facts
short_description: Measure what a Kubernetes node spends outside its pods and recommend kubelet reservations
version_added: 0.1.0
description:
  - Reads C(/proc/meminfo), C(/proc/stat) and the kubepods, C(system.slice), kubelet and container runtime
    cgroups (cgroup v1, hybrid or v2, systemd or cgroupfs driver), samples CPU for O(sample_seconds),
    reads the kubelet's current reservations from its configuration and command line, and recommends
    C(kubeReserved) and C(systemReserved).
  - Non-pod memory is C(MemTotal - MemAvailable - working_set(kubepods)), the working set computed as the
    kubelet (cAdvisor) computes it. Every input and every step of the arithmetic is returned in
    RV(recommendation.explanation).
  - Changes nothing on the node unless asked to. With O(record=true) it appends this reading to the history file,
    and with O(textfile_path) it writes the metrics file; either write is reported as C(changed). Check mode
    writes nothing.
  - The history is read back with every sample checked (finite, not negative, not in the future, no more memory
    than C(MemTotal), no more CPU than the node has); a sample that fails is named in the C(problems) of RV(history) and never
    used.
author:
  - nodealloc.kubelet developers (@nodealloc)
extends_documentation_fragment:
  - nodealloc.kubelet._attributes
  - nodealloc.kubelet._kubelet
  - nodealloc.kubelet._policy
attributes:
  check_mode:
    support: full
    details:
      - Check mode measures and recommends but writes neither the history nor the metrics file.
  diff_mode:
    support: none
    details:
      - The only writes are an appended history line and a metrics file; neither has a diff worth showing.
  idempotent:
    support: partial
    details:
      - Without O(record) and O(textfile_path) nothing is written and the result is C(changed=false).
      - With O(record=true) every run appends one reading, and with O(textfile_path) every run rewrites the metrics
        (they carry the time of the reading), so each such run reports C(changed=true).
options:
  sample_seconds:
    description:
      - How long to sample CPU use. Longer samples smooth out bursts.
    type: float
    default: 5
  record:
    description:
      - Append this reading to the history file (O(history_path)), so later runs recommend from it. The append is
        reported as C(changed).
      - Unset, a reading is appended only with O(install_sampler=false) (the reservations role's case without its
        sampler); with the sampler installed (the default), the sampler records a reading every minute, and an ad-hoc
        run does not change the node.
    type: bool
  class_peers:
    description:
      - What other nodes measured in the same run told their class, each one's RV(class_record) as returned by this
        module. Records of another class (O(node_class), else memory size rounded to whole GiB and CPU count) are
        ignored.
      - With peers of this node's class, its P (the history window's peak) is raised to the largest of the class, and a
        node whose history does not yet span one reaction time takes as its cold-start prior the largest reservation
        recommended for a peer with such a history (instead of the O(cold_start_prior) formula).
      - The reservations role passes them where they change the decision (C(reservations_pool_class)).
    type: list
    elements: dict
    version_added: 0.1.0
  node_class:
    description:
      - The node's class, as the inventory names it in C(nodealloc_node_class) (a Karpenter NodePool, a
        MachineDeployment, a node group). Pooling over O(class_peers), the report's fleet view and the node templates
        group nodes by it, so a GPU pool and a general pool of one size stay apart.
      - Unset or empty, the node's size class (memory in whole GiB and CPU count) is its class. A named class never
        pools with a size class, even of the same size.
      - The reservations role passes the host's C(nodealloc_node_class).
    type: str
    version_added: 0.1.0
  pod_requests:
    description:
      - The requests of the pods bound to this node, each a dict with C(pod) (C(namespace/name)), C(millicores) and
        C(memory_bytes), as the P(nodealloc.kubelet.pod_requests#filter) filter reduces the pods
        M(kubernetes.core.k8s_info) read from the API server (field selector C(spec.nodeName)). Their sum is compared
        with the allocatable the decision would give (RV(requests_fit)).
      - Unset, the check is skipped and RV(requests_fit) says why. The reservations role passes it where it can reach
        the API server (C(reservations_api_check)).
    type: list
    elements: dict
    version_added: 0.1.0
  textfile_path:
    description:
      - Also write the figures as Prometheus metrics (C(nodealloc_*)) to this file, for node_exporter's textfile
        collector (for example C(/var/lib/node_exporter/textfile_collector/nodealloc-facts.prom)). Written atomically,
        so the collector never reads half a file; not written in check mode.
      - The families are the sampler's, with the same names and meanings (one schema, C(docs/monitoring.md)), plus the
        configured and recommended C(kubeReserved)/C(systemReserved) (C(nodealloc_kubelet_reserved_memory_bytes),
        C(nodealloc_kubelet_reserved_cpu_cores)).
      - Never the sampler's file (C(reservations_sampler_textfile_path)); each writer needs a file of its own, and
        node_exporter fails a scrape that finds one series in two files. For nodes without the sampler.
    type: path
    version_added: 0.1.0
  prometheus_history:
    description:
      - This node's history of non-pod memory as the controller read it from Prometheus, the RV(nodealloc.kubelet.prometheus_history#module:history)
        that M(nodealloc.kubelet.prometheus_history) returns (the reservations role reads it where
        C(reservations_prometheus_url) is set).
      - Used instead of the node's own history file when it spans longer, and has no C(reason) and no value above this
        node's MemTotal; otherwise the node's own history is used, and the reason is in C(history.problems). CPU rests
        on the node's own readings either way (Prometheus gives memory).
    type: dict
    version_added: 0.1.0
  class_history:
    description:
      - The history of this node's class as the controller read it from Prometheus - every node of the class
        Prometheus saw in the history window, gone ones included, the largest non-pod memory of them at each step -
        one entry of RV(nodealloc.kubelet.prometheus_history#module:classes) (the reservations role reads it where
        C(reservations_prometheus_url) is set).
      - Used only for the class's node templates (RV(class_template)), with this node's measurement and CPU; the
        node's own recommendation and decision do not change.
    type: dict
    version_added: 0.1.0
  basis:
    description:
      - What an earlier call on this node returned as RV(basis). Nothing is measured, read or recorded; the
        recommendation, the decision and the plan are made again from that measurement and history, with O(class_peers).
      - The reservations role's class decision passes it, so that pooling over the class never samples the node twice.
    type: dict
    version_added: 0.1.0
  kubelet_unit:
    description:
      - The kubelet's systemd unit for RV(plan). Empty means the unit the running kubelet belongs to, else C(kubelet.service).
      - Where systemd runs the node, a process counts as the kubelet only in this unit's cgroup (or a container
        runtime's unit); empty allows C(kubelet.service), C(k3s.service), C(k3s-agent.service), C(rke2-server.service)
        and C(rke2-agent.service).
    type: str
    version_added: 0.1.0
  use_drop_in:
    description:
      - Where RV(plan) writes - V(auto) our drop-in wherever the kubelet reads a C(--config-dir), else the main file;
        V(true) always a drop-in (in the kubelet's C(--config-dir) or O(drop_in_dir)); V(false) the main file.
    type: raw
    choices: [auto, true, false, "true", "false"]
    default: auto
    version_added: 0.1.0
  drop_in_dir:
    description: The drop-in directory RV(plan) writes to with O(use_drop_in=true) when the kubelet names none.
    type: path
    version_added: 0.1.0
  enable_config_dir:
    description:
      - RV(plan) gives a kubeadm node's kubelet C(--config-dir=) O(config_dir_path) when it has none (the reservations
        role's C(reservations_enable_config_dir)); a kubespray node or one without kubeadm's files is refused.
    type: bool
    default: false
    version_added: 0.1.0
  config_dir_path:
    description: The drop-in directory O(enable_config_dir) gives the kubelet.
    type: path
    default: /etc/kubernetes/kubelet.conf.d
    version_added: 0.1.0
  install_sampler:
    description: The node runs the role's sampler, so RV(plan) carries the status files its metrics read.
    type: bool
    default: true
    version_added: 0.1.0
  health_timeout_seconds:
    description:
      - Seconds a restarted kubelet has to become healthy; with O(health_soak_seconds) and O(node_lock_timeout_seconds),
        what RV(plan) sizes the on-node step's time budget from (C(time_budget_seconds)). The reservations role passes
        its C(reservations_health_timeout_seconds), which it also gives the step.
    type: int
    default: 120
    version_added: 0.1.0
  health_soak_seconds:
    description: Seconds a healthy kubelet must stay up after a restart, for RV(plan)'s C(time_budget_seconds).
    type: int
    default: 30
    version_added: 0.1.0
  node_lock_timeout_seconds:
    description: Seconds the on-node step waits for another step's node lock, for RV(plan)'s C(time_budget_seconds).
    type: int
    default: 300
    version_added: 0.1.0
notes:
  - Reading a YAML kubelet configuration needs PyYAML on the node; a JSON configuration needs only Python 3.
  - C(/proc/meminfo) describes the whole machine; inside a container it is the host's.
  - A torn last line in the history (a writer killed mid-append) is cut off before the next append.
seealso:
  - name: Reserve Compute Resources for System Daemons
    description: The Kubernetes documentation of kubeReserved, systemReserved and eviction thresholds.
    link: https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/
'''

EXAMPLES = r'''
- name: Measure the node and recommend reservations
  nodealloc.kubelet.node_reservation_facts:
  register: reservation

- name: Show the recommendation with its arithmetic
  ansible.builtin.debug:
    var: reservation.recommendation

- name: A node with a kubelet that runs the cgroupfs driver under a custom root, sampled longer
  nodealloc.kubelet.node_reservation_facts:
    kubepods_cgroup: /kubepods
    sample_seconds: 30
    memory_headroom_percent: 20
'''

RETURN = r'''
capacity:
  description: Node capacity as the kubelet reports it (MemTotal, CPU count).
  returned: always
  type: dict
  sample: {memory: 24552016Ki, cpu: '2'}
memory:
  description: Memory figures in bytes.
  returned: always
  type: dict
  contains:
    mem_total_bytes:
      description: C(MemTotal) from C(/proc/meminfo).
      type: int
    mem_available_bytes:
      description: C(MemAvailable) from C(/proc/meminfo).
      type: int
    kubepods_working_set_bytes:
      description: Working set of the kubepods cgroup (usage minus inactive file pages, at least 0).
      type: int
    non_pod_bytes:
      description:
        - Non-pod memory, C(mem_total_bytes - mem_available_bytes - kubepods_working_set_bytes) plus the part of the
          pods' active page cache (and, on cgroup v2, reclaimable slab) that C(MemAvailable) already counts as
          available, so it is not subtracted twice (may be negative). See RV(memory.non_pod_accounting).
        - Plus RV(memory.non_pod_swap_bytes), the non-pod memory that is swapped out, up to C(MemTotal).
        - Less the anonymous memory of the measuring tool's own processes, RV(memory.measurement_tool).
      type: int
    measurement_tool:
      description:
        - The measuring tool's own processes found at the reading and left out of RV(memory.non_pod_bytes) - Ansible's
          module interpreters (a Python interpreter under Ansible's C(<shell> -c '... && sleep 0') or become wrapper,
          or a process running a file of Ansible's remote C(ansible-tmp-*) directory, outside kubepods, run as the
          module's own user) and the module's (or the sampler's) own process. C(bytes) (their C(Pss_Anon), else
          C(RssAnon), at most 256 MiB of one process and 512 MiB in all), C(left_out_bytes) (what was subtracted, never
          more than the figure), C(processes) (pid, command, why, anonymous_bytes, left_out_bytes, source) and
          C(note) (why nothing could be looked for, else null). What those modules start stays counted, and so does
          every process of another user.
      type: dict
    non_pod_swap_bytes:
      description:
        - Non-pod memory swapped out, counted in RV(memory.non_pod_bytes) - C(SwapTotal - SwapFree - SwapCached) less
          the kubepods cgroup's swap (cgroup v2 C(memory.swap.current) less its C(swapcached); v1
          C(memory.memsw.usage_in_bytes - memory.usage_in_bytes) where the kernel accounts swap). 0 without swap.
      type: int
    swap:
      description:
        - The steps to RV(memory.non_pod_swap_bytes) (C(explanation) lines) and the swap of C(system.slice) and of the
          kubelet's and runtime's own groups (C(groups)).
      type: dict
    non_pod_poc_bytes:
      description: The uncorrected figure, C(mem_total_bytes - mem_available_bytes - kubepods_working_set_bytes), exactly,
        for comparison (before the page-cache correction).
      type: int
    non_pod_accounting:
      description:
        - The correction between RV(memory.non_pod_poc_bytes) and RV(memory.non_pod_bytes) - C(pods_active_file_bytes),
          C(pods_slab_reclaimable_bytes), C(page_cache_counted_available_bytes) (how much page cache the kernel's
          C(si_mem_available) counts as available), C(wmark_low_bytes) (from C(/proc/zoneinfo), null if unreadable)
          and C(pods_counted_available_bytes).
      type: dict
    kube_components_working_set_bytes:
      description: Working set of the kubelet and container runtime cgroups, or their RSS where they share a cgroup.
      type: int
    kubepods:
      description: The kubepods cgroup's usage, inactive_file, working set and the files they came from.
      type: dict
    system_slice:
      description: The same for C(system.slice), or null where it does not exist.
      type: dict
cpu:
  description: CPU figures in millicores over the sample.
  returned: always
  type: dict
  contains:
    capacity_millicores:
      description: CPUs the node offers, times 1000.
      type: int
    node_busy_millicores:
      description: Node busy time from C(/proc/stat) (all but idle, iowait and steal).
      type: int
    kubepods_millicores:
      description: kubepods CPU time (v1 C(cpuacct.usage), v2 C(cpu.stat usage_usec)).
      type: int
    non_pod_millicores:
      description:
        - C(node_busy_millicores - kubepods_millicores - session_millicores), at least 0.
        - The CPU of SSH sessions, where this role's own tasks run, is left out (docs/arithmetic.md says why).
      type: int
    session_millicores:
      description:
        - CPU of the SSH sessions' groups over the sample (see RV(cpu.session_cgroups)), left out of
          RV(cpu.non_pod_millicores); their memory stays counted.
        - 0 when no such group has CPU accounting, or the groups changed during the sample.
      type: int
    session_cgroups:
      description:
        - The session groups found, relative to the CPU hierarchy's root, among C(user.slice) (SSH logins
          with pam_systemd), C(system.slice/ssh.service) and C(system.slice/sshd.service) (sessions left in sshd's unit).
      type: list
      elements: str
    sample_seconds:
      description: The measured length of the sample.
      type: float
cgroup:
  description: The cgroup layout found.
  returned: always
  type: dict
  contains:
    version:
      description: V(v1) (legacy or hybrid) or V(v2).
      type: str
    mode:
      description: V(legacy), V(hybrid) or V(unified).
      type: str
    driver:
      description: V(systemd), V(cgroupfs) or null when no kubepods cgroup exists.
      type: str
    kubepods:
      description: The kubepods cgroup path, or null.
      type: str
    kubepods_limit_file:
      description:
        - The kubepods cgroup's memory limit file (C(memory.limit_in_bytes) on v1, C(memory.max) on v2), or null
          where no kubepods cgroup was found.
      type: str
      sample: /sys/fs/cgroup/kubepods.slice/memory.max
      version_added: 0.1.0
    end_of_life:
      description:
        - On a cgroup v1 node (legacy or hybrid), why cgroup v1 is at the end of its life in Kubernetes (maintenance
          mode from 1.31, refused by default from 1.35); null on cgroup v2. Also one of the module's warnings where a
          kubelet process or a kubelet config is found (none on a machine without a kubelet).
      type: str
      version_added: 0.1.0
kubelet:
  description:
    - The running kubelet (pid, argv) and the config file and drop-in directory read.
    - Only a process running as root a program only root can change, in the kubelet's systemd unit where systemd runs
      the node, is the kubelet (docs/security.md); others are named in RV(not_found).
  returned: always
  type: dict
  contains:
    ownership:
      description:
        - What manages this kubelet and what would override a file written for it, read from the kubelet's
          systemd unit, its drop-ins and environment files (as C(systemctl show -p FragmentPath,DropInPaths,EnvironmentFiles)
          would list them) and the running command line.
        - C(managers) (V(kubeadm), V(kubespray)) with C(evidence); C(config_path), C(config_dir) and C(config_dir_source);
          C(reservation_flags), each C(flag), C(value) and C(source) (the unit file, drop-in or environment file and variable);
          C(refusal), the message that stops a write when such flags are set, else null; C(kubeadm_extra_args_file);
          C(unit) (C(fragment_path), C(drop_in_paths), C(environment_files), C(exec_start_source)).
      type: dict
      version_added: 0.1.0
    version:
      description:
        - The kubelet binary's version, as C(kubelet --version) answers (the binary on disk, which the next start
          runs), and what that version refuses with the effective configuration on this node.
        - C(command), C(text) (what it printed), C(version) (V(1.35.0)) and C(git_version) (V(v1.35.0)), both null
          where no version was learnt (then C(not_found) says why).
        - C(fail_cgroup_v1), the C(failCgroupV1) the kubelet runs with (the config's value, else V(true) from 1.35,
          V(false) before), null where that cannot be told.
        - C(features), what this version knows (C(fail_cgroup_v1_field) 1.31, C(fail_cgroup_v1_default_true) 1.35,
          C(compressible_enforcement) 1.32, C(memory_reservation_policy) 1.36, C(config_dir) 1.28,
          C(config_dir_without_environment) 1.30, C(memory_qos_on_by_default) 1.37,
          C(memory_throttling_factor_unset_by_default) 1.37), each null where the version is unknown.
        - C(refusals), what would stop this kubelet at its next start (a C(failCgroupV1) that is true on a cgroup v1
          node, an enforcement key it does not know, a C(--config-dir) it cannot read); the role refuses to write
          while any is listed. C(warnings), what it would ignore, and cgroup v1's end of life;
          empty where neither a kubelet process nor a kubelet config is found.
      type: dict
      sample:
        command: [/usr/bin/kubelet, --version]
        text: Kubernetes v1.35.0
        version: 1.35.0
        git_version: v1.35.0
        fail_cgroup_v1: true
        refusals: ['kubelet v1.35.0 on a cgroup v1 node would not start: failCgroupV1 defaults to true from 1.35 ...']
      version_added: 0.1.0
current:
  description:
    - Reservations and eviction settings in force, from the config file, its drop-ins and the command line,
      or null when no kubelet configuration was found.
  returned: always
  type: dict
recommendation:
  description: The recommendation, its inputs and its arithmetic.
  returned: always
  type: dict
  contains:
    kube_reserved:
      description: Recommended C(kubeReserved) as Kubernetes quantities.
      type: dict
      sample: {cpu: 80m, memory: 933Mi}
    system_reserved:
      description: Recommended C(systemReserved) as Kubernetes quantities.
      type: dict
    allocatable:
      description: Node allocatable with the recommendation applied (capacity minus reservations minus hard eviction).
      type: dict
    cpu_guarantee:
      description:
        - The CPU C(system.slice) is guaranteed under contention, from its own weight and the kubepods weight the kubelet
          writes - C(now_millicores) with today's reservations, C(recommended_millicores) with the recommendation,
          C(needed_millicores), C(min_reserved_millicores), C(system_slice_weight); null with a vendor O(policy).
      type: dict
    cold_start:
      description:
        - While the history spans less than the reaction time and a cold-start prior applies, where the figure came
          from - C(floor) (the O(cold_start_prior) formula's name, or V(class) for a warm node of its class),
          C(floor_memory_bytes) and C(floor_millicores) beside C(measured_memory_bytes) and C(measured_millicores)
          (the history's P plus headroom, before the floor), C(raised) (the floor is the figure), C(history_source),
          C(history_span_seconds), C(warm_span_seconds) and C(takes_over_at) (Unix time the history will span enough,
          if its source keeps recording; null with no history, which nothing records). Null otherwise.
      type: dict
      version_added: 0.1.0
    ephemeral_storage:
      description:
        - C(ephemeral-storage) to reserve, from C(non_pod_bytes) of RV(ephemeral_storage) - C(recommended_bytes) =
          max(C(floor_bytes) 1 GiB, C(non_pod_bytes) x C(headroom_factor) 1.5) rounded up to whole MiB, as C(quantity);
          C(kube_reserved) and C(system_reserved) the quantity each map would hold (null - not set); C(complete) false
          when a walk stopped at a limit (the figure is then a lower bound).
        - C(allocatable_now) and C(allocatable_recommended) - the kubelet's arithmetic with today's maps and with the
          recommendation (C(capacity_bytes), C(kube_reserved_bytes), C(system_reserved_bytes),
          C(eviction_hard_nodefs_bytes), C(reservation_bytes), C(allocatable_bytes), C(absolute_bytes),
          C(reservation_exceeds_capacity), C(imagefs) with C(eviction_hard_imagefs_bytes) when the image filesystem is
          separate - it evicts, but the kubelet takes nothing out of allocatable for it).
        - C(written) - whether the maps to write carry it (O(reserve_ephemeral_storage)); C(recommended_bytes) null and
          C(reason) set when the kubelet's filesystem was not measured.
      type: dict
      version_added: 0.1.0
    control_plane_floor:
      description:
        - On a control-plane node (RV(control_plane)), the floor under the measured reservation - C(memory_bytes) 1 GiB
          and C(millicores) 500 (OpenShift's fixed control-plane reservation), C(raised) (what it raised - V(memory),
          V(cpu)), C(why) (the static pods found). Null on another node and with a vendor O(policy). O(max_reserved_fraction)
          still caps it; the explanation says it applied.
      type: dict
      version_added: 0.1.0
    pids:
      description:
        - C(pid) to reserve, from RV(pids) - C(recommended) = max(C(floor) 1000, C(peak_non_pod_tasks) x
          C(headroom_factor) 1.5) rounded up to a hundred, as C(quantity); C(peak_non_pod_tasks) the largest of this
          reading's C(non_pod_tasks) and the C(non_pod_pids) of C(history_lines) history lines; C(kube_reserved) and
          C(system_reserved) the value each map would hold (null - not set).
        - C(allocatable_now) and C(allocatable_recommended) - the kubelet's PID arithmetic with today's maps and with
          the recommendation (C(capacity), C(kube_reserved), C(system_reserved), C(eviction_hard_pid_available),
          C(absolute), C(kubepods_pids_max), C(enforces_pods), C(reservation_exceeds_capacity)); pid is no part of
          the Node's allocatable.
        - C(pod_pids_limit) and C(max_pods) as the kubelet runs with them; C(overcommit) whether podPidsLimit x maxPods
          + the reservation is above the capacity (null - the pods have no limit each), with C(warnings) saying so;
          C(refusal) set when the written reservation with the hard C(pid.available) threshold would take every PID.
        - C(written) - whether the maps to write carry it (O(reserve_pids)); C(recommended) null and C(reason) set when
          the node's tasks were not measured.
      type: dict
      version_added: 0.1.0
    explanation:
      description: Every input and every step of the arithmetic, one line each.
      type: list
      elements: str
decision:
  description: Whether the recommendation is worth applying, from the current reservations and the thresholds.
  returned: always
  type: dict
  contains:
    action:
      description: V(increase) when memory or CPU increases, else V(decrease) when either decreases, else V(keep).
      type: str
    memory:
      description: The memory decision on its own (C(action), C(now_bytes), C(recommended_bytes), C(threshold_bytes)).
      type: dict
    cpu:
      description: The CPU decision on its own (C(action), C(now_millicores), C(recommended_millicores), C(threshold_millicores)).
      type: dict
    kube_reserved:
      description:
        - C(kubeReserved) to write. It takes the recommended value only for a resource whose own action is not V(keep);
          a resource that keeps is written as it is now, so one resource's increase never carries an early decrease
          of the other. Other resources in today's map (C(ephemeral-storage), C(pid)) are kept, unless
          O(reserve_ephemeral_storage) or O(reserve_pids) carries them (RV(decision.ephemeral_storage), RV(decision.pids)).
      type: dict
    system_reserved:
      description: C(systemReserved) to write, like RV(decision.kube_reserved).
      type: dict
    reasons:
      description: The comparison for memory and CPU, one line each, and which resource is kept.
      type: list
      elements: str
    ephemeral_storage:
      description:
        - The C(ephemeral-storage) decision on its own (C(action), C(now_bytes), C(recommended_bytes),
          C(threshold_bytes)) when O(reserve_ephemeral_storage) carries it into the maps; null otherwise (today's value
          is then written back as it is).
      type: dict
      version_added: 0.1.0
    pids:
      description:
        - The C(pid) decision on its own (C(action), C(now), C(recommended), C(threshold), in tasks) when O(reserve_pids)
          carries it into the maps; null otherwise (today's value is then written back as it is).
      type: dict
      version_added: 0.1.0
pressure:
  description:
    - Pressure stall information as evidence of starvation - C(node) from C(/proc/pressure/cpu) and
      C(/proc/pressure/memory), C(cgroups) the C(cpu.pressure) and C(memory.pressure) of C(system.slice) and of the
      kubelet's and the runtime's cgroups (cgroup v2 only), each C(some)/C(full) with C(avg10), C(avg60), C(avg300)
      (percent) and C(total_usec); C(note) says when per-cgroup files do not exist (cgroup v1).
  returned: always
  type: dict
memory_protection:
  description:
    - C(memory.min) and C(memory.low) (bytes, or V(max)) of kubepods and of the groups C(kubeReservedCgroup) and
      C(systemReservedCgroup) name (cgroup v2 only; C(note) says so on v1), with each group's working set and CPU
      weight, C(memory_qos_enabled) (the C(MemoryQoS) feature gate as the kubelet runs it, null if unknown) and
      C(memory_reservation_policy).
    - C(cost.protected_beyond_use_bytes) is what the reserved groups' C(memory.min) protects beyond their working
      sets - memory pods cannot reclaim once the daemons grow into it; C(cost.after_apply) the same with the
      recommendation written (the kubelet sets C(memory.min) to the reservation of each enforced group when
      C(MemoryQoS) is on). C(explanation) holds the lines added to RV(recommendation.explanation).
  returned: always
  type: dict
  version_added: 0.1.0
enforcement_proposal:
  description:
    - C(enforceNodeAllocatable) with C(system-reserved-compressible) (and C(kube-reserved-compressible) where a
      C(kubeReservedCgroup) is named) when PSI shows the daemons starved for CPU (C(cpu.pressure) C(some) C(avg300)
      at or above C(threshold_some_avg300_percent)) and enforcing would raise their CPU weight.
    - C(proposed), C(changes) (the config fields to set, the cgroup the key needs included), C(reasons), C(starved),
      C(targets) (per key - weight now and enforced, guaranteed millicores), and C(validation) - the change checked
      as the kubelet would check it, C({refusal, rules_checked, warnings}), C(refusal) null when it would start.
  returned: always
  type: dict
  version_added: 0.1.0
history:
  description:
    - The history used (path, samples, span in seconds, whether this reading was recorded, problems found,
      C(rejected) the number of samples skipped as invalid).
    - C(source) is where its samples came from - V(node) (the node's history file), V(prometheus), or V(none) (no
      sample besides this run's reading, a cold start); C(since) the oldest sample's Unix time (null with V(none)).
    - C(not_recorded) says why a reading O(record=true) asked for was not appended (an unwritable or full history);
      it is also an Ansible warning. Null otherwise.
    - C(source) is where the samples came from - V(node) (the history file), V(prometheus) (O(prometheus_history),
      which spans longer) or V(none) (only this reading). With O(prometheus_history), C(prometheus) says what it gave
      (C(samples), C(span_seconds), C(reason) why it was not usable, C(problems), C(used)).
  returned: always
  type: dict
overcommit:
  description:
    - Memory overcommit audit read from the pod cgroups (no API server), or null without a kubepods cgroup.
    - C(memory_limits_sum_bytes) sums the pods' memory limits; C(limits_to_kubepods_percent) is that sum as a
      percentage of the kubepods limit ("if every pod used its limit"); C(pods_without_memory_limit) are bounded only
      by kubepods; C(cpu_requests_sum_millicores) is read back from C(cpu.shares) or C(cpu.weight).
  returned: always
  type: dict
numa:
  description:
    - The NUMA nodes (C(node), C(mem_total_bytes) from C(/sys/devices/system/node/node*/meminfo)) and the online CPU ids
      (C(/sys/devices/system/cpu/online)), as the kubelet's machine info finds them. The plan checks a static memory
      manager's C(reservedMemory) against these nodes and splits a proposed one in proportion to their memory.
      C(nodes) is empty on a kernel without NUMA; null when a file was not in the kernel's form (said in C(not_found)).
  returned: always
  type: dict
  sample: {nodes: [{node: 0, mem_total_bytes: 8326443008}], online_cpus: [0, 1]}
ephemeral_storage:
  description:
    - The filesystem holding the kubelet's root dir (C(--root-dir), C(/var/lib/kubelet) by default) - C(filesystem)
      with C(capacity_bytes) (statfs C(f_frsize x f_blocks), the kubelet's C(ephemeral-storage) capacity),
      C(available_bytes) (what C(nodefs.available) is compared with), C(free_bytes), C(used_bytes).
    - Its use outside the pods, in blocks as C(du) counts them - C(kubelet_root_dir) (the root dir without C(pods/)),
      C(logs) (C(/var/log) without C(pods/) when on the same filesystem, C(journal_bytes) journald's part),
      C(non_pod_bytes) their sum; each walk's C(entries), C(complete) and C(stopped) (the limit it hit - 200,000 entries,
      64 levels, 10 s a walk).
    - C(image_filesystem) - containerd's root (its config's C(root)), C(separate) with its statfs figures when it is a
      filesystem of its own (the kubelet's imagefs), null when not found. C(problems) - what was not measured and why
      (a path through a symbolic link is not followed).
  returned: always
  type: dict
  version_added: 0.1.0
control_plane:
  description:
    - Whether this is a control-plane node - C(detected) true when a static pod of the kubelet runs C(kube-apiserver) or
      C(etcd) (a container's command, else its image's name), with C(why) in a sentence and C(components) the ones found.
    - C(static_pod_path) - the directory read (the kubelet's C(--pod-manifest-path), else its config's C(staticPodPath),
      else kubeadm's C(/etc/kubernetes/manifests) where no kubelet config was found; null where the kubelet runs no static
      pod), C(path_from) where that came from, C(manifests) (each file read and the components it runs), C(problems)
      (a file or the directory not read - not root's alone, a link, not a Pod - which then does not count).
    - The Node's C(node-role.kubernetes.io/control-plane) label is not read - the manifests are what runs.
      A control-plane node has a class of its own (RV(class_record)) and a floor (C(control_plane_floor) of RV(recommendation)).
  returned: always
  type: dict
  sample:
    detected: true
    why: the static pods in /etc/kubernetes/manifests (from the kubelet config's staticPodPath) run etcd (etcd.yaml) and kube-apiserver (kube-apiserver.yaml)
    components: [etcd, kube-apiserver]
    static_pod_path: /etc/kubernetes/manifests
    path_from: the kubelet config's staticPodPath
    manifests: {etcd.yaml: [etcd], kube-apiserver.yaml: [kube-apiserver]}
    problems: []
  version_added: 0.1.0
pids:
  description:
    - The node's tasks (processes and threads, each spends a PID) as the kubelet counts them
      (C(pkg/kubelet/stats/pidlimit/pidlimit_linux.go)) - C(pid_max) and C(threads_max) (kernel.pid_max,
      kernel.threads-max), C(capacity) the smaller (the kubelet's PID capacity), C(tasks_total) (the total of
      C(/proc/loadavg)'s running/total), C(available) (capacity - tasks_total, what C(pid.available) is compared with).
    - C(kubepods_tasks) the tasks in the kubepods cgroup (its C(pids.current), else the threads of its processes;
      C(kubepods_source) says which), C(measuring_tool_tasks) this module's own threads, C(non_pod_tasks) = tasks_total -
      kubepods_tasks - measuring_tool_tasks (null when not measured; recorded in the history as C(non_pod_pids)).
      C(problems) - what was not read and why.
  returned: always
  type: dict
  version_added: 0.1.0
pods:
  description:
    - The pods on the node at this reading - the pod cgroups under kubepods (Guaranteed pods directly, Burstable and
      BestEffort under their QoS groups; cgroup v1 or v2, systemd or cgroupfs driver), a directory counting only when
      its name is the kubelet's for a pod (C(pod<uid>), C(kubepods-burstable-pod<uid>.slice)). The same count as
      C(overcommit.pods), and the C(pods) of the history line this reading makes. Null without a kubepods cgroup.
  returned: always
  type: int
  sample: 23
  version_added: 0.1.0
formulas:
  description: What each vendor formula (gke, aks, aks-legacy, aks-hardened, eks, openshift) would reserve on this node, in bytes and millicores.
  returned: always
  type: dict
class_record:
  description:
    - What this node tells the other nodes of its class, to pass to their O(class_peers) - its class
      (C(node_class), memory GiB and CPU count, C(class_name), the O(node_class) it was given, or null, and
      C(control_plane), true on a control-plane node - RV(control_plane) - whose class is then its own (it never pools
      with a worker of the same size or name, and its templates' class is named V(control-plane-<class>))), its own P
      (C(jumps), before any pooling - C(memory_bytes),
      C(millicores), C(reaction_seconds), C(span_seconds) and C(warm), true once the history spans one reaction
      time), C(cold_start), and once warm C(reserved_memory_bytes) and C(reserved_millicores).
    - And what the class model learns from it - C(pods_profile) (its non-pod memory and CPU per pod count, null
      without pods readings), C(max_pods) (the maxPods it is sized at) and C(max_pods_source) (V(option) for
      O(max_pods), V(kubelet) for its kubelet's config or C(--max-pods), V(default) where none was read and the
      kubelet's 110 is assumed; node templates set maxPods only from a given one).
  returned: always
  type: dict
  version_added: 0.1.0
class_template:
  description:
    - The recommendation for this node's class template from O(class_history) (null without it) - C(class),
      C(label), C(members) and C(nodes) (the nodes of the class Prometheus saw, and how many have a series),
      C(span_seconds), C(covered_seconds), C(window_seconds), C(used), C(reason) (why the class history is not used),
      C(problems), and C(recommendation) (C(kube_reserved), C(system_reserved), C(reserved_memory_bytes),
      C(reserved_millicores), C(cold_start), C(explanation)) or null.
  returned: always
  type: dict
  version_added: 0.1.0
class_peers_used:
  description: How many of O(class_peers) were of this node's class and were pooled with it (0 - decided alone).
  returned: always
  type: int
  version_added: 0.1.0
swap_control:
  description:
    - Whether the node's daemons may swap, and how to stop it. C(devices) (C(/proc/swaps)), C(swap_on),
      C(system_slice_swap_max) (cgroup v2 C(memory.swap.max) of C(system.slice); V(max) is unlimited),
      C(system_slice_may_swap), C(may_swap_by_cgroup) (C(system.slice) and the kubelet's and runtime's own groups),
      the kubelet's C(kubelet_fail_swap_on) and C(kubelet_swap_behavior) (C(memorySwap.swapBehavior)).
    - C(proposed_drop_in) - where C(system.slice) may swap on cgroup v2, the systemd drop-in (C(path), C(content))
      that sets C(MemorySwapMax=0) on it, as the Kubernetes swap documentation advises for system daemons; never
      written by the collection. Null otherwise; C(note) says why where nothing can be proposed (cgroup v1).
  returned: always
  type: dict
  version_added: 0.1.0
plan:
  description:
    - Everything the reservations role does on this node, decided in module_utils (C(_node_plan)) - C(refusals) (why nothing
      may be written; the role stops on any), C(action), C(add_config_dir), C(rolls) (the rollout touches the node),
      C(target) (C(path), C(drop_in_dir), C(unit), C(kubepods_limit_file), each V('') where none), C(apply) and
      C(restore) (the node-specific options of M(nodealloc.kubelet.kubelet_reservations_apply)), C(paths) (the files
      kept beside O(history_path) - C(state_dir), C(history), C(sampler_state), C(decision), C(applied)), C(status)
      (for each call of the step - C(apply), C(undo) after a failed API server check, C(keep), C(restore) for a
      rollback - its C(status) option, C(on_success) and C(on_failure) lists of C(path) and C(content) documents the
      sampler's metrics read, or of C(path) and C(state=absent) for a file it must forget), C(time_budget_seconds)
      (C(apply) and C(restore), the budget of the detached step) and C(report) (C(target) and C(config_diff), the diff the step
      would write, into our drop-in where it writes one).
    - C(resource_managers) - the static CPU and memory managers against the config the step would write -
      C(memory_manager) and C(cpu_manager) (whether each is static), C(memory_problems) and C(cpu_problems) (what would
      stop the kubelet; refused), C(reserved_memory) and C(split) (the C(reservedMemory) per NUMA node that sums, and
      how it is split), C(reserved_memory_written) (what C(apply.reserved_memory) writes with the reservation where
      the static memory manager would otherwise refuse it; null where the one in force is left as it is),
      C(memory_problems_before) (what the manager refuses in the config in force, where no C(reservedMemory) is
      written over it) and C(cpu) (C(whole_cpus), C(reserved_system_cpus), C(reason)). C(summary) - what the role
      prints - ends with a sentence on each.
  returned: always
  type: dict
  version_added: 0.1.0
basis:
  description:
    - The measurement and history this call decided from, before any class pooling; pass it back as O(basis) to
      decide again without measuring.
  returned: always
  type: dict
  version_added: 0.1.0
requests_fit:
  description:
    - Whether the pods bound to the node (O(pod_requests)) still fit the allocatable the decision gives. On restart the
      kubelet admits every pod again against C(status.allocatable); a pod whose requests no longer fit is rejected.
    - C(checked) (false without O(pod_requests), or without a kubelet config, C(reason_skipped) says why),
      C(requested_memory_bytes) and C(requested_millicores) (their sum), C(allocatable_memory_bytes) and
      C(allocatable_millicores) (after the change), C(pod_count), C(largest) (the three largest pods by the resource
      short by most, else by memory), and C(refusal) (null, or why the change must not be written).
  returned: always
  type: dict
  version_added: 0.1.0
not_found:
  description:
    - Plain statements of what was looked for and not found on this node.
    - "Among them each process named like the kubelet or a runtime that was ignored because it is not root's alone
      (C(ignored a process named kubelet: pid 50 (/home/u/kubelet ...), uid 1000); docs/security.md), and a
      kubelet binary not asked its version for that reason."
  returned: always
  type: list
  elements: str
'''

import time

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _file_io, _gather
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _metrics
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MissingLibraryError, NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NODE_RESERVATION_FACTS_OPTIONS, NodeallocModule
from ansible_collections.nodealloc.kubelet.plugins.module_utils._option_specs import check


def main():
    module = NodeallocModule(argument_spec=NODE_RESERVATION_FACTS_OPTIONS, supports_check_mode=True)
    problems = check(module.params)
    if problems:
        module.fail_json(msg='invalid options, nothing measured: %s' % '; '.join(problems), problems=problems)
    try:
        facts = _gather.gather(dict(module.params, _check_mode=module.check_mode))
    except MissingLibraryError as exc:
        module.fail_json(msg=missing_required_lib(exc.library, reason=exc.reason))
    except (NodeallocError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    again = bool(module.params['basis'])  # decided again from an earlier call's basis: it warned and recorded
    for warning in [] if again else facts['kubelet']['version']['warnings']:
        module.warn(warning)
    changed = facts['history']['recorded'] and not again
    if facts['history']['not_recorded'] and not again:
        module.warn('record=true, but %s' % facts['history']['not_recorded'])
    if module.params['textfile_path'] and not module.check_mode:
        try:
            _file_io.write_atomic(module.params['textfile_path'], _metrics.render(facts, time.time()), mode=0o644)
        except NodeallocError as exc:
            module.fail_json(msg=str(exc))
        changed = True
    module.exit_json(changed=changed, **facts)


if __name__ == '__main__':
    main()
