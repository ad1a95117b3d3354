"""The `[cuda13]` extra's library lookup, with a stand-in of its layout: NVIDIA's CUDA 13 wheels put
their libraries in site-packages/nvidia/cu13/lib (cuBLAS, cuBLASLt, NVRTC, the runtime), where the
dynamic loader does not look; the launcher (`python -m cudalab kernel`, python/cudalab/locate.py)
puts that folder first on the kernel's LD_LIBRARY_PATH. NVIDIA's wheels are not installed here (nor
reachable from the GPU machine, which has no network), so the stand-in folder holds this machine's
own cuBLAS libraries under the wheels' path, and the dynamic loader's own account (LD_DEBUG=libs,
"calling init: PATH") says which copy the CUDA backend's process initialised: the wheel folder's,
ahead of the system's. No GPU is needed: the worker loads the CUDA backend (which needs libcublas by
its soname) before it finds there is no driver. NVRTC is opened only when a GPU compiles a student's
kernel: tests/gpu/test_cuda13_wheel.py covers it where the real wheels can be installed."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, kernel_binary

CUBLAS = ("libcublas.so.13", "libcublasLt.so.13")


def _backend() -> Path:
    return kernel_binary().resolve().parent.parent / "lib" / "cudalab" / "libcudalab_cuda.so"


def _system_library(soname: str) -> Path:
    """Where this machine's loader finds soname for the CUDA backend (ldd's answer)."""
    out = subprocess.run(["ldd", str(_backend())], capture_output=True, text=True, check=True).stdout
    m = re.search(rf"^\s*{re.escape(soname)} => (\S+)", out, re.M)
    if not m or m.group(1) == "not":
        pytest.skip(f"the CUDA backend's {soname} is not installed on this machine")
    return Path(m.group(1)).resolve()


def _initialised(site_env: dict[str, str], tmp_path: Path) -> str:
    """stderr of `python -m cudalab kernel --run %device` under LD_DEBUG=libs."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "JUPYTER_PATH")}
    env.update(site_env, LD_DEBUG="libs", CUDALAB_BIN=str(kernel_binary()), XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "cudalab", "kernel", "--run", "%device", "--json"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert '"magic":"device"' in r.stdout, r.stdout[-2000:]
    return r.stderr


def _inits(stderr: str, soname: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"calling init: (\S*/" + re.escape(soname) + r")\b", stderr)}


@pytest.fixture
def backend():
    if not _backend().is_file():
        pytest.skip(f"this build has no CUDA backend ({_backend()}): built without nvcc")
    return _backend()


def test_wheel_layout_goes_first(backend, tmp_path):
    site = tmp_path / "site"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    for soname in CUBLAS:
        (lib / soname).symlink_to(_system_library(soname))
    stderr = _initialised({"PYTHONPATH": os.pathsep.join([str(site), str(REPO / "python")])}, tmp_path)
    assert {Path(p).resolve() for p in _inits(stderr, "libcudalab_cuda.so")} == {backend.resolve()}, \
        "the worker never loaded the CUDA backend"
    for soname in CUBLAS:
        assert _inits(stderr, soname) == {str(lib / soname)}, \
            f"{soname} was initialised from {_inits(stderr, soname)}, not from the wheel layout {lib}"


def test_without_the_extra_the_system_libraries_load(backend, tmp_path):
    """The same launcher with no nvidia/ folder on sys.path leaves the loader to the system's copy."""
    stderr = _initialised({"PYTHONPATH": str(REPO / "python")}, tmp_path)
    for soname in CUBLAS:
        paths = {str(Path(p).resolve()) for p in _inits(stderr, soname)}
        assert paths == {str(_system_library(soname))}, paths
