#!/usr/bin/env bash
# The whole test suite. Run through `make test`, which bootstraps .venv and stages the collection.
# Every step runs even when an earlier one failed, so one run shows every problem; the exit
# status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
collection=$root/.build/ansible_collections/nodealloc/kubelet
export PYTHONPATH="$root/.build${PYTHONPATH:+:$PYTHONPATH}"
failed=()

# Sets cpu_seconds to the CPU seconds (user + system) this shell's waited-for children have used, as `times` reports
# them: what a step costs the machine besides how long it took (the two CPUs are shared by every line below). Not
# through $(...): a subshell's children are not this shell's.
children_cpu() {
  local times_file
  times_file=$(mktemp)
  times > "$times_file"
  cpu_seconds=$(awk 'NR == 2 { total = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); total += p[1] * 60 + p[2] } printf "%d", total }' "$times_file")
  rm -f "$times_file"
}

step() {
  local name=$1; shift
  echo "=== $name"
  local started=$SECONDS cpu_seconds cpu_before
  children_cpu
  cpu_before=$cpu_seconds
  "$@"
  local rc=$?
  children_cpu
  echo "=== $name: $((SECONDS - started)) s, CPU $((cpu_seconds - cpu_before)) s"
  # pytest exits 5 when it collected no test: a selection that is empty on this machine is not a failure.
  if [[ $rc -eq 5 && $name == pytest* ]]; then rc=0; fi
  if [[ $rc -ne 0 ]]; then
    echo "=== $name FAILED (exit $rc)"
    failed+=("$name")
  fi
}

sanity() {
  # ansible-test lists files through git: give the staged copy a repository of its own.
  (cd "$collection" && git init -q && git add -A && git -c user.name=test -c user.email=test@localhost commit -qm staged \
     && mkdir -p ~/.ansible/test/cache && cp "$root/hack/ansible-test-get-pip.py" ~/.ansible/test/cache/get_pip_24_2.py \
     && ansible-test sanity --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --local \
          --skip-test shellcheck 2>&1 | grep -v -E "^WARNING: Location 'file:///|^(Collecting|Downloading|Installing|Successfully|Requirement|Using cached|Looking in|Processing) |━")
}

units() {
  # The unit tests, the way ansible-test runs them (its own pytest, collection import paths): their one run. Not
  # tests/unit/roles: they run ansible-playbook in subprocesses, where ansible-test's import paths change nothing
  # (the main line runs them).
  local targets
  targets="tests/unit/plugins/ $(cd "$collection" && find tests/unit -mindepth 1 -maxdepth 1 -name 'test_*.py' | sort)"
  # shellcheck disable=SC2086 # one target a word
  (cd "$collection" && ansible-test units --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --local $targets \
     2>&1 | grep -v -E "^WARNING: Location 'file:///|^(Collecting|Downloading|Installing|Successfully|Requirement|Using cached|Looking in|Processing) |━")
}

ansible_doc_renders() {
  local plugin
  for plugin in nodealloc.kubelet.node_reservation_facts nodealloc.kubelet.kubelet_config nodealloc.kubelet.kubelet_reservations_apply \
                nodealloc.kubelet.sampler_code nodealloc.kubelet.host_unreachable nodealloc.kubelet.report_files; do
    ansible-doc -t module "$plugin" >/dev/null || return 1
  done
  ansible-doc -t filter nodealloc.kubelet.reservation_report >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.reservation_report_merge >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.quantity_value >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.reservation_handover >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.class_peers >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.pod_requests >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.node_api_healthy >/dev/null || return 1
  ansible-doc -t role nodealloc.kubelet.reservations >/dev/null
}

# Steps that run beside the main line: each group's output is kept and printed, in one piece, once the main line
# is done; a failed step there fails the run as one here does.
alongside_logs=() alongside_failed=() alongside_pids=()
alongside() {
  local log failed_list
  log=$(mktemp) failed_list=$(mktemp)
  (
    failed=()
    "$@"
    printf '%s\n' "${failed[@]}" > "$failed_list"
  ) > "$log" 2>&1 &
  alongside_pids+=($!) alongside_logs+=("$log") alongside_failed+=("$failed_list")
}

# The benchmarks that read the machine and change nothing on it (see node_benchmarks).
reading_benchmarks() {
  python benchmarks/sampler_cost.py --json --lines 1000,20000 --runs 3 \
    && python benchmarks/quality.py --json --days 2 --live-seconds 10 | python -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("traces", "policies")}))' \
    && python benchmarks/report_render.py --json --nodes 100 --baseline 20 --runs 1
}

static_checks() {
  # Niced: nothing waits on these, while the node steps' health and soak timers do.
  renice -n 10 -p "$BASHPID" >/dev/null
  step "ansible-test sanity" sanity
  step "ansible-test units" units
  step "ansible-doc" ansible_doc_renders
  step "pytest: the fuzz suite (tests/fuzz, hypothesis; each example's limit is CPU time, so niced is fine)" \
    python -m pytest -p no:cacheprovider -q -rs --basetemp "$(mktemp -d)/pytest" tests/fuzz
  step "benchmarks that only read the machine (small sizes): sampler_cost, quality, report_render" reading_benchmarks
}

vm_tests() {
  # A temporary directory of its own: several pytest runs at once.
  local lane=$1 what=$2 base
  base=$(mktemp -d)
  step "pytest on VM guests: $what" \
    python -m pytest -p no:cacheprovider -q -rs --durations=10 --basetemp "$base/pytest" --nodes-lane "$lane" \
      tests/vm tests/scenarios
  rm -rf "$base"
}

localhost_tests() {
  local base
  base=$(mktemp -d)
  step "pytest: the role's playbook tests and the integration tests on this machine (real cgroup v1, Prometheus, chromium)" \
    python -m pytest -p no:cacheprovider -q -rs --durations=15 --basetemp "$base/pytest" --nodes-lane host \
      tests/unit/roles tests/integration
  rm -rf "$base"
  # After the integration tests, in this line: both make kubepods.slice at the host's cgroup root.
  step "benchmark on this machine's cgroups (small sizes): facts_cost" \
    python benchmarks/facts_cost.py --json --pods 10,110 --repeat 5
}

# ansible-test's checks work on the staged copy alone and boot nothing (about 80 s). The tests on QEMU guests keep
# the CPU busy with software emulation while the nspawn scenarios mostly wait on their kubelets' health and soak
# timers: the guests' two pytest runs (the tests that boot guests of their own, mostly waiting on what a guest
# does over minutes; the tests on the session's guests) and the tests on this machine itself run beside the nspawn
# line (docs/testing.md, "How long it takes").
# The nspawn line's last steps that can run on a fleet of their own (slot 1, tests/nodes/testnodes.py), once the
# guests of their own are off: the lanes' rollouts on nodes, the oldest minor claimed and the newest (the main line
# runs the pinned 2.19; the middle minors' rollouts cost about 120 s each under load: `hack/matrix.sh -- rollout` and
# `hack/matrix-chroot.sh rollout` run them all), and the rollout benchmark. Beside the scenarios from the start, they
# made the run slower (ci7: 2,540 s against 2,314 s; the CPUs were the limit); in ci58 the guests of their own ended
# 1,701 s in and the nspawn line ran alone for its last 500 s, on a machine then partly idle.
nodes_tail() {
  export NODEALLOC_NSPAWN_SLOT=1
  step "controller matrix: the rollout happy path with ansible-core 2.16 (the oldest claimed)" \
    bash hack/matrix.sh -s "controller(ansible_core='2.16')" -- rollout
  step "controller matrix: the rollout happy path with ansible-core 2.21 (the newest, chroot)" bash hack/matrix-chroot.sh rollout 2.21
  # The benchmarks are run, not timed: small sizes (shipped defaults otherwise), each prints its --json line; the
  # figures in docs/benchmarks.md come from full runs. One rollout node: at the 30-s soak it costs about 100 s here.
  step "benchmark on an nspawn node (small size): rollout" python benchmarks/rollout.py --json --nodes 1
}

# The lanes' rollouts use the nox sessions the matrix's static parts build (matrix_static, below): not before those are
# done, which in ci58 was some 600 s before the guests of their own were.
# matrix_static touches the flag however it ends (a trap); each of its two steps is killed past
# matrix_static_step_seconds (2.5 times the slowest seen, ci57-ci60: 761 s) and the wait is bounded just past the two
# (a SIGKILL runs no trap): a hang makes the run red with its reason, within CI's 90 minutes, instead of outlasting them.
matrix_static_done=$(mktemp -u)
matrix_static_step_seconds=1800
matrix_static_wait_seconds=3700
vm_own_then_nodes_tail() {
  vm_tests vm-own "guests of their own: oom_outcomes, the Prometheus end to end"
  local waited=0
  while [[ ! -e $matrix_static_done ]] && (( waited < matrix_static_wait_seconds )); do sleep 5; waited=$((waited + 5)); done
  if [[ ! -e $matrix_static_done ]]; then
    echo "=== the lanes' rollouts on nodes not run: the matrix's static parts had not ended after ${matrix_static_wait_seconds} s"
    failed+=("the lanes' rollouts on nodes (the matrix's static parts did not end)")
    return
  fi
  nodes_tail
}

alongside static_checks
alongside vm_tests vm-session "real-kernel facts (cgroup v2 and v1; Debian 11, 12, 13), page cache, swap, untrusted processes, the rollout scenarios' VM variants"
alongside vm_own_then_nodes_tail
alongside localhost_tests

# The controller support matrix (noxfile.py, docs/testing.md "Support matrix"): every ansible-core minor claimed, the
# tarball built and installed, recommend/apply --check from it, the role's invalid-input tests. It boots nothing: it
# runs beside the main line, niced; the lanes' rollouts on nspawn nodes run after it, on slot 1 (nodes_tail).
matrix_static() {
  renice -n 10 -p "$BASHPID" >/dev/null
  trap 'touch "$matrix_static_done"' EXIT
  step "controller matrix: ansible-core 2.16-2.19 (Python 3.11)" \
    timeout --kill-after=30 "$matrix_static_step_seconds" bash hack/matrix.sh -- static
  step "controller matrix: ansible-core 2.20-2.21 (Debian 13 chroot, Python 3.13)" \
    timeout --kill-after=30 "$matrix_static_step_seconds" bash hack/matrix-chroot.sh static
}
alongside matrix_static

# The unit tests run once, through ansible-test beside this line (units above); the role's playbook tests and the
# integration tests on this machine beside it too (localhost_tests). This line has the nspawn fleet of slot 0: the
# scenarios, then Molecule (its platforms are named node1-3, slot 0's); the lanes' rollouts and the rollout benchmark
# run on slot 1 after the guests of their own (vm_own_then_nodes_tail). facts_cost makes host cgroups: in
# localhost_tests, after the integration tests that make them too.
step "pytest: multi-node rollout scenarios on nspawn nodes" \
  python -m pytest -p no:cacheprovider -q -rs --durations=15 --nodes-lane host tests/scenarios
step "molecule test (rollout scenario on three nodes)" molecule test -s rollout

for index in "${!alongside_pids[@]}"; do
  wait "${alongside_pids[$index]}"
  echo "=== what ran alongside:"
  cat "${alongside_logs[$index]}"
  while read -r name; do
    [[ -n $name ]] && failed+=("$name")
  done < "${alongside_failed[$index]}"
  rm -f "${alongside_logs[$index]}" "${alongside_failed[$index]}"
done

rm -f "$matrix_static_done"

lint_targets=(playbooks)
[[ -d roles ]] && lint_targets+=(roles)
[[ -d extensions ]] && lint_targets+=(extensions)
step "ansible-lint --profile production" ansible-lint --profile production -q "${lint_targets[@]}"
step "antsibull-changelog lint" antsibull-changelog lint

if ((${#failed[@]})); then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
echo "All test steps passed."
