#!/usr/bin/env bash
# The matrix lanes whose ansible-core needs Python >= 3.12 (2.20 on; Debian 12 has 3.11): the same noxfile.py, run by
# nox under the Python 3.13 of a Debian 13 (trixie) chroot. The tree and the venvs in it are built once and kept
# under /var/cache/nodealloc/matrix; this tree is bind-mounted at its own path inside, so the lanes see the same
# paths as on the host. The rollout lane is not run here: the nspawn nodes and their network namespaces belong to
# the host (docs/testing.md, "Support matrix").
# Usage: hack/matrix-chroot.sh [nox arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${NODEALLOC_MATRIX_CACHE:-/var/cache/nodealloc/matrix}
tree=$cache/trixie
mkdir -p "$cache"

build_tree() {
  # One builder at a time; a tree is used only once it is complete.
  exec 9>"$cache/.trixie.lock"
  flock 9
  [[ -f $tree/.complete ]] && return 0
  rm -rf "$tree.partial"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-yaml trixie "$tree.partial" >/dev/null
  "$tree.partial/usr/bin/python3" --version >/dev/null 2>&1 || chroot "$tree.partial" python3 --version
  # nox runs in a venv of the chroot's own, pinned as the host's (requirements-test.txt).
  chroot "$tree.partial" python3 -m venv /opt/nox
  touch "$tree.partial/.complete"
  rm -rf "$tree"
  mv "$tree.partial" "$tree"
}

mounts=()
cleanup() {
  local index
  for ((index = ${#mounts[@]} - 1; index >= 0; index--)); do
    umount -R "${mounts[$index]}" 2>/dev/null || umount -l "${mounts[$index]}" 2>/dev/null || true
  done
}

[[ -f $tree/.complete ]] || build_tree
# Name resolution and TLS for pip, as the host has them.
cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
mkdir -p "$tree/etc/ssl/certs"
cp -L /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/certs/ca-certificates.crt"
trap cleanup EXIT
mount_in() {  # mount_in OPTIONS SOURCE TARGET-INSIDE
  mkdir -p "$tree$3"
  mount "$1" "$2" "$tree$3"
  mounts+=("$tree$3")
}
mount_in --bind /proc /proc
# rbind: the facts module reads the cgroup mounts under /sys/fs/cgroup.
mount_in --rbind /sys /sys
mount_in --bind /dev /dev
mount_in --bind "$root" "$root"
# The worktree's .venv may be a link into another tree (the main venv, whose kubernetes.core the lanes install).
venv=$(readlink -f "$root/.venv")
[[ $venv == "$root/.venv" ]] || mount_in --bind "$venv" "$venv"
mount_in --bind "$cache" "$cache"
mkdir -p "$tree/tmp" && chmod 1777 "$tree/tmp"

constraints=$(mktemp "$cache/nox-constraints.XXXXXX")
grep -E '^(nox|argcomplete|colorlog|dependency-groups|distlib|humanize|python-discovery|virtualenv|attrs|filelock|packaging|platformdirs)==' \
  "$root/requirements-test.txt" "$root/requirements.txt" | cut -d: -f2 > "$constraints"
chroot "$tree" /opt/nox/bin/python -m pip install -q -r "$constraints"
rm -f "$constraints"
chroot "$tree" env -u ANSIBLE_CONFIG -u ANSIBLE_COLLECTIONS_PATH -u PYTHONPATH HOME=/root PATH=/usr/bin:/bin \
  /opt/nox/bin/nox --noxfile "$root/noxfile.py" --envdir "$cache/trixie-nox" --no-color "$@"
