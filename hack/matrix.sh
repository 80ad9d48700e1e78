#!/usr/bin/env bash
# The controller support matrix (noxfile.py): every ansible-core minor the collection claims, one nox session each.
# The lanes whose ansible-core runs on this machine's Python run here; ansible-core 2.20 and later need Python >= 3.12
# and run in a Debian 13 chroot (hack/matrix-chroot.sh).
# The lanes' venvs are kept under /var/cache/nodealloc/matrix, so a second run installs nothing.
# Usage: hack/matrix.sh [nox arguments], e.g. hack/matrix.sh -s "controller(ansible_core='2.16')"
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${NODEALLOC_MATRIX_CACHE:-/var/cache/nodealloc/matrix}
mkdir -p "$cache"
nox=${NOX:-$root/.venv/bin/nox}
# What the Makefile exports is the main suite's: each lane names its own collection path and config.
unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH PYTHONPATH
# One run at a time: make test runs the static part beside the main line and the rollouts on it, in the same venvs.
exec 8>"$cache/.matrix.lock"
flock 8
exec "$nox" --noxfile "$root/noxfile.py" --envdir "$cache/nox" --no-color "$@"
