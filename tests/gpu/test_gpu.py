"""Tests that need a CUDA device.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1 (what `make test-gpu` sets): then they fail loudly."""
from __future__ import annotations

import json
import re

import pytest

from conftest import cli, execute, kernel_binary
from gpu_cli import skip_without_gpu

CC = re.compile(r"^\d+\.\d+$")


def device_doc_from_cli() -> tuple[dict | None, str]:
    """The %device document from the command line, and a reason when there is no GPU."""
    try:
        r = cli("--run", "%device", "--json", timeout=120)
    except Exception as e:  # noqa: BLE001 - any failure to run is the reason
        return None, f"cannot run {kernel_binary()}: {e}"
    if r.returncode != 0:
        return None, f"`cudalab --run %device --json` exited {r.returncode}: {r.stderr.strip()}"
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    if not lines:
        return None, "`cudalab --run %device --json` printed nothing"
    try:
        doc = json.loads(lines[0])
    except ValueError as e:
        return None, f"`cudalab --run %device --json` printed no JSON ({e}): {lines[0][:200]}"
    if doc.get("backend") != "cuda":
        return doc, doc.get("backend_note") or f"backend is {doc.get('backend')!r}"
    return doc, ""


@pytest.fixture(scope="module")
def gpu_doc(jupyter_env) -> dict:
    doc, reason = device_doc_from_cli()
    skip_without_gpu(reason)
    return doc


def check_cuda_doc(doc: dict) -> None:
    assert doc["magic"] == "device"
    assert doc["backend"] == "cuda"
    assert isinstance(doc["count"], int) and doc["count"] >= 1
    assert len(doc["devices"]) == doc["count"]
    for i, dev in enumerate(doc["devices"]):
        assert dev["index"] == i
        assert isinstance(dev["name"], str) and dev["name"]
        assert isinstance(dev["cc"], str) and CC.match(dev["cc"]), dev["cc"]
        assert isinstance(dev["peak_fp32_gflops"], (int, float)) and dev["peak_fp32_gflops"] > 0
        assert dev["sms"] > 0 and dev["mem_total_bytes"] > 0
        assert dev["warp_size"] == 32
    assert isinstance(doc["driver_version"], str) and isinstance(doc["runtime_version"], str)


def test_device_via_cli(gpu_doc):
    check_cuda_doc(gpu_doc)


def test_device_via_cli_text(gpu_doc):
    r = cli("--run", "%device", timeout=120)
    assert r.returncode == 0, r.stderr
    assert gpu_doc["devices"][0]["name"] in r.stdout
    assert r.stderr.strip() == "" or "warning" not in r.stderr.lower()


def test_device_via_kernel(gpu_doc, kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%device", timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    results = [m for m in msgs if m["msg_type"] == "execute_result"]
    assert len(results) == 1
    data = results[0]["content"]["data"]
    doc = data["application/vnd.cudalab.result+json"]
    check_cuda_doc(doc)
    assert doc["count"] == gpu_doc["count"]
    assert [d["cc"] for d in doc["devices"]] == [d["cc"] for d in gpu_doc["devices"]]
    assert doc["devices"][0]["name"] in data["text/plain"]
    assert not [m for m in msgs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]


def test_device_index_and_brief_via_kernel(gpu_doc, kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%device --index 0\n%device --brief", timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    kinds = [m["msg_type"] for m in msgs if m["msg_type"] in ("display_data", "execute_result")]
    assert kinds == ["display_data", "execute_result"]
    first = [m for m in msgs if m["msg_type"] == "display_data"][0]["content"]["data"]["application/vnd.cudalab.result+json"]
    assert first["backend"] == "cuda" and len(first["devices"]) == 1


def test_device_index_out_of_range_is_usage_error(gpu_doc, kernel):
    if gpu_doc["count"] > 63:
        pytest.skip("64 devices: no index out of range")
    km, kc = kernel
    reply, msgs = execute(kc, f"%device --index {gpu_doc['count']}", timeout=120)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UsageError"
