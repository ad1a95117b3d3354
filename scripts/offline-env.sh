#!/usr/bin/env bash
# offline-env.sh — the environment of `make test-gpu|bench|grade OFFLINE=1`, on a GPU machine without
# network, package index or libzmq (README, "Other targets"). Nothing is downloaded, built or
# apt-installed: it checks that the prebuilt files are there (--need, built by `make CUDA_ARCHS=90` on
# a networked machine) and that their libraries resolve with the --libs folder on LD_LIBRARY_PATH;
# installs the --wheels folder (scripts/offline-bundle.sh fills it) for --python with pip
# --no-index --no-deps --target into --site, again only when the wheels changed; then runs CMD with
# that site first on PYTHONPATH, its scripts first on PATH and its Jupyter data (nbconvert's
# templates) as JUPYTER_DATA_DIR. pytest loads pytest-timeout alone: the plugins of the machine's own
# Python are for another pytest.
#
# Usage: offline-env.sh --wheels DIR --libs DIR --site DIR --python PY [--need FILE]... [-- CMD ARGS...]
set -euo pipefail

wheels="" libs="" site="" py="" need=()
while [ $# -gt 0 ]; do
    case $1 in
        --wheels) wheels=$2; shift 2 ;;
        --libs)   libs=$2; shift 2 ;;
        --site)   site=$2; shift 2 ;;
        --python) py=$2; shift 2 ;;
        --need)   need+=("$2"); shift 2 ;;
        --)       shift; break ;;
        *) echo "offline-env: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$wheels" ] && [ -n "$libs" ] && [ -n "$site" ] && [ -n "$py" ] ||
    { echo "usage: offline-env.sh --wheels DIR --libs DIR --site DIR --python PY [--need FILE]... [-- CMD...]" >&2; exit 2; }

fail() { echo "offline: $*" >&2; exit 1; }

for f in "${need[@]}"; do
    [ -e "$f" ] || fail "$f is missing: build it on a machine with network (make CUDA_ARCHS=90) and carry build/bin and build/lib"
done
[ -d "$libs" ] || fail "$libs is missing: run scripts/offline-bundle.sh on a machine with network and carry $libs"
libs=$(cd "$libs" && pwd)
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for f in "${need[@]}"; do
    [ "$(head -c 4 "$f")" = $'\x7fELF' ] || continue     # the executables and shared libraries
    missing=$(ldd "$f" 2>/dev/null | awk '/not found/ { print $1 }' | tr '\n' ' ')
    [ -z "$missing" ] || fail "$f needs ${missing}which neither this machine's library path nor $libs holds" \
        "(libzmq's: OFFLINE_ZMQ_LIBS in scripts/offline-bundle.sh; CUDA's: LD_LIBRARY_PATH=the toolkit's lib64)"
done

ls "$wheels"/*.whl >/dev/null 2>&1 ||
    fail "no wheels in $wheels: run scripts/offline-bundle.sh on a machine with network and carry $wheels"
"$py" -m pip --version >/dev/null 2>&1 || fail "$py has no pip to install the wheels of $wheels with"
mkdir -p "$site"
site=$(cd "$site" && pwd)
# the stamp: the wheels' names (each holds its exact version) and the Python they were installed for
stamp="$( (cd "$wheels" && ls ./*.whl) ; "$py" -c 'import sys; print(sys.executable, sys.version)')"
if [ "$(cat "$site/.offline-stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "offline: installing $(ls "$wheels"/*.whl | wc -l) wheels of $wheels for $py into $site"
    rm -rf "$site" && mkdir -p "$site"
    "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index --no-deps \
        --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl ||
        fail "pip could not install the wheels of $wheels for $py (are they for its Python version? scripts/offline-bundle.sh, OFFLINE_PY)"
    printf '%s\n' "$stamp" > "$site/.offline-stamp"
fi

[ $# -gt 0 ] || exit 0
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
export JUPYTER_DATA_DIR="$site/share/jupyter"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTEST_PLUGINS=pytest_timeout
exec "$@"
