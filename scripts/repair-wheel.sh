#!/usr/bin/env bash
# repair-wheel.sh WHEEL OUTDIR [AUDITWHEEL...] — makes a plain linux_<arch> cudalab wheel a manylinux
# one: auditwheel copies the C libraries the binaries link (libzmq, libjansson, libcrypto,
# libsodium, …) into the wheel (cudalab.libs/) and tags it with the oldest manylinux_2_X they allow.
# CUDA's libraries are never bundled: libcuda is the driver's (the system's), cuBLAS, cuBLASLt and
# NVRTC come from NVIDIA's wheels (the cuda13 extra) or the system's toolkit. Used by
# scripts/build-wheel.sh (`make wheel`) and by cibuildwheel (pyproject.toml's repair-wheel-command,
# the release workflow); AUDITWHEEL: how to run auditwheel (default: `auditwheel` on PATH).
set -euo pipefail
wheel=${1:?usage: repair-wheel.sh WHEEL OUTDIR [AUDITWHEEL...]} out=${2:?usage: repair-wheel.sh WHEEL OUTDIR [AUDITWHEEL...]}
shift 2
[ $# -gt 0 ] || set -- auditwheel
"$@" repair --wheel-dir "$out" \
    --exclude 'libcuda.so*' --exclude 'libcublas.so*' --exclude 'libcublasLt.so*' --exclude 'libnvrtc*' \
    "$wheel" >&2
