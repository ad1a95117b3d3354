"""Where the kernel binary and its runtime are, and the environment it runs in.

Three layouts, tried in this order:
  * $CUDALAB_BIN, a binary named by hand (the tests, a debug build);
  * the wheel's: cudalab/_native/bin/cudalab with lib/cudalab/ (the CUDA backend, the CPU runner's
    runtime) beside it, and share/jupyter/kernelspecs/cudalab/ for the logos;
  * the source tree's (an editable install): python/cudalab/ two levels under the repository,
    whose build/bin/cudalab and share/ are those of `make`.
The binary finds lib/cudalab/ relative to itself (kernel/exec/backend_load.c), so every layout keeps
bin/ and lib/ side by side.

NVIDIA's wheels (`pip install cudalab[cuda13]`: cuBLAS, NVRTC, the runtime) put their libraries in
site-packages/nvidia/*/lib, where neither the dynamic linker nor dlopen() looks: the CUDA backend
needs libcublas by its soname and the worker dlopen()s libnvrtc by name. `kernel_env` puts those
folders first on LD_LIBRARY_PATH for the kernel process only, which its workers inherit.

This module imports nothing beyond the standard library: `python -m cudalab kernel`, the kernelspec's
launcher, runs through it on every kernel start.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
NATIVE = PACKAGE / "_native"
REPO = PACKAGE.parent.parent


class NotFound(RuntimeError):
    """The kernel binary is in none of the places this package looks."""


def binary() -> Path:
    """The cudalab kernel binary to run (absolute); NotFound says where it looked and what to do."""
    env = os.environ.get("CUDALAB_BIN")
    if env:
        path = Path(env).expanduser().resolve()
        if not _runnable(path):
            raise NotFound(f"CUDALAB_BIN={env} is not an executable file")
        return path
    candidates = [NATIVE / "bin" / "cudalab", REPO / "build" / "bin" / "cudalab"]
    for path in candidates:
        if path.is_file():
            if not os.access(path, os.X_OK):
                _make_executable(path)
            if _runnable(path):
                return path
    if (REPO / "Makefile").is_file() and (REPO / "kernel").is_dir():
        raise NotFound(f"cudalab is installed from its source tree ({REPO}) but not built: "
                       f"run `make` there (or set CUDALAB_BIN to a cudalab binary)")
    raise NotFound("the cudalab kernel binary is missing from this installation "
                   f"(looked for {candidates[0]}): reinstall with `pip install --force-reinstall cudalab`")


def kernelspec_dir() -> Path:
    """The kernelspec template (kernel.json and the logos) of this installation."""
    for path in (NATIVE / "share" / "jupyter" / "kernelspecs" / "cudalab",
                 REPO / "share" / "jupyter" / "kernelspecs" / "cudalab"):
        if (path / "kernel.json").is_file():
            return path
    raise NotFound("the cudalab kernelspec template (kernel.json and logos) is missing from this installation")


def cuda_library_dirs() -> list[str]:
    """site-packages/nvidia/*/lib of every entry on sys.path that has one, in sys.path's order:
    nvidia/cu13/lib for CUDA 13's wheels, nvidia/cublas/lib, nvidia/cuda_nvrtc/lib … for CUDA 12's."""
    found: list[str] = []
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        try:
            libs = sorted(p for p in nvidia.glob("*/lib") if p.is_dir())
        except OSError:
            continue
        for lib in libs:
            text = str(lib.resolve())
            if text not in found:
                found.append(text)
    return found


def kernel_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the kernel process: base (os.environ) with NVIDIA's wheel libraries first on
    LD_LIBRARY_PATH when any are installed, else base unchanged."""
    env = dict(os.environ if base is None else base)
    dirs = cuda_library_dirs()
    if dirs:
        old = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d and d not in dirs]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(dirs + old)
    return env


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _make_executable(path: Path) -> None:
    """An installer that dropped the mode bits (some unzip tools do) is forgiven when it may be."""
    try:
        path.chmod(path.stat().st_mode | 0o755)
    except OSError:
        pass
