"""`%load_ext cudalab` in a plain IPython kernel (ipykernel, the python3 kernelspec), as on Colab,
Kaggle or VS Code, with this tree's python/cudalab and the binary under test; and the package's
pure parts (the CUDA library search, the results table) in-process."""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

from conftest import REPO, collect_iopub, kernel_binary
from pkg_notebooks import RESULT, VEGALITE, check_extension_notebook, extension_notebook, wait_pid_gone

sys.path.insert(0, str(REPO / "python"))           # this tree's package, ahead of any installed one
from cudalab import locate, table                  # noqa: E402


@pytest.fixture
def ext_env(monkeypatch, tmp_path):
    """The IPython kernels these tests start import this tree's package and run the binary under test."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CUDALAB_BIN", str(kernel_binary()))
    monkeypatch.chdir(tmp_path)


@pytest.mark.timeout(120)
def test_load_ext_notebook(ext_env, tmp_path):
    nb = extension_notebook(pandas=True)
    NotebookClient(nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(tmp_path)}}).execute()
    package = [line for line in nb.cells[0].outputs[0].text.splitlines() if line.startswith("package ")]
    assert package and package[0].startswith(f"package {REPO / 'python' / 'cudalab'}"), package
    pid = check_extension_notebook(nb, pandas=True)
    assert wait_pid_gone(pid), f"the cudalab kernel (pid {pid}) outlived the notebook's IPython kernel"


def _run(kc, code: str, timeout: float = 30.0) -> list[dict]:
    """The iopub messages of one execute_request, before its idle status."""
    return collect_iopub(kc, kc.execute(code), timeout)[:-1]


@pytest.mark.timeout(90)
def test_interrupt_and_parent_death(ext_env):
    """The stop button while a magic runs interrupts the cudalab kernel (the cell ends in
    KeyboardInterrupt within seconds, the next magic works); a killed IPython kernel takes its
    cudalab kernel with it."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        out = _run(kc, "%load_ext cudalab\nimport cudalab.extension\nprint(cudalab.extension.kernel_pid())")
        pid = int([m for m in out if m["msg_type"] == "stream"][0]["content"]["text"])
        # a sweep's progress display is shown once, updated in place under its display_id and ended
        # with what ran (never emptied); its final table follows as an output of its own (what a
        # terminal shows too)
        out = _run(kc, "%matmul --size 128 --variant naive,tiled,cublas")   # big and varied enough for a chart
        shown = [m for m in out if m["msg_type"] in ("display_data", "update_display_data")
                 and m["content"].get("transient", {}).get("display_id")]
        assert len({m["content"]["transient"]["display_id"] for m in shown}) == 1, shown
        assert shown[0]["msg_type"] == "display_data" and len(shown) >= 2, shown
        assert shown[-1]["msg_type"] == "update_display_data", shown[-1]
        assert "points done in" in shown[-1]["content"]["data"]["text/plain"], shown[-1]
        final = [m for m in out if m["msg_type"] == "display_data" and RESULT in m["content"]["data"]]
        assert len(final) == 1 and out.index(final[0]) > out.index(shown[-1]), [m["msg_type"] for m in out]
        charts = [m for m in out if m["msg_type"] == "display_data" and VEGALITE in m["content"]["data"]]
        assert len(charts) == 1, [m["msg_type"] for m in out]
        msg_id = kc.execute("%matmul --size 1024 --variant naive,tiled --reps 100 --force")
        # wait for the sweep's progress display: the command is running in the cudalab kernel
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=20)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "display_data":
                break
        started = time.monotonic()
        km.interrupt_kernel()
        errors = []
        while time.monotonic() - started < 15:
            msg = kc.get_iopub_msg(timeout=15)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                errors.append(msg["content"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        took = time.monotonic() - started
        assert errors and errors[0]["ename"] == "KeyboardInterrupt", errors
        assert "stopped %matmul" in errors[0]["evalue"], errors   # the cudalab kernel's own words
        assert took < 5, f"the interrupted cell took {took:.1f} s to end"
        out = _run(kc, "%score 2 * 3")
        values = [m["content"]["data"].get("text/plain", "") for m in out if m["msg_type"] == "display_data"]
        assert values and values[0].strip() == "6", [m["msg_type"] for m in out]
        assert not [m for m in out if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]

        os.kill(km.provisioner.process.pid, signal.SIGKILL)
        assert wait_pid_gone(pid, 5), f"the cudalab kernel (pid {pid}) outlived its killed IPython kernel"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_cuda_library_dirs(tmp_path, monkeypatch):
    """NVIDIA's wheels' lib folders (nvidia/cu13/lib, CUDA 12's nvidia/cublas/lib …) go first on the
    kernel's LD_LIBRARY_PATH, once each; with none installed the environment is left alone."""
    for sub in ("cu13", "cuda_nvrtc"):
        (tmp_path / "site" / "nvidia" / sub / "lib").mkdir(parents=True)
    (tmp_path / "site" / "nvidia" / "cu13" / "include").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "empty"), str(tmp_path / "site"), str(tmp_path / "site")])
    site = (tmp_path / "site" / "nvidia").resolve()
    assert locate.cuda_library_dirs() == [str(site / "cu13" / "lib"), str(site / "cuda_nvrtc" / "lib")]
    env = locate.kernel_env({"LD_LIBRARY_PATH": f"/usr/lib64-nvidia:{site / 'cu13' / 'lib'}"})
    assert env["LD_LIBRARY_PATH"] == f"{site / 'cu13' / 'lib'}:{site / 'cuda_nvrtc' / 'lib'}:/usr/lib64-nvidia"
    monkeypatch.setattr(sys, "path", [str(tmp_path / "empty")])
    assert locate.kernel_env({"A": "1"}) == {"A": "1"}


def test_locate_prefers_cudalab_bin(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDALAB_BIN", str(kernel_binary()))
    assert locate.binary() == kernel_binary().resolve()
    monkeypatch.setenv("CUDALAB_BIN", str(tmp_path / "nothing"))
    with pytest.raises(locate.NotFound, match="CUDALAB_BIN"):
        locate.binary()


def test_results_table_rows():
    doc = {"magic": "matmul", "backend": "cpu", "device": {"name": "CPU"}, "params": {"size": 64, "seed": 1},
           "runs": [{"variant": "naive", "m": 64, "time_ms": {"median": 0.5}, "gflops": 1.0,
                     "launch": {"block": [16, 16, 1]}, "check": {"passed": True, "worst": [1, 2]}},
                    {"variant": "tiled", "m": 64, "tile": 16, "time_ms": {"median": 0.25}, "gflops": 2.0}]}
    rows = table.rows([{"magic": "device", "devices": []}, doc])
    assert len(rows) == 2
    assert rows[0]["result"] == 1 and rows[0]["magic"] == "matmul" and rows[0]["device"] == "CPU"
    assert rows[0]["time_ms.median"] == 0.5 and rows[0]["launch.block"] == (16, 16, 1)
    assert rows[0]["check.passed"] is True and rows[0]["params.size"] == 64 and rows[1]["tile"] == 16
    frame = table.dataframe([doc])
    assert list(frame.columns[:5]) == ["result", "magic", "variant", "backend", "device"]
    assert frame["gflops"].tolist() == [1.0, 2.0]
    assert list(table.dataframe([]).columns) == list(table.LEAD)

