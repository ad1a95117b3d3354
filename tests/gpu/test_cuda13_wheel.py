"""`pip install cudalab[cuda13]` on a GPU machine: the wheel with NVIDIA's CUDA 13 wheels (runtime,
cuBLAS, NVRTC) as its extra, and no system toolkit on the library path. The CUDA backend must load
and take cuBLAS and NVRTC from those wheels (site-packages/nvidia/*/lib, put first on the kernel's
LD_LIBRARY_PATH by the launcher): the dynamic loader's own account (LD_DEBUG=libs, "calling init:
PATH") names the library each process of the kernel initialised.

Where the wheels come from: CUDALAB_WHEELHOUSE, folders (os.pathsep between them) holding a
cudalab wheel, NVIDIA's wheels and what the cudalab wheel needs (jupyter_client and its
dependencies), installed with --no-index, for a GPU machine without network; else the wheel is
built from the build under test (scripts/build-wheel.sh) and the rest comes from PyPI (skipped,
saying so, when PyPI cannot be reached). A wheelhouse without NVIDIA's wheels (the GPU machine has
no network, and they are too large to carry there) installs the plain wheel instead, offline, which
must then run on the machine's own CUDA libraries; the extra's lookup is tested there with a
stand-in layout (tests/package/test_wheel_libraries.py). Skipped without a GPU; fails under
CUDALAB_REQUIRE_GPU=1.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_cli import REPO, binary, gpu  # noqa: F401 (a fixture)

OFFLINE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
                     r"resolution|Network is unreachable|ConnectTimeout|ReadTimeout|ProxyError")
STUDENT = """%%kernel --for matmul --name wheelnaive
__global__ void wheelnaive(const float *A, const float *B, float *C, int m, int n, int k) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float s = 0.0f;
        for (int i = 0; i < k; i++) s += A[row * k + i] * B[i * n + col];
        C[row * n + col] = s;
    }
}"""


def _wheelhouse(tmp: Path) -> tuple[list[str], bool]:
    """(find-links folders, whether to stay off the index)."""
    given = [p for p in os.environ.get("CUDALAB_WHEELHOUSE", "").split(os.pathsep) if p]
    if given:
        missing = [p for p in given if not Path(p).is_dir()]
        assert not missing, f"CUDALAB_WHEELHOUSE names folders that do not exist: {missing}"
        assert any(next(Path(p).glob("cudalab-*.whl"), None) for p in given), f"no cudalab wheel in {given}"
        return given, True
    missing = subprocess.run([sys.executable, "-c", "import auditwheel, setuptools"], capture_output=True)
    if missing.returncode != 0:
        pytest.skip("building the wheel needs auditwheel and setuptools (scripts/setup.sh test); or name "
                    "ready wheels with CUDALAB_WHEELHOUSE")
    build = binary().resolve().parent.parent
    r = subprocess.run([str(REPO / "scripts" / "build-wheel.sh"), str(build), str(tmp / "dist"), sys.executable],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, f"scripts/build-wheel.sh failed:\n{r.stdout}\n{r.stderr}"
    return [str(tmp / "dist")], False


@pytest.fixture(scope="module")
def site(gpu, tmp_path_factory) -> Path:
    """A fresh install of cudalab[cuda13] into its own folder (pip --target: no venv module needed)."""
    tmp = tmp_path_factory.mktemp("cuda13")
    links, offline = _wheelhouse(tmp)
    target = tmp / "site"
    args = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
            "--target", str(target), *(f"--find-links={p}" for p in links)]
    args += ["--no-index"] if offline else []
    spec = "cudalab[cuda13]" if _has_nvidia_wheels(links, offline) else "cudalab"
    r = subprocess.run([*args, spec], capture_output=True, text=True, timeout=900)
    if r.returncode != 0 and not offline and OFFLINE.search(r.stderr):
        pytest.skip(f"PyPI is unreachable for NVIDIA's wheels: {OFFLINE.search(r.stderr).group(0)}")
    assert r.returncode == 0, f"pip install {spec} failed:\n{r.stderr[-4000:]}"
    return target


def _has_nvidia_wheels(links: list[str], offline: bool) -> bool:
    """Whether the extra can be installed: from PyPI, or from NVIDIA's wheels in the wheelhouse."""
    return not offline or any(next(Path(p).glob("nvidia_*.whl"), None) for p in links)


def _from_wheels(site: Path) -> bool:
    return (site / "nvidia").is_dir()


def _env(site: Path) -> dict[str, str]:
    """A student's shell: the install on PYTHONPATH, no CUDALAB_BIN, no system CUDA library folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDALAB_BIN", "JUPYTER_PATH", "VIRTUAL_ENV")}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
                                             if d and "cuda" not in d.lower())
    env["PYTHONPATH"] = os.pathsep.join([str(site), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)])
    return env


def _initialised(stderr: str, soname: str) -> list[str]:
    """The paths of `soname` the dynamic loader initialised, from LD_DEBUG=libs output."""
    return sorted({m.group(1) for m in re.finditer(r"calling init: (\S*/" + re.escape(soname) + r")\b", stderr)})


def test_cuda13_extra_installs_nvidia_libraries(site: Path):
    if not _from_wheels(site):
        pytest.skip("NVIDIA's CUDA 13 wheels are not in the offline wheelhouse: the plain wheel was installed "
                    "(the extra's lookup: tests/package/test_wheel_libraries.py, a stand-in layout)")
    libs = {p.name for p in site.glob("nvidia/*/lib/*.so*")}
    for soname in ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnvrtc.so.13"):
        assert soname in libs, f"{soname} is not in the cuda13 extra's wheels: {sorted(libs)}"
    assert (site / "cudalab" / "_native" / "lib" / "cudalab" / "libcudalab_cuda.so").is_file(), \
        "the wheel carries no CUDA backend"


@pytest.mark.timeout(600)
def test_backend_runs_on_the_wheels_libraries(site: Path):
    """%device on the GPU, a timed cuBLAS run and a student's kernel (NVRTC) checked, with the libraries from
    NVIDIA's wheels, or from the machine's CUDA installation under the plain wheel."""
    env = {**_env(site), "LD_DEBUG": "libs"}
    run = lambda c: subprocess.run([sys.executable, "-m", "cudalab", "kernel", "--run", c, "--json"],  # noqa: E731
                                   capture_output=True, text=True, timeout=300, env=env, cwd=site.parent)
    results = [run("%device\n%matmul --size 1024 --variant tiled,cublas --reps 10 --warmup 2"), run(STUDENT)]
    for r in results:
        assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout[-3000:]}\n" + \
            "\n".join(l for l in r.stderr.splitlines() if not re.match(r"\s*\d+:", l))[-3000:]
    docs = [json.loads(l) for r in results for l in r.stdout.splitlines() if l.startswith("{")]
    device = next(d for d in docs if d.get("magic") == "device")
    assert device["backend"] == "cuda", device.get("backend_note")
    runs = [x for d in docs if d.get("magic") == "matmul" for x in d.get("runs", [])]
    assert {"tiled", "cublas"} <= {x["variant"] for x in runs}, runs
    assert all(x["check"]["passed"] for x in runs if "check" in x), runs
    assert all(x["time_ms"]["median"] > 0 and x["time_ms"]["reps"] == 10 for x in runs), runs
    student = [d for d in docs if d.get("magic") == "kernel"]
    assert student and all(not d["modelled"] and d["check"]["passed"] for d in student), student
    stderr = "".join(r.stderr for r in results)
    nvidia = str(site / "nvidia")
    for soname in ("libcublas.so.13", "libnvrtc.so.13", "libcudart.so.13"):
        paths = _initialised(stderr, soname)
        if soname == "libcudart.so.13" and not paths:
            continue            # the backend may link the runtime statically
        assert paths, f"no process of the kernel initialised {soname}"
        if _from_wheels(site):
            assert all(p.startswith(nvidia) for p in paths), f"{soname} came from {paths}, not from {nvidia}"
        else:
            assert not any(p.startswith(str(site)) for p in paths), paths


@pytest.mark.timeout(300)
def test_installed_kernelspec_runs_cublas(site: Path, tmp_path: Path):
    """The kernelspec `python -m cudalab install --prefix` writes, started by jupyter_client as Jupyter
    does: cuBLAS answers through the launcher's library path."""
    env = _env(site)
    r = subprocess.run([sys.executable, "-m", "cudalab", "install", "--prefix", str(tmp_path / "prefix")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    code = f"""
import json, sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="cudalab")
try:
    msg_id = kc.execute("%matmul --size 256 --variant cublas")
    reply = kc.get_shell_msg(timeout=120)
    docs = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        data = m["content"].get("data", {{}})
        if "application/vnd.cudalab.result+json" in data:
            docs.append(data["application/vnd.cudalab.result+json"])
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    print(json.dumps({{"status": reply["content"]["status"], "docs": docs}}))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""
    jenv = {**env, "JUPYTER_PATH": str(tmp_path / "prefix" / "share" / "jupyter")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=jenv)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok", out
    doc = out["docs"][-1]
    assert doc["backend"] == "cuda" and doc["runs"][0]["variant"] == "cublas", doc
    assert doc["runs"][0]["check"]["passed"], doc
