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

step() {
  local name=$1; shift
  echo "=== $name"
  local started=$SECONDS
  "$@"
  local rc=$?
  echo "=== $name: $((SECONDS - started)) s"
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
  # The unit tests again, the way ansible-test runs them (its own pytest, collection import paths).
  (cd "$collection" && ansible-test units --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --local \
     2>&1 | grep -v -E "^WARNING: Location 'file:///|^(Collecting|Downloading|Installing|Successfully|Requirement|Using cached|Looking in|Processing) |━")
}

ansible_doc_renders() {
  local plugin
  for plugin in nodealloc.kubelet.node_reservation_facts nodealloc.kubelet.kubelet_config nodealloc.kubelet.kubelet_reservations_apply \
                nodealloc.kubelet.sampler_code; do
    ansible-doc -t module "$plugin" >/dev/null || return 1
  done
  ansible-doc -t filter nodealloc.kubelet.reservation_report >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.reservation_report_merge >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.quantity_value >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.reservation_handover >/dev/null || return 1
  ansible-doc -t filter nodealloc.kubelet.class_peers >/dev/null || return 1
  ansible-doc -t role nodealloc.kubelet.reservations >/dev/null
}

# ansible-test's checks work on the staged copy alone and boot nothing: they run alongside the node steps
# (about 80 s of the 30 minutes); their output is printed, in one piece, after those steps.
static_log=$(mktemp)
static_failed=$(mktemp)
(
  failed=()
  step "ansible-test sanity" sanity
  step "ansible-test units" units
  step "ansible-doc" ansible_doc_renders
  printf '%s\n' "${failed[@]}" > "$static_failed"
) > "$static_log" 2>&1 &
static_pid=$!

step "pytest: unit, real-kernel integration, multi-node rollout scenarios, VM guests" \
  python -m pytest -p no:cacheprovider -q -rs --durations=15 tests/unit tests/integration tests/scenarios tests/vm
step "molecule test (rollout scenario on three nodes)" molecule test -s rollout
benchmarks() {
  # Run, not timed: small sizes (shipped defaults otherwise), each prints its --json line; the figures in
  # docs/benchmarks.md come from full runs. One rollout node: at the 30-s soak each node costs about 100 s here.
  python benchmarks/facts_cost.py --json --pods 10,110 --repeat 5 \
    && python benchmarks/sampler_cost.py --json --lines 1000,20000 --runs 3 \
    && python benchmarks/quality.py --json --days 2 --live-seconds 10 | python -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("traces", "policies")}))' \
    && python benchmarks/rollout.py --json --nodes 1
}

step "benchmarks (small sizes)" benchmarks

wait "$static_pid"
echo "=== what ran alongside: ansible-test sanity, ansible-test units, ansible-doc"
cat "$static_log"
while read -r name; do
  [[ -n $name ]] && failed+=("$name")
done < "$static_failed"
rm -f "$static_log" "$static_failed"

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
