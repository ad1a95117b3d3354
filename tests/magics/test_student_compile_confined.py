"""A %%kernel cell's reach through the compilers, on the CPU runner (issue 31): an #include of a host file
in any spelling (absolute, relative, /dev, /proc, computed, #include_next, a digraph, a continuation,
__has_include) is a CompileError naming the line and the allowed headers before any compiler runs, and
nothing of the file comes back; inline asm (plain, __asm__, made by a macro, file-scope .incbin) is refused
on the CPU path, which cannot run PTX; compile bombs (a macro and a template) end within seconds of a small
$CUDALAB_COMPILE_TIMEOUT with a clear error; and no g++ or cc1plus outlives a bomb, an interrupt, a kernel
shutdown or a killed kernel. After each, the next cell works. kernel/student/source_check.c, confine.c and
host_tool.c do this; tests/unit/test_source_check.c covers the scanner's spellings one by one."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from conftest import cell, compiled, execute, get_reply, outputs, request

GOOD = """%%kernel --for vecadd --name good
__global__ void good(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
"""

BODY = """__global__ void {name}(const float *A, const float *B, float *C, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}}
"""

COMPILERS = {"g++", "c++", "cc1plus", "as", "ld", "collect2", "cc1"}


def kernel_cell(name: str, before: str) -> str:
    return f"%%kernel --for vecadd --name {name}\n{before}" + BODY.format(name=name)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """This module's cache of builds: the correct kernel compiles once."""
    return tmp_path_factory.mktemp("confined-cache")


@pytest.fixture
def scratch(tmp_path) -> Path:
    """The kernel's $TMPDIR: the compiler's private directories are made there, so its processes are
    told from other builds on this machine by their working directory."""
    d = tmp_path / "tmp"
    d.mkdir()
    return d


def start(start_kernel, cache_dir: Path, scratch: Path, **env: str):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_CACHE_DIR": str(cache_dir),
                             "TMPDIR": str(scratch), **env})


def compilers_in(scratch: Path) -> list[psutil.Process]:
    """The compiler processes working under scratch (ours: the confined tool's directory is there)."""
    found = []
    for p in psutil.process_iter(["name", "cwd", "cmdline"]):
        try:
            name = p.info["name"] or ""
            where = (p.info["cwd"] or "") + " " + " ".join(p.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if name in COMPILERS and str(scratch) in where:
            found.append(p)
    return found


def assert_no_compiler_left(scratch: Path, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while (left := compilers_in(scratch)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, [(p.pid, p.name(), p.cmdline()[:4]) for p in left]


def wait_for_compiler(scratch: Path, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while not compilers_in(scratch):
        assert time.monotonic() < deadline, "no compiler started"
        time.sleep(0.05)


def next_cell_works(kc) -> None:
    c, _, doc = compiled(kc, GOOD)
    assert c["status"] == "ok", c
    assert doc["check"]["passed"] is True, doc["check"]


def everything_said(c: dict, msgs: list[dict]) -> str:
    texts = [c.get("evalue", ""), *c.get("traceback", [])]
    for m in outputs(msgs):
        content = m["content"]
        texts += [content.get("text", ""), content.get("evalue", ""), *content.get("traceback", []),
                  str(content.get("data", ""))]
    return "\n".join(texts)


# (form, the lines before the kernel, the line refused, words of the reason, whether it names the allowed headers)
HOST_FILES = [
    ("absolute", '#include "/etc/shadow"\n', 2, "/etc/shadow", True),
    ("angled", "#include </etc/passwd>\n", 2, "/etc/passwd", True),
    ("relative", '#include "../x"\n', 2, "../x", True),
    ("dev", '#include "/dev/zero"\n', 2, "/dev/zero", True),
    ("proc", '#include "/proc/self/environ"\n', 2, "/proc/self/environ", True),
    ("hidden from NVRTC", '#ifdef CUDALAB_CPU_RUNNER\n#include "/etc/passwd"\n#endif\n', 3, "/etc/passwd", True),
    ("computed", '#define SECRET "/etc/passwd"\n#include SECRET\n', 3, "not a macro", True),
    ("include_next", "#include_next </etc/passwd>\n", 2, "#include_next", True),
    ("digraph", '%:include "/etc/passwd"\n', 2, "/etc/passwd", True),
    ("continuation", '#inc\\\nlude "/etc/passwd"\n', 2, "/etc/passwd", True),
    ("comment across lines", '# /* a\n */ include "/etc/passwd"\n', 2, "/etc/passwd", True),
    ("__has_include", '#if __has_include("/etc/passwd")\n#endif\n', 2, "__has_include", False),
    ("pragma dependency", '#pragma GCC dependency "/etc/passwd"\n', 2, "dependency", False),
]


@pytest.mark.parametrize("form, before, line, words, names_allowed", HOST_FILES, ids=[h[0] for h in HOST_FILES])
def test_includes_of_host_files_are_refused_before_any_compiler(start_kernel, cache_dir, scratch, form, before,
                                                                line, words, names_allowed):
    kernel = start(start_kernel, cache_dir, scratch)
    kc = kernel[1]
    reply, msgs = execute(kc, kernel_cell("leak", before), timeout=120)
    c = reply["content"]
    said = everything_said(c, msgs)
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert f"line {line}:" in c["evalue"] and words in c["evalue"], c["evalue"]
    if names_allowed:
        assert "<cuda_runtime.h>" in c["evalue"] and "<cuda_fp16.h>" in c["evalue"], c["evalue"]
    assert "root:" not in said and "PATH=" not in said, said
    assert "root:" not in kernel.log.text()
    next_cell_works(kc)


# (form, lines before the kernel, lines at the top of its body, the line of the asm). NVRTC accepts asm
# with PTX; __asm__ it does not know, so that one is behind the CPU runner's macro, as an attack would be.
ASM = [
    ("plain", "", '    asm volatile("membar.gl;");\n', 4),
    ("__asm__", "", '#ifdef CUDALAB_CPU_RUNNER\n    __asm__ __volatile__("mfence");\n#endif\n', 5),
    ("made by a macro", "#define FENCE() a##sm volatile(\"membar.gl;\")\n#define GO FENCE\n", "    GO();\n", 6),
    ("file-scope .incbin",
     '#ifdef CUDALAB_CPU_RUNNER\n#define HIDE(x) __as##m__(x)\nHIDE(".incbin \\"/etc/shadow\\"");\n#endif\n', "", 4),
]


@pytest.mark.parametrize("form, before, inside, line", ASM, ids=[a[0] for a in ASM])
def test_inline_asm_is_refused_on_the_cpu_runner(start_kernel, cache_dir, scratch, form, before, inside, line):
    _, kc = start(start_kernel, cache_dir, scratch)
    code = kernel_cell("asmk", before).replace("    if (i < n)", inside + "    if (i < n)")
    reply, msgs = execute(kc, code, timeout=120)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    lines = "\n".join(c["traceback"])
    assert f"line {line}: inline" in lines and "PTX or SASS" in lines and "--backend cuda" in lines, lines
    assert "root:" not in everything_said(c, msgs)
    next_cell_works(kc)


MACRO_BOMB = "#ifdef CUDALAB_CPU_RUNNER\n#define X0 \"x\"\n" + "".join(
    f"#define X{i} X{i - 1} X{i - 1}\n" for i in range(1, 31)) + "const char *bomb = X30;\n#endif\n"
TEMPLATE_BOMB = """#ifdef CUDALAB_CPU_RUNNER
template <int A, int B> struct P { static const long v = P<A - 1, B>::v + P<A, B - 1>::v; };
template <int B> struct P<0, B> { static const long v = 1; };
template <int A> struct P<A, 0> { static const long v = 1; };
long bomb = P<440, 440>::v;
#endif
"""


@pytest.mark.parametrize("bomb", [MACRO_BOMB, TEMPLATE_BOMB], ids=["macro", "template"])
def test_compile_bombs_end_within_seconds_and_leave_no_compiler(start_kernel, cache_dir, scratch, bomb):
    _, kc = start(start_kernel, cache_dir, scratch, CUDALAB_COMPILE_TIMEOUT="2")
    t0 = time.monotonic()
    reply, msgs = execute(kc, kernel_cell("bomb", bomb), timeout=120)
    took = time.monotonic() - t0
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    lines = "\n".join(c["traceback"])
    assert ("ran past its limit of 2 s (CUDALAB_COMPILE_TIMEOUT)" in lines or "memory limit" in lines or
            "CPU time" in lines), lines
    assert took < 30, took
    assert_no_compiler_left(scratch)
    next_cell_works(kc)


def test_interrupt_during_a_long_compile_leaves_no_compiler(start_kernel, cache_dir, scratch):
    _, kc = start(start_kernel, cache_dir, scratch)
    msg_id = kc.execute(kernel_cell("slow", TEMPLATE_BOMB))
    wait_for_compiler(scratch)
    request(kc, "interrupt_request", {}, channel="control")
    reply = get_reply(kc, msg_id, timeout=30)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt", reply
    assert_no_compiler_left(scratch)
    next_cell_works(kc)


@pytest.mark.parametrize("how", ["shutdown", "SIGKILL"])
def test_kernel_ending_during_a_long_compile_leaves_no_compiler(start_kernel, cache_dir, scratch, how):
    km, kc = start(start_kernel, cache_dir, scratch)
    kc.execute(kernel_cell("slow", TEMPLATE_BOMB))
    wait_for_compiler(scratch)
    proc = km.provisioner.process
    if how == "shutdown":
        kc.control_channel.send(kc.session.msg("shutdown_request", {"restart": False}))
        assert proc.wait(10) == 0
    else:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert_no_compiler_left(scratch)


def test_allowed_headers_compile_and_a_gpu_only_one_says_so(start_kernel, cache_dir, scratch):
    _, kc = start(start_kernel, cache_dir, scratch)
    # the prelude stands for the CUDA runtime's headers: they are empty on the CPU runner
    headers = "#include <cuda_runtime.h>\n%:include <device_launch_parameters.h>\n"
    c, _, doc = compiled(kc, kernel_cell("withhdr", headers))
    assert c["status"] == "ok" and doc["check"]["passed"] is True, c
    c, _, _ = compiled(kc, kernel_cell("usesfp16", "#include <cuda_fp16.h>\n"))
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert "<cuda_fp16.h>: half precision (__half) has no CPU runner counterpart: run this kernel on a GPU " \
           "(--backend cuda)" in c["traceback"], c
    next_cell_works(kc)
