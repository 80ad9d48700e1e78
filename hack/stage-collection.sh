#!/usr/bin/env bash
# Copy the working tree into .build/ansible_collections/nodealloc/kubelet, where ansible-playbook,
# ansible-test and pytest expect a collection to live. A copy, not a symlink: ansible-test resolves
# the real path and refuses a collection outside an ansible_collections tree.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.build/ansible_collections/nodealloc/kubelet
rm -rf "$dest"
mkdir -p "$dest"
tar -c --exclude=./.venv --exclude=./.build --exclude=./reports --exclude=./.git \
    --exclude='__pycache__' --exclude=./.pytest_cache --exclude=./.hypothesis --exclude=./tests/output . \
  | tar -x -C "$dest"
