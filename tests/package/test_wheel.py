"""The `pip install cudalab` wheel, as a student gets it: built from the build under test by
scripts/build-wheel.sh (what `make wheel` runs), installed CPU-only into a fresh virtualenv with what
a notebook needs from PyPI (ipykernel, nbclient, at the versions requirements-test.txt pins; pip's
cache makes it quick), then `python -m cudalab install --sys-prefix`, a notebook on the cudalab
kernel, a Python notebook that does `%load_ext cudalab`, and `python -m cudalab uninstall`; its
metadata (a platform wheel, the short PyPI description, project links, classifiers).
And the sdist, as `pip install cudalab-X.tar.gz` takes it where no wheel fits: built from this tree
(python -m build), installed into a fresh virtualenv, where pip compiles the kernel with make (one
build: the slow test of this file), and the installed kernel runs a checked command.
Skips, saying so, only when PyPI cannot be reached."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, gpu_visible, kernel_binary
from pkg_notebooks import (check_extension_notebook, check_kernel_notebook, extension_notebook,
                           kernel_notebook, wait_pid_gone)

HERE = Path(__file__).resolve().parent
# what pip says when it cannot reach the index (as opposed to a real resolution or install failure)
OFFLINE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
                     r"resolution|Network is unreachable|ConnectTimeout|ReadTimeout|ProxyError")


class Venv:
    def __init__(self, root: Path, wheel: Path):
        self.root, self.wheel = root, wheel
        self.python = root / "venv" / "bin" / "python"
        self.site = Path(subprocess.run([str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        capture_output=True, text=True, check=True).stdout.strip())
        # the session's JUPYTER_PATH (the binary under test's kernelspec), CUDALAB_BIN and PYTHONPATH
        # would hide what the wheel installed: a student's shell has none of them
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("JUPYTER_PATH", "CUDALAB_BIN", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        for name in ("data", "config", "runtime"):
            (root / "jupyter" / name).mkdir(parents=True, exist_ok=True)
        self.env.update(JUPYTER_DATA_DIR=str(root / "jupyter" / "data"),
                        JUPYTER_CONFIG_DIR=str(root / "jupyter" / "config"),
                        JUPYTER_RUNTIME_DIR=str(root / "jupyter" / "runtime"),
                        PATH=f"{self.python.parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env, cwd=self.root)

    def script(self, name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A console script the package installed (bin/NAME of the virtualenv)."""
        return subprocess.run([str(self.python.parent / name), *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env, cwd=self.root)

    def notebook(self, nb, kernel: str, name: str):
        src, dst = self.root / f"{name}.ipynb", self.root / f"{name}.out.ipynb"
        nbformat.write(nb, src)
        r = self.run(str(HERE / "run_notebook.py"), str(src), str(dst), kernel, timeout=150)
        assert r.returncode == 0, f"{name} failed in the wheel's virtualenv:\n{r.stdout}\n{r.stderr[-4000:]}"
        return nbformat.read(dst, as_version=4)


def fresh_venv(root: Path, dist: Path, *extra: str, timeout: float) -> Venv:
    """dist (a wheel or an sdist) and extra installed from PyPI into a new virtualenv under root."""
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    v = Venv(root, dist)
    r = v.run("-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(REPO / "requirements-test.txt"),
              str(dist), *extra, timeout=timeout)
    if r.returncode != 0:
        if OFFLINE.search(r.stderr):
            pytest.skip(f"PyPI is unreachable, so {dist.name} cannot be installed with what it needs from there: "
                        f"{OFFLINE.search(r.stderr).group(0)}")
        pytest.fail(f"pip install of {dist.name} into a fresh virtualenv failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return v


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    root = tmp_path_factory.mktemp("wheel")
    build = kernel_binary().resolve().parent.parent
    r = subprocess.run([str(REPO / "scripts" / "build-wheel.sh"), str(build), str(root / "dist"), sys.executable],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, f"scripts/build-wheel.sh failed:\n{r.stdout}\n{r.stderr}"
    wheel = Path(r.stdout.strip().splitlines()[-1])
    return fresh_venv(root, wheel, "ipykernel", "nbclient", timeout=600)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    r = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, f"python -m build --sdist failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    (found,) = out.glob("cudalab-*.tar.gz")
    return found


@pytest.mark.timeout(600)
def test_wheel_is_manylinux_with_its_libraries(venv):
    """A platform wheel (the binary is for this architecture) that carries the binary, the CPU runner's
    runtime and the C libraries, and whose installed binary finds those libraries in the wheel."""
    assert re.fullmatch(r"cudalab-[\w.]+-py3-none-manylinux_2_\d+_x86_64\.whl", venv.wheel.name), venv.wheel.name
    names = zipfile.ZipFile(venv.wheel).namelist()
    for need in ("cudalab/_native/bin/cudalab", "cudalab/_native/lib/cudalab/simt/cudalab-runner",
                 "cudalab/_native/lib/cudalab/simt/cudalab_simt.h",
                 "cudalab/_native/share/jupyter/kernelspecs/cudalab/logo-64x64.png"):
        assert need in names, f"{need} is missing from {venv.wheel.name}"
    bundled = [n for n in names if n.startswith("cudalab.libs/")]
    for lib in ("libzmq", "libjansson", "libcrypto", "libsodium"):
        assert any(lib in n for n in bundled), f"{lib} is not bundled: {bundled}"
    binary = venv.site / "cudalab" / "_native" / "bin" / "cudalab"
    assert os.access(binary, os.X_OK), f"{binary} lost its executable bit"
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    for lib in ("libzmq", "libjansson", "libcrypto"):
        line = [l for l in ldd.splitlines() if lib in l]
        assert line and "cudalab.libs/" in line[0], f"{lib} is not taken from the wheel:\n{ldd}"
    cuda_lib = venv.site / "cudalab" / "_native" / "lib" / "cudalab" / "libcudalab_cuda.so"
    if cuda_lib.exists():           # the build machine's toolkit path stays behind (build-wheel.sh)
        dynamic = subprocess.run(["readelf", "-d", str(cuda_lib)], capture_output=True, text=True).stdout
        assert "RUNPATH" not in dynamic and "RPATH" not in dynamic, dynamic
    r = venv.run("-m", "cudalab", "kernel", "--version")
    assert r.returncode == 0 and r.stdout.startswith("cudalab "), r
    where = venv.run("-m", "cudalab", "where")
    assert str(binary) in where.stdout, where


@pytest.mark.timeout(600)
def test_kernelspec_install_notebook_uninstall(venv):
    r = venv.run("-m", "cudalab", "install", "--sys-prefix")
    assert r.returncode == 0, r.stderr
    spec_dir = venv.root / "venv" / "share" / "jupyter" / "kernels" / "cudalab"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"] == [str(venv.python), "-m", "cudalab", "kernel", "-f", "{connection_file}"]
    assert spec["language"] == "cudalab" and spec["interrupt_mode"] == "signal"
    template = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab"
    assert sorted(p.name for p in spec_dir.glob("logo-*")) == sorted(p.name for p in template.glob("logo-*"))
    listed = venv.run("-m", "jupyter_client.kernelspecapp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["kernelspecs"]["cudalab"]["resource_dir"] == str(spec_dir)

    nb = venv.notebook(kernel_notebook(), "cudalab", "kernel")
    check_kernel_notebook(nb)
    backend = [o.data for o in nb.cells[0].outputs if o.output_type in ("display_data", "execute_result")]
    if not gpu_visible():           # the CPU backend, and it says so
        assert "CPU backend" in backend[0]["text/plain"], backend[0]["text/plain"]

    r = venv.run("-m", "cudalab", "uninstall")
    assert r.returncode == 0, r.stderr
    assert not spec_dir.exists(), f"{spec_dir} is still there after uninstall"
    r = venv.run("-m", "cudalab", "uninstall")
    assert r.returncode == 1 and "no kernelspec cudalab" in r.stderr


@pytest.mark.timeout(600)
def test_load_ext_notebook_in_wheel_venv(venv):
    """%load_ext cudalab in the wheel's virtualenv, where pandas is not installed: everything works,
    and cudalab.results() says how to get pandas."""
    nb = venv.notebook(extension_notebook(pandas=False), "python3", "extension")
    package = [o.text for o in nb.cells[0].outputs if o.output_type == "stream"][0]
    assert f"package {venv.site / 'cudalab'}" in package, package
    pid = check_extension_notebook(nb, pandas=False)
    assert wait_pid_gone(pid), f"the cudalab kernel (pid {pid}) outlived the notebook"


@pytest.mark.timeout(600)
def test_wheel_metadata(venv):
    """A platform wheel (auditwheel and pip's platlib), PyPI's short description rather than the
    README (the developer's manual), the project's links and classifiers."""
    wheel = zipfile.ZipFile(venv.wheel)
    info = next(n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/WHEEL"))
    tags = wheel.read(f"{info}/WHEEL").decode()
    assert "Root-Is-Purelib: false" in tags.splitlines(), tags
    assert re.search(r"^Tag: py3-none-manylinux_2_\d+_x86_64$", tags, re.M), tags
    meta = wheel.read(f"{info}/METADATA").decode()
    headers, _, description = meta.partition("\n\n")
    assert description.strip() == (REPO / "docs" / "pypi.md").read_text().strip(), description[:400]
    assert len(description) < 3000 and "make test" not in description, len(description)
    urls = dict(line.split(": ", 1)[1].split(", ", 1) for line in headers.splitlines() if line.startswith("Project-URL: "))
    assert {"Homepage", "Source", "Issues"} <= set(urls) and all(u.startswith("https://") for u in urls.values()), urls
    classifiers = [line.split(": ", 1)[1] for line in headers.splitlines() if line.startswith("Classifier: ")]
    for need in ("Framework :: Jupyter", "Operating System :: POSIX :: Linux", "Environment :: GPU :: NVIDIA CUDA"):
        assert need in classifiers, classifiers
    assert "License-Expression: BSD-3-Clause" in headers.splitlines(), headers


def test_sdist_carries_the_sources_and_not_the_rest(sdist):
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for need in ("Makefile", "setup.py", "pyproject.toml", "LICENSE", "docs/pypi.md", "scripts/show_source.awk",
                 "kernel/main.c", "include/cudalab/matmul.h", "cpu/simt/runtime/cudalab_simt.h", "cuda/matmul_wgmma.cu",
                 "share/jupyter/kernelspecs/cudalab/kernel.json", "python/cudalab/locate.py"):
        assert need in names, f"{need} is missing from {sdist.name}"
    for leave in ("tests", "notebooks", "board", "deploy", "build", ".venv"):
        assert not any(n == leave or n.startswith(leave + "/") for n in names), f"{leave}/ is in {sdist.name}"


# serial: make -j(cores) of the whole kernel would slow the tests beside it past their deadlines
@pytest.mark.timeout(1800)
@pytest.mark.serial
def test_sdist_builds_the_kernel_where_it_is_installed(sdist, tmp_path, monkeypatch):
    """pip install cudalab-X.tar.gz in a fresh virtualenv: setup.py runs make (the C sources, this
    machine's compiler and libraries) and installs the kernel it built, which runs a checked sweep.
    Built as on a machine without the CUDA toolkit (NVCC empty): the CUDA backend's part of the same
    make is what the wheels carry, and five architectures of it would take ten minutes here."""
    monkeypatch.setenv("NVCC", "")
    v = fresh_venv(tmp_path, sdist, timeout=1500)
    binary = v.site / "cudalab" / "_native" / "bin" / "cudalab"
    assert os.access(binary, os.X_OK), f"{binary} is not installed"
    assert (v.site / "cudalab" / "_native" / "lib" / "cudalab" / "simt" / "cudalab-runner").is_file()
    where = v.run("-m", "cudalab", "where")
    assert where.returncode == 0 and str(binary) in where.stdout, where
    r = v.script("cudalab", "--run", "%matmul --size 64 --variant naive,tiled --reps 1 --warmup 0")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = re.findall(r"^(naive|tiled)\s+64\s+64\s+64\b.*\bok\s*$", r.stdout, re.M)
    assert rows == ["naive", "tiled"], r.stdout
    assert r.stderr == "", r.stderr
