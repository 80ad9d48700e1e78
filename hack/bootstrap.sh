#!/usr/bin/env bash
# Bootstrap a fresh Debian machine: the Debian packages named as arguments (only those missing),
# then .venv from the pinned requirements file given with -r. Safe to run again: it does only
# what is missing, and rebuilds .venv when the requirements file is newer than it.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=requirements.txt
packages=()
while (($#)); do
  case "$1" in
    -r) requirements=$2; shift 2 ;;
    *) packages+=("$1"); shift ;;
  esac
done
python3 -m venv --help >/dev/null 2>&1 || packages+=(python3-venv)
python3 -c 'import ensurepip' >/dev/null 2>&1 || packages+=(python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
stamp=".venv/.installed-$(basename "$requirements")"
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
if [[ ! -f $stamp || $requirements -nt $stamp || requirements.txt -nt $stamp ]]; then
  echo "bootstrap: installing $requirements into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r "$requirements"
  touch "$stamp"
fi
