# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private doc fragment of nodealloc.kubelet: where the kubelet and its cgroups are found.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r'''
options:
  kubelet_config_path:
    description:
      - The KubeletConfiguration file to read when no running kubelet names one with C(--config).
      - A running kubelet's own C(--config) always wins, so the file read is the file in use.
    type: path
    default: /var/lib/kubelet/config.yaml
  kubelet_config_dir:
    description:
      - The kubelet's drop-in directory (C(--config-dir)) when no running kubelet names one.
      - Every C(*.conf) file in it is merged over the main file in lexical order, as the kubelet does.
    type: path
  kubelet_process_names:
    description:
      - Program names that identify the kubelet in C(/proc/*/cmdline).
      - A program run through an interpreter (C(python3 /usr/bin/kubelet)) is matched by its script name.
    type: list
    elements: str
    default: [kubelet]
  runtime_process_names:
    description:
      - Program names of the container runtime, whose memory and CPU count towards C(kubeReserved).
    type: list
    elements: str
    default: [containerd, crio, dockerd, cri-dockerd]
  kubepods_cgroup:
    description:
      - The node-allocatable cgroup, relative to the cgroup root (V(/kubepods.slice) or V(/kubepods)).
      - By default the kubelet's C(cgroupDriver) picks V(kubepods.slice) (systemd) or V(kubepods) (cgroupfs),
        whichever exists under the memory controller.
    type: str
  cgroup_root:
    description:
      - Read cgroups from this directory instead of the mounts in C(/proc/self/mountinfo).
      - A cgroup v2 root (holding C(cgroup.controllers)) or a directory of v1 controller directories
        (C(memory), C(cpuacct)). Meant for nodes with unusual mounts and for tests.
    type: path
'''
