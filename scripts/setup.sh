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
# one stamp line per requirements file, so `make test` after `make lab` keeps the lab packages
stamp="$venv/.cudalab-reqs"
[ -x "$venv/bin/python" ] || { echo "setup: creating $venv"; python3 -m venv "$venv"; rm -f "$stamp"; }
for r in "${reqs[@]}"; do
    line="$r $(sha256sum "$r" | cut -d' ' -f1)"
    if ! grep -qxF "$line" "$stamp" 2>/dev/null; then
        echo "setup: installing $r into $venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$r"
        { grep -v "^$r " "$stamp" 2>/dev/null || true; echo "$line"; } > "$stamp.new" && mv "$stamp.new" "$stamp"
    fi
done
