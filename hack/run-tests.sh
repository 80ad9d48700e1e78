#!/usr/bin/env bash
# The whole test suite, in the order that fails fastest. Run through `make test`.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/.build${PYTHONPATH:+:$PYTHONPATH}"
status=0
step() {
  local name=$1; shift
  echo "=== $name: $*"
  "$@"
  local rc=$?
  # pytest exits 5 when it collected no test: a suite that selected nothing is not a failure here.
  if [[ $rc -ne 0 && ! ( $rc -eq 5 && $name == pytest* ) ]]; then
    echo "=== $name FAILED (exit $rc)"
    status=1
  fi
}
step pytest python -m pytest -p no:cacheprovider -q tests/unit tests/integration
exit $status
