"""%%kernel without a GPU, through a real kernel and jupyter_client: NVRTC compiles a student's kernel
(it needs no GPU), so the resource report, compile errors and warnings with the cell's own line
numbers, the signature check, the name rules, a kernel's life as a variant of %matmul, %kernels,
completion, %help and the cache of builds are all tested here; running the kernel is refused on the
CPU backend (tests/gpu covers that side).

Every kernel runs on the CPU backend (the same here, in CI and on a GPU machine) with its builds
cached in a directory of this test session (CUDALAB_CACHE_DIR), never in ~/.cache."""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import execute, outputs, request, streams

MIME = "application/vnd.cudalab.result+json"
SIGNATURE = "__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K)"
TIMEOUT = 60

NAIVE_BODY = """\
__global__ void {name}(const float *A, const float *B, float *C, int M, int N, int K) {{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0;
    for (int p = 0; p < K; p++) sum += A[row * K + p] * B[p * N + col];
    C[row * N + col] = sum;
}}
"""


def kernel_cell(name: str, body: str | None = None, flags: str = "") -> str:
    """A %%kernel cell for %matmul named NAME (body: the naive kernel of that name)."""
    body = NAIVE_BODY.format(name=name) if body is None else body
    return f"%%kernel --for matmul --name {name}{' ' + flags if flags else ''}\n{body}"


# ---------------------------------------------------------------- fixtures and helpers

def nvrtc_found() -> bool:
    """Whether the kernel will find NVRTC: the places kernel/student/nvrtc.c tries, in its order."""
    home = os.environ.get("CUDA_HOME")
    for name in (os.environ.get("CUDALAB_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                 home and f"{home}/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"):
        if name:
            try:
                ctypes.CDLL(name)
                return True
            except OSError:
                pass
    return False


# the CUDA toolkit's NVRTC is part of `make test` (CI has it); a laptop without it skips, saying so
needs_nvrtc = pytest.mark.skipif(not nvrtc_found(), reason="NVRTC (the CUDA toolkit's libnvrtc) is not "
                                 "installed here: %%kernel cannot compile")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    """This session's cache of builds, shared by its kernels (the cache tests use their own)."""
    return tmp_path_factory.mktemp("kernel-cache")


def env_for(cache: Path, **more: str) -> dict[str, str]:
    return {"CUDALAB_BACKEND": "cpu", "CUDALAB_CACHE_DIR": str(cache), **more}


@pytest.fixture
def kc(start_kernel, cache_dir):
    return start_kernel(env=env_for(cache_dir))[1]


def run(kc, code: str) -> tuple[dict, list[dict]]:
    reply, msgs = execute(kc, code, timeout=TIMEOUT)
    return reply["content"], msgs


def ok(kc, code: str) -> tuple[dict | None, list[dict]]:
    """Runs a cell that must succeed; its result document (or None) and its iopub messages."""
    content, msgs = run(kc, code)
    assert content["status"] == "ok", content.get("traceback")
    docs = [m["content"]["data"][MIME] for m in outputs(msgs)
            if m["msg_type"] in ("execute_result", "display_data", "update_display_data")
            and MIME in m["content"].get("data", {})]
    return (docs[-1] if docs else None), msgs


def fails(kc, code: str, ename: str, *fragments: str) -> dict:
    """Runs a cell that must fail with ename and every fragment in its evalue or traceback."""
    content, msgs = run(kc, code)
    assert content["status"] == "error", content
    assert content["ename"] == ename, content
    text = "\n".join([content["evalue"], *content["traceback"]])
    for f in fragments:
        assert f in text, text
    assert [m for m in outputs(msgs) if m["msg_type"] == "error"], "no error message on iopub"
    return content


def shown_text(msgs: list[dict]) -> str:
    """Everything a cell showed as text: streams and text/plain of its displays."""
    parts = []
    for m in outputs(msgs):
        if m["msg_type"] == "stream":
            parts.append(m["content"]["text"])
        elif m["msg_type"] in ("execute_result", "display_data", "update_display_data"):
            parts.append(m["content"]["data"].get("text/plain", ""))
    return "\n".join(parts)


def complete(kc, code: str) -> list[str]:
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)})
    assert reply["content"]["status"] == "ok"
    return reply["content"]["matches"]


def naive_edited(name: str, old: str, new: str) -> tuple[str, int]:
    """The naive kernel's cell under name with old replaced by new, and the cell line where new is."""
    cell = kernel_cell(name, NAIVE_BODY.format(name=name).replace(old, new))
    return cell, next(i for i, l in enumerate(cell.splitlines(), 1) if new.strip() in l)


# ---------------------------------------------------------------- a kernel that compiles

@needs_nvrtc
def test_correct_kernel_compiles_and_reports(kc):
    cell = kernel_cell("mynaive")
    doc, msgs = ok(kc, cell)
    assert doc is not None, shown_text(msgs)
    assert doc["magic"] == "kernel"
    assert doc["name"] == "mynaive"
    assert doc["for"] == "matmul"
    assert doc["source"] == "student"
    body = cell.split("\n", 1)[1]
    assert re.fullmatch(r"[0-9a-f]{64}", doc["source_hash"])
    assert doc["source_hash"] in (hashlib.sha256(body.encode()).hexdigest(),
                                  hashlib.sha256(body.rstrip("\n").encode()).hexdigest())
    assert doc["arch"] == "sm_90"
    assert doc["modelled"] is True               # no GPU: sm_90 and H100 limits, labelled so
    assert doc["resources"]["registers"] > 0
    assert set(doc["resources"]) == {"registers", "static_smem", "stack", "spill_stores", "spill_loads", "barriers"}
    assert doc["resources"]["spill_stores"] == doc["resources"]["spill_loads"] == 0
    assert doc["warnings"] == []
    assert doc["block"] == [16, 16, 1]
    # no GPU: the quick check ran on the CPU runner, which checked every access for races too
    assert doc["check"]["passed"] is True, doc["check"]
    assert doc["check"]["tools"] == {"cpu-runner": {"tool": "cpu-runner", "status": "passed", "findings": []}}
    assert "the CPU runner: no race in shared or global memory" in shown_text(msgs)
    assert "registers per thread" in shown_text(msgs)
    assert streams(msgs, "stderr") == []


@needs_nvrtc
def test_warning_shown_with_its_cell_line_not_on_stderr(kc):
    cell, line = naive_edited("mywarn", "    float sum = 0;\n", "    float sum = 0; int unused;\n")
    assert line == 5
    doc, msgs = ok(kc, cell)
    want = f'line {line}: warning: variable "unused" was declared but never referenced'
    assert want in doc["warnings"], doc["warnings"]
    assert want in shown_text(msgs)
    assert streams(msgs, "stderr") == []


# ---------------------------------------------------------------- cells that do not compile

@needs_nvrtc
def test_compile_error_quotes_the_cell_line_and_caret(kc):
    cell, line = naive_edited("broken", "sum += A[", "sum += undefined_thing + A[")
    assert line == 6
    err = fails(kc, cell, "CompileError", "broken does not compile (1 error, sm_90)")
    tb = err["traceback"]
    at = next(i for i, l in enumerate(tb) if l.startswith(f"line {line}: error:"))
    assert 'identifier "undefined_thing" is undefined' in tb[at]
    source, caret = tb[at + 1], tb[at + 2]
    assert "sum += undefined_thing + A[" in source
    assert caret.strip() == "^" and caret.index("^") == source.index("undefined_thing"), (source, caret)


@needs_nvrtc
def test_wrong_signature_names_the_one_matmul_runs(kc):
    body = "__global__ void twoargs(const float *A, float *C) {\n    C[0] = A[0];\n}\n"
    fails(kc, kernel_cell("twoargs", body), "CompileError",
          "%matmul runs __global__ void twoargs(const float *A, const float *B, float *C, int M, int N, int K)")


@needs_nvrtc
def test_wrong_signature_shows_none_of_our_lines(kc):
    body = "__global__ void twoargs(const float *A, float *C) {\n    C[0] = A[0];\n}\n"
    err = fails(kc, kernel_cell("twoargs", body), "CompileError")
    assert not [l for l in err["traceback"] if "static_assert" in l or "cudalab_" in l], err["traceback"]


@needs_nvrtc
def test_name_of_no_function(kc):
    fails(kc, kernel_cell("nothere", NAIVE_BODY.format(name="other")), "CompileError",
          "the cell defines no kernel named nothere")


@needs_nvrtc
def test_device_function_is_not_a_kernel(kc):
    body = NAIVE_BODY.format(name="helper").replace("__global__", "__device__")
    fails(kc, kernel_cell("helper", body), "CompileError", "helper is not a __global__ function")


@needs_nvrtc
def test_launch_bounds_kernel_found_without_name(kc):
    body = NAIVE_BODY.format(name="bounded").replace("__global__ void", "__global__ void __launch_bounds__(256)")
    doc, _ = ok(kc, "%%kernel --for matmul\n" + body)
    assert doc["name"] == "bounded"


@pytest.mark.parametrize("name, why", [
    ("tiled", "a variant of that name already (a built-in one)"),
    ("all", "a variant of that name already (`all` runs every built-in variant)"),
    ("1abc", "a kernel's name is a C identifier"),
    ("my-k", "a kernel's name is a C identifier"),
])
def test_reserved_and_invalid_names(kc, name, why):
    fails(kc, kernel_cell(name, NAIVE_BODY.format(name="k")), "UsageError", f"--name {name}", why)


def test_unknown_family_lists_the_families(kc):
    fails(kc, "%%kernel --for nope --name k\n" + NAIVE_BODY.format(name="k"), "UsageError",
          "--for nope: kernels can be written for coalesce, grid, histo, matmul, reduce, stencil, vecadd")


# ---------------------------------------------------------------- a kernel's life

@needs_nvrtc
def test_failed_recompile_forgets_the_old_version(kc):
    ok(kc, kernel_cell("mylife"))
    ok(kc, "%matmul --variant mylife --size 8 --reps 1")       # on the CPU runner
    broken = NAIVE_BODY.format(name="mylife").replace("float sum = 0;", "float sum = nope;")
    fails(kc, kernel_cell("mylife", broken), "CompileError")
    fails(kc, "%matmul --variant mylife --size 8 --reps 1", "UsageError", "unknown value 'mylife' for --variant")
    listed, _ = ok(kc, "%kernels")
    assert listed["kernels"] == []
    ok(kc, kernel_cell("mylife"))
    ok(kc, "%matmul --variant mylife --size 8 --reps 1")


@needs_nvrtc
def test_kernels_lists_them(kc):
    doc, msgs = ok(kc, "%kernels")
    assert doc == {"magic": "kernels", "kernels": []}
    assert "no kernels yet" in shown_text(msgs)
    first, _ = ok(kc, kernel_cell("myfirst"))
    tiled_body = NAIVE_BODY.format(name="mysecond").replace("int row", "const int t = TILE; int row") \
        .replace("C[row * N + col] = sum;", "C[row * N + col] = sum + 0 * t;")
    ok(kc, kernel_cell("mysecond", "#ifndef TILE\n#define TILE 16\n#endif\n" + tiled_body))
    doc, msgs = ok(kc, "%kernels")
    assert [(k["name"], k["for"], k["tiled"]) for k in doc["kernels"]] == \
        [("myfirst", "matmul", False), ("mysecond", "matmul", True)]
    assert doc["kernels"][0]["source_hash"] == first["source_hash"]
    text = shown_text(msgs)
    assert "myfirst" in text and "mysecond" in text


@needs_nvrtc
def test_completion_offers_the_kernel(kc):
    assert "mycomplete" not in complete(kc, "%matmul --variant my")
    ok(kc, kernel_cell("mycomplete"))
    assert "mycomplete" in complete(kc, "%matmul --variant my")


def test_help_kernel_shows_the_signature(kc):
    _, msgs = ok(kc, "%help kernel")
    assert SIGNATURE in shown_text(msgs)


def test_help_matmul_shows_the_signature(kc):
    _, msgs = ok(kc, "%help matmul")
    assert SIGNATURE in shown_text(msgs)


@needs_nvrtc
def test_all_does_not_include_student_kernels(kc):
    ok(kc, kernel_cell("mynotall"))
    doc, _ = ok(kc, "%matmul --variant all --size 8 --reps 1 --warmup 0")
    variants = [r["variant"] for r in doc["runs"]]
    assert "mynotall" not in variants
    assert "tiled" in variants and "naive" in variants


# ---------------------------------------------------------------- the cache of builds

@needs_nvrtc
def test_same_cell_twice_is_cached(start_kernel, tmp_path):
    cache = tmp_path / "cache"
    kc = start_kernel(env=env_for(cache))[1]
    cell = kernel_cell("mycached")
    first, _ = ok(kc, cell)
    assert first["compile"]["cached"] is False
    second, msgs = ok(kc, cell)
    assert second["compile"]["cached"] is True
    assert "(cached)" in shown_text(msgs)
    assert second["source_hash"] == first["source_hash"]
    assert second["resources"] == first["resources"]
    names = sorted(p.name for p in cache.iterdir())
    runners = [n for n in names if n.startswith("cpu-")]
    files = [n for n in names if not n.startswith("cpu-")]
    assert len(runners) == 1 and re.fullmatch(r"cpu-[0-9a-f]{40}\.o", runners[0]), names   # the audited object the CPU runner loads
    assert len(files) == 2, names               # NVRTC's cubin and its facts
    stem = files[0].rsplit(".", 1)[0]
    assert re.fullmatch(r"[0-9a-f]{64}", stem)
    assert files == [f"{stem}.cubin", f"{stem}.json"]
    assert (cache / f"{stem}.cubin").stat().st_size > 0


@needs_nvrtc
def test_cache_survives_a_new_kernel(start_kernel, tmp_path):
    cache = tmp_path / "cache"
    cell = kernel_cell("mysurvives")
    first, _ = ok(start_kernel(env=env_for(cache))[1], cell)
    assert first["compile"]["cached"] is False
    again, _ = ok(start_kernel(env=env_for(cache))[1], cell)
    assert again["compile"]["cached"] is True
    assert again["resources"] == first["resources"]
    assert again["warnings"] == first["warnings"]


# ---------------------------------------------------------------- without NVRTC

HIDE_NVRTC = r"""
/* LD_PRELOAD shim for test_kernel.py: dlopen of any libnvrtc fails, as on a machine without it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (file && strstr(file, "nvrtc"))
        return NULL;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dlopen");
    return real(file, mode);
}
"""


def test_without_nvrtc_the_cell_says_how_to_install_it(start_kernel, cache_dir, tmp_path):
    """CUDALAB_NVRTC=/nonexistent.so alone proves nothing: the loader's own path (ld.so.cache,
    /usr/local/cuda/lib64 tried by name) still finds libnvrtc. So the kernel also runs with a
    preloaded dlopen that refuses every libnvrtc, CUDA_HOME empty and no CUDA directory in
    LD_LIBRARY_PATH."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the shim that hides libnvrtc from the loader")
    shim = tmp_path / "hide_nvrtc.so"
    (tmp_path / "hide_nvrtc.c").write_text(HIDE_NVRTC)
    built = subprocess.run([cc, "-shared", "-fPIC", "-o", str(shim), str(tmp_path / "hide_nvrtc.c"), "-ldl"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"cannot build the shim that hides libnvrtc: {built.stderr.strip()}")
    lib_path = ":".join(p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p and "cuda" not in p)
    kc = start_kernel(env=env_for(cache_dir, CUDALAB_NVRTC="/nonexistent.so", CUDA_HOME="",
                                  LD_LIBRARY_PATH=lib_path, LD_PRELOAD=str(shim)))[1]
    fails(kc, kernel_cell("mynonvrtc"), "RuntimeError", "mynonvrtc cannot be compiled here",
          "NVRTC (the CUDA runtime compiler) is not installed here", "/nonexistent.so",
          "set CUDALAB_NVRTC")
    fails(kc, "%matmul --variant mynonvrtc --size 8 --reps 1", "UsageError", "unknown value 'mynonvrtc'")
    doc, _ = ok(kc, "%matmul --variant tiled --size 8 --reps 1 --warmup 0")      # the kernel carries on
    assert doc["runs"][0]["check"]["passed"] is True
