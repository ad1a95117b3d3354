#!/usr/bin/env bash
# setup.sh — install what cudalab needs on Debian/Ubuntu, idempotently:
#   the C build dependencies (apt, as root or through sudo) and a pinned
#   Python virtualenv in .venv (requirements-test.txt; `lab` adds requirements-lab.txt).
# Usage: scripts/setup.sh test|lab
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
venv=${VENV:-.venv}

apt_pkgs=(build-essential pkg-config libzmq3-dev libjansson-dev libssl-dev libcmocka-dev valgrind clang libclang-rt-dev)
missing=()
for p in "${apt_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

reqs=(requirements-test.txt)
[ "$mode" = lab ] && reqs+=(requirements-lab.txt)
stamp="$venv/.cudalab-reqs"
want=$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: creating $venv from ${reqs[*]}"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check $(printf -- '-r %s ' "${reqs[@]}")
    echo "$want" > "$stamp"
fi
