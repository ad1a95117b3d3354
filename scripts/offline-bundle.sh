#!/usr/bin/env bash
# offline-bundle.sh — run on a machine with network, before `make test-gpu|bench|grade|record OFFLINE=1` on a
# GPU machine that has none (no package index, no apt, no libzmq): fills, for each TARGET named
# (default: all four),
#   .whl/TARGET/  the wheels of what TARGET's Python imports and their dependencies, for CPython
#                 $OFFLINE_PY on manylinux x86_64, at exactly the pins of requirements-test.txt,
#                 requirements-lab.txt and requirements-grade.txt (a dependency they do not pin fails)
#   .zmqlib/      libzmq and the libraries it needs that such a machine lacks (OFFLINE_ZMQ_LIBS)
# Then it prints what one device call carries for each target (the working tree, build/bin,
# build/lib, .zmqlib and that target's wheels) and fails when one is over OFFLINE_BUDGET_MIB, which
# leaves room under the 64 MiB a call takes. Build first (make CUDA_ARCHS=90) for the exact figure.
# scripts/offline-env.sh is the other half: it installs a folder of these wheels on the GPU machine.
#
# Usage: scripts/offline-bundle.sh [test-gpu] [bench] [grade] [record]
#   PYTHON        the Python whose pip downloads (default: a python3.12 if one is found, else python3;
#                 pip evaluates dependencies' markers for the Python it runs in)
#   OFFLINE_PY    the GPU machine's Python version (default 3.12: Ubuntu 24.04)
#   OFFLINE_GLIBC its glibc (default 2.39), the newest manylinux tag its wheels may carry
set -euo pipefail
cd "$(dirname "$0")/.."

OFFLINE_PY=${OFFLINE_PY:-3.12}
OFFLINE_GLIBC=${OFFLINE_GLIBC:-2.39}
OFFLINE_BUDGET_MIB=${OFFLINE_BUDGET_MIB:-60}
# libzmq.so.5 and the libraries of its closure that Ubuntu 24.04's CUDA image does not install (the
# rest, libstdc++, libbsd, GSSAPI, are the system's: scripts/offline-env.sh checks with ldd there)
OFFLINE_ZMQ_LIBS=${OFFLINE_ZMQ_LIBS:-"libzmq.so.5 libsodium.so.23 libpgm-5.3.so.0 libnorm.so.1"}
WHEELS=.whl
LIBS=.zmqlib

# What each target's Python imports (pip adds their dependencies): tests/conftest.py (jupyter_client,
# pyzmq, jsonschema, psutil) and tests/gpu under pytest, with pytest-timeout for the time limits
# conftest.py puts on every test; bench/*.py the same helpers plus ipykernel, its reference kernel;
# tests/nbgrader/grade_samples.py nbgrader, and conftest.py through the expected-score tables;
# scripts/record.py nbclient.
declare -A TOP=(
    [test-gpu]="pytest pytest-timeout jupyter_client pyzmq jsonschema psutil"
    [bench]="pytest pytest-timeout jupyter_client pyzmq jsonschema psutil ipykernel"
    [grade]="pytest pytest-timeout jupyter_client pyzmq jsonschema psutil nbformat nbgrader"
    [record]="jupyter_client pyzmq jsonschema nbformat nbclient"
)
# Dependencies that the target never imports, left out with whatever only they need: for grade,
# nbgrader's front ends (JupyterLab, Notebook, the lab's server, the widgets and the ipykernel they
# bring) and IPython's optional completer (jedi). `nbgrader generate_assignment`, `autograde` and
# `generate_feedback` import none of them (traced over a whole `make grade`); with them, grade's
# wheels would be about 75 MiB, over what one call carries.
declare -A OMIT=(
    [grade]="jupyterlab jupyterlab-server notebook ipywidgets jedi"
)

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(test-gpu bench grade record)
for t in "${targets[@]}"; do
    [ -n "${TOP[$t]:-}" ] || { echo "offline-bundle: no target '$t' (test-gpu, bench, grade, record)" >&2; exit 2; }
done

# the first Python with pip among PYTHON, a python$OFFLINE_PY (on PATH or pyenv's) and python3
candidates=("${PYTHON:-}" "python$OFFLINE_PY")
command -v pyenv >/dev/null && candidates+=("$(pyenv root)"/versions/"$OFFLINE_PY"*/bin/python"$OFFLINE_PY")
candidates+=(python3)
py=""
for c in "${candidates[@]}"; do
    [ -n "$c" ] && "$c" -m pip --version >/dev/null 2>&1 && { py=$c; break; }
    [ -z "${PYTHON:-}" ] || { echo "offline-bundle: PYTHON=$PYTHON has no pip" >&2; exit 1; }
done
[ -n "$py" ] || { echo "offline-bundle: no Python with pip (PYTHON=...)" >&2; exit 1; }
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$pyver" = "$OFFLINE_PY" ] ||
    echo "offline-bundle: note: $py is Python $pyver: dependencies' markers are evaluated for $pyver, not $OFFLINE_PY"

norm() { tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g'; }
# the pins, one "name==version" a line with the name normalised (PEP 503)
pins=$(mktemp -d)
trap 'rm -rf "$pins"' EXIT
cat requirements-test.txt requirements-lab.txt requirements-grade.txt | sed -e 's/#.*//' -e 's/[[:space:]]//g' |
    grep . | awk -F'==' '{print $1 "==" $2}' > "$pins/constraints.txt"
awk -F'==' '{print $1 " " $2}' "$pins/constraints.txt" | while read -r n v; do echo "$(echo "$n" | norm)==$v"; done |
    sort -u > "$pins/pins.txt"

platforms=()
glibc_minor=${OFFLINE_GLIBC#2.}
for ((m = glibc_minor; m >= 5; m--)); do platforms+=(--platform "manylinux_2_${m}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

for t in "${targets[@]}"; do
    dir="$WHEELS/$t"
    rm -rf "$dir" && mkdir -p "$dir"
    echo "offline-bundle: $t: downloading ${TOP[$t]} and their dependencies"
    # shellcheck disable=SC2086  # the package lists are word lists
    "$py" -m pip download -q --disable-pip-version-check --only-binary=:all: \
        --python-version "$OFFLINE_PY" --implementation cp --abi "cp${OFFLINE_PY/./}" "${platforms[@]}" \
        -c "$pins/constraints.txt" -d "$dir" ${TOP[$t]}
    # shellcheck disable=SC2086
    [ -z "${OMIT[$t]:-}" ] || "$py" - "$dir" "$OFFLINE_PY" ${TOP[$t]} -- ${OMIT[$t]} <<'EOF'
# Deletes the wheels of DIR that the packages TOP do not reach without passing through one of OMIT,
# following each wheel's Requires-Dist (with the extras asked for) under the GPU machine's markers.
import re, sys, zipfile
from pathlib import Path
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name

folder, pyver, names = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
cut = names.index("--")
top, omit = names[:cut], {canonicalize_name(n) for n in names[cut + 1:]}
env = dict(python_version=pyver, python_full_version=pyver + ".0", sys_platform="linux",
           platform_system="Linux", platform_machine="x86_64", os_name="posix",
           implementation_name="cpython", platform_python_implementation="CPython")
wheels, requires = {}, {}
for w in folder.glob("*.whl"):
    with zipfile.ZipFile(w) as z:
        meta = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        lines = z.read(meta).decode().split("\n\n")[0].splitlines()
    name = canonicalize_name(next(l.split(":", 1)[1].strip() for l in lines if l.startswith("Name:")))
    wheels[name] = w
    requires[name] = [Requirement(l.split(":", 1)[1].strip()) for l in lines if l.startswith("Requires-Dist:")]
reached, todo = set(), [(canonicalize_name(n), frozenset()) for n in top]
while todo:
    name, extras = todo.pop()
    if name in omit or (name, extras) in reached:
        continue
    reached.add((name, extras))
    for r in requires.get(name, []):
        if r.marker is None or any(r.marker.evaluate({**env, "extra": e}) for e in ({""} | extras)):
            todo.append((canonicalize_name(r.name), frozenset(r.extras)))
kept = {n for n, _ in reached}
for name, w in wheels.items():
    if name not in kept:
        w.unlink()
EOF
    unpinned=()
    for w in "$dir"/*.whl; do
        base=$(basename "$w")
        name=$(echo "${base%%-*}" | norm) version=$(echo "$base" | cut -d- -f2)
        grep -qxF "$name==$version" "$pins/pins.txt" || unpinned+=("$base")
    done
    if [ ${#unpinned[@]} -gt 0 ]; then
        echo "offline-bundle: $t: not at a pin of requirements-*.txt (pin them there): ${unpinned[*]}" >&2
        exit 1
    fi
done

rm -rf "$LIBS" && mkdir -p "$LIBS"
for so in $OFFLINE_ZMQ_LIBS; do
    path=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64/ { print $NF; exit }')
    [ -n "$path" ] || { echo "offline-bundle: $so is not installed here (scripts/setup.sh installs libzmq3-dev)" >&2; exit 1; }
    cp -L "$path" "$LIBS/$so"
done

# What one device call carries: the tree (tracked and untracked files git does not ignore) and the
# carried folders. Sizes in bytes, printed in MiB.
bytes() { if [ -e "$1" ]; then du -sb "$1" | cut -f1; else echo 0; fi; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
bins=$(($(bytes build/bin) + $(bytes build/lib)))
libs=$(bytes "$LIBS")
[ -x build/bin/cudalab ] ||
    echo "offline-bundle: note: build/bin/cudalab is not built yet: the totals below leave out the binaries (make CUDA_ARCHS=90)"
printf 'offline-bundle: what one device call carries, in MiB (budget %s):\n' "$OFFLINE_BUDGET_MIB"
printf '  %-9s %7s %7s %14s %6s %7s\n' target wheels .zmqlib "build/bin+lib" tree total
over=()
for t in "${targets[@]}"; do
    whl=$(bytes "$WHEELS/$t")
    total=$((whl + libs + bins + tree))
    printf '  %-9s %7s %7s %14s %6s %7s   (%d wheels)\n' "$t" "$(mib "$whl")" "$(mib "$libs")" "$(mib "$bins")" \
        "$(mib "$tree")" "$(mib "$total")" "$(ls "$WHEELS/$t" | wc -l)"
    [ "$total" -le $((OFFLINE_BUDGET_MIB * 1048576)) ] || over+=("$t")
done
if [ ${#over[@]} -gt 0 ]; then
    echo "offline-bundle: over the budget of $OFFLINE_BUDGET_MIB MiB: ${over[*]}" >&2
    exit 1
fi
echo "offline-bundle: on the GPU machine: make TARGET OFFLINE=1, carrying build/bin build/lib $LIBS $WHEELS/TARGET"
