#!/usr/bin/env bash
# setup.sh — install what cudalab needs on Debian/Ubuntu, idempotently:
#   the C build dependencies (apt, as root or through sudo) and a pinned
#   Python virtualenv in .venv (requirements-test.txt and requirements-lab.txt; `test` adds
#   requirements-grade.txt and requirements-hub-test.txt when they exist, and Debian's chromium and
#   chromium-driver for the browser test: when they cannot be installed that test skips, and set-up
#   goes on; `test` also adds requirements-board.txt and Debian's postgresql, whose initdb and
#   pg_ctl tests/board start a private cluster with), then this tree's Python package (python/cudalab) installed editable into the venv, so
#   that its entry points (`python -m cudalab`, the Pygments lexer, papermill's translator) are there.
# Usage: scripts/setup.sh test|lab
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
venv=${VENV:-.venv}

apt_pkgs=(build-essential pkg-config libzmq3-dev libjansson-dev libssl-dev libcmocka-dev valgrind clang libclang-rt-dev
          libopenblas0-pthread)
# tests/board/test_store.py runs the board's store against a private PostgreSQL cluster too
[ "$mode" = test ] && apt_pkgs+=(postgresql)
missing=()
for p in "${apt_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
updated=0
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    updated=1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tests/browser drives JupyterLab in headless Chromium: optional, so a failure here only says so
if [ "$mode" = test ] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
    echo "setup: installing chromium chromium-driver (for tests/browser)"
    log=$(mktemp)
    if ! { [ $updated = 1 ] || $sudo apt-get update -qq; } >"$log" 2>&1 ||
       ! timeout 900 $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
             chromium chromium-driver >"$log" 2>&1; then
        echo "setup: could not install chromium and chromium-driver (tests/browser will skip):"
        grep -E '^(E|W):|rror' "$log" | tail -n 3 | sed 's/^/setup:   /' || true
    fi
    rm -f "$log"
fi

# JupyterLab and nbconvert are needed by the browser test and `make demo` as well as `make lab`
reqs=(requirements-test.txt requirements-lab.txt)
[ "$mode" = test ] && [ -f requirements-grade.txt ] && reqs+=(requirements-grade.txt)
# the class leaderboard's PostgreSQL driver (board/cudalab_board/store.py)
[ "$mode" = test ] && [ -f requirements-board.txt ] && reqs+=(requirements-board.txt)
# JupyterHub for tests/deploy's live hub, last: its pins list only what the three above do not
[ "$mode" = test ] && [ -f requirements-hub-test.txt ] && reqs+=(requirements-hub-test.txt)
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

# jsonschema checks the "iri" formats (its format-nongpl extra, which jupyter-events asks for) with
# rfc3987-syntax, whose import builds a lark grammar: 2.2 s of CPU in every process that imports
# nbformat's validator (each nbgrader run, Jupyter server, nbclient). Nothing here validates an iri, and
# without the package jsonschema leaves that one format unchecked (it catches the ImportError).
if "$venv/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("rfc3987_syntax") is None)'; then
    "$venv/bin/python" -m pip uninstall -q -y --disable-pip-version-check rfc3987-syntax
fi

# this tree's package, editable: offline (the venv's pinned setuptools, no build isolation), and
# again only when pyproject.toml changed or the venv's cudalab is another tree's
line="editable $(pwd) $(sha256sum pyproject.toml | cut -d' ' -f1)"
if ! grep -qxF "$line" "$stamp" 2>/dev/null ||
   [ "$("$venv/bin/python" -c 'import cudalab, os; print(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(cudalab.__file__)))))' 2>/dev/null)" != "$(pwd)" ]; then
    echo "setup: installing this tree's python/cudalab into $venv (editable)"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
    { grep -v "^editable " "$stamp" 2>/dev/null || true; echo "$line"; } > "$stamp.new" && mv "$stamp.new" "$stamp"
fi
