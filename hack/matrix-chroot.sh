#!/usr/bin/env bash
# The matrix lanes whose ansible-core needs Python >= 3.12 (2.20 on; Debian 12 has 3.11), in a Debian 13 (trixie)
# chroot with Python 3.13. The tree and the venvs in it are built once and kept under /var/cache/nodealloc/matrix;
# this tree, its venv and the cache are bind-mounted at their own paths inside, so a lane sees the paths it would
# on the host.
#   static:  nox runs noxfile.py's lanes under the chroot's Python (the tarball, recommend/apply --check, the tests).
#   rollout: nox builds and installs the tarball in the chroot; the nspawn nodes belong to the host (systemd-nspawn,
#            network namespaces), so the host's pytest runs the rollout scenario and its playbooks run through an
#            ansible-playbook that enters the chroot (NODEALLOC_ANSIBLE_BIN, tests/helpers/rollout.py).
# Usage: hack/matrix-chroot.sh [static] [rollout] [2.NN ...]   (default: both parts, every lane here; a minor named
#        runs only that lane, as make test's rollout of the newest minor does)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${NODEALLOC_MATRIX_CACHE:-/var/cache/nodealloc/matrix}
tree=$cache/trixie
# python3-yaml is the debootstrap tree's own; openssh-client: the rollout's playbooks reach the nodes over SSH.
packages=python3,python3-venv,python3-yaml,openssh-client
ROLLOUT_TEST=tests/scenarios/test_rollout.py::test_happy_path_changes_every_node_once_in_order_and_a_second_run_changes_nothing
parts=() lanes=()
for arg in "$@"; do
  if [[ $arg =~ ^2\.[0-9]+$ ]]; then lanes+=("$arg"); else parts+=("$arg"); fi
done
((${#parts[@]})) || parts=(static rollout)
# nox's session names for the lanes asked for (none: every lane).
sessions=()
for lane in "${lanes[@]}"; do sessions+=(-s "controller(ansible_core='$lane')"); done
mkdir -p "$cache"
# One run at a time: make test runs the static part beside the main line and the rollout on it.
exec 8>"$cache/.trixie-run.lock"
flock 8

build_tree() {
  # One builder at a time; a tree is used only once it is complete, and rebuilt when the package list changes.
  exec 9>"$cache/.trixie.lock"
  flock 9
  [[ -f $tree/.complete && $(cat "$tree/.complete") == "$packages" ]] && return 0
  rm -rf --one-file-system "$tree.partial"
  debootstrap --variant=minbase --include="$packages" trixie "$tree.partial" >/dev/null
  # nox runs from a venv of the chroot's own, pinned as the host's (requirements-test.txt).
  chroot "$tree.partial" python3 -m venv /opt/nox
  echo "$packages" > "$tree.partial/.complete"
  rm -rf --one-file-system "$tree"
  mv "$tree.partial" "$tree"
  exec 9>&-
}

mounts=()
cleanup() {
  local index
  for ((index = ${#mounts[@]} - 1; index >= 0; index--)); do
    umount -R "${mounts[$index]}" 2>/dev/null || umount -l "${mounts[$index]}" 2>/dev/null || true
  done
}
mount_in() {  # mount_in OPTION SOURCE (mounted at the same path inside)
  mkdir -p "$tree$2"
  mount "$1" "$2" "$tree$2"
  mounts+=("$tree$2")
}

[[ -f $tree/.complete && $(cat "$tree/.complete") == "$packages" ]] || build_tree
# Name resolution and TLS for pip, as the host has them.
cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
mkdir -p "$tree/etc/ssl/certs"
cp -L /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/certs/ca-certificates.crt"
trap cleanup EXIT
mount_in --bind /proc
# rbind: the facts module reads the cgroup mounts under /sys/fs/cgroup.
mount_in --rbind /sys
mount_in --bind /dev
mount_in --bind "$root"
# The worktree's .venv may be a link into another tree (the main venv, whose kubernetes.core the lanes install).
venv=$(readlink -f "$root/.venv")
[[ $venv == "$root/.venv" ]] || mount_in --bind "$venv"
mount_in --bind "$cache"
chmod 1777 "$tree/tmp"

pins=$(mktemp)
grep -hE '^(nox|argcomplete|colorlog|dependency-groups|distlib|humanize|python-discovery|virtualenv|attrs|filelock|packaging|platformdirs)==' \
  "$root/requirements-test.txt" "$root/requirements.txt" > "$pins"
cp "$pins" "$tree/tmp/nox-requirements.txt"
rm -f "$pins"
chroot "$tree" /opt/nox/bin/python -m pip install -q --disable-pip-version-check -r /tmp/nox-requirements.txt
in_chroot_nox() {
  chroot "$tree" env -u ANSIBLE_CONFIG -u ANSIBLE_COLLECTIONS_PATH -u PYTHONPATH HOME=/root PATH=/usr/bin:/bin \
    /opt/nox/bin/nox --noxfile "$root/noxfile.py" --envdir "$cache/trixie-nox" --no-color "$@"
}

rc=0
if [[ " ${parts[*]} " == *" static "* ]]; then
  in_chroot_nox "${sessions[@]}" -- static || rc=1
fi
if [[ " ${parts[*]} " == *" rollout "* ]]; then
  in_chroot_nox "${sessions[@]}" -- install || rc=1
  for lane_venv in "$cache"/trixie-nox/controller-ansible_core-*; do
    [[ -x $lane_venv/bin/ansible-playbook ]] || continue
    lane=${lane_venv##*controller-ansible_core-}
    if ((${#lanes[@]})) && [[ " ${lanes[*]} " != *" ${lane//-/.} "* ]]; then continue; fi
    # An ansible-playbook on the host's PATH that runs the lane's inside the chroot, in the same directory.
    wrappers=$cache/trixie-bin/$lane
    mkdir -p "$wrappers"
    cat > "$wrappers/ansible-playbook" <<EOF
#!/bin/sh
exec chroot '$tree' /bin/sh -c 'cd "\$0" && exec "\$@"' "\$PWD" env HOME=/root PATH='$lane_venv/bin:/usr/bin:/bin' '$lane_venv/bin/ansible-playbook' "\$@"
EOF
    chmod +x "$wrappers/ansible-playbook"
    echo "=== ansible-core ${lane//-/.} (chroot): $ROLLOUT_TEST"
    rm -rf "$cache/trixie-rollout-$lane"
    # The pytest of the main venv (the harness boots the nodes on the host). Exit 5 (nothing collected on this machine)
    # is not a failure, as in hack/run-tests.sh and noxfile.py.
    lane_rc=0
    # Two nodes, as the other lanes' rollouts (noxfile.py, ROLLOUT_FLEET_SIZE).
    env -u PYTHONPATH PYTHONPATH="$root/.build" ANSIBLE_CONFIG="$root/ansible.cfg" NODEALLOC_ANSIBLE_BIN="$wrappers" \
      NODEALLOC_FLEET_SIZE=2 NODEALLOC_TEST_COLLECTIONS_PATH="$lane_venv/tmp/installed" \
      "$root/.venv/bin/python" -m pytest -p no:cacheprovider -q -rs \
        --basetemp "$cache/trixie-rollout-$lane" --nodes-lane host "$ROLLOUT_TEST" || lane_rc=$?
    [[ $lane_rc -eq 0 || $lane_rc -eq 5 ]] || rc=1
  done
fi
exit $rc
