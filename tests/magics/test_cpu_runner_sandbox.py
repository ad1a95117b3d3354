"""The CPU runner's containment, as a user sees it (docs/security.md): a run's document lists the
sandbox layers its launch ran under, and every layer this machine permits is on (namespaces are
probed here the way the runner makes them); the harness, not the child, owns the clock; the object
audit refuses what would run outside a launch, in the student's words; nothing is left behind.
Needs NVRTC (the gate) and g++ (the runner's compiler): without NVRTC the tests skip."""
from __future__ import annotations

import ctypes
import os

import psutil
import pytest

from conftest import cell, compiled
from kernels import VECADD_BODY, vecadd

CPU = {"CUDALAB_BACKEND": "cpu"}

# what every launch has, wherever it runs
ALWAYS = ["audited-object", "no-descriptors", "empty-environment", "seccomp", "no-new-privileges", "limits"]
CLONE = {"user-namespace": 0x10000000, "network-namespace": 0x40000000, "ipc-namespace": 0x08000000,
         "mount-namespace": 0x00020000}


def permitted(flag: int) -> bool:
    """Whether a process of this user may unshare the namespace flag (probed in a child)."""
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(0 if libc.unshare(flag) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def kernel(name: str, body: str = VECADD_BODY, head: str = "") -> str:
    return f"%%kernel --for vecadd --name {name}\n" + vecadd(name, body, head)


def test_every_permitted_layer_is_on(kc):
    c, text, _ = compiled(kc, kernel("layered"))
    assert c["status"] == "ok", text
    c, text, doc = cell(kc, "%vecadd --size 4096 --variant layered --reps 2")
    assert c["status"] == "ok", text
    layers = doc["runs"][0]["runner"]["sandbox"]
    for name in ALWAYS:
        assert name in layers, (name, layers)
    for name, flag in CLONE.items():
        if permitted(flag):
            assert name in layers, (name, layers)
    if permitted(CLONE["mount-namespace"]) and os.geteuid() == 0:
        assert "empty-root" in layers, layers


@pytest.mark.serial    # a spin's measured time bounded below: run alone (conftest.py)
def test_the_time_is_the_harness_s(kc):
    # a kernel that spins for about 200 ms in one thread: its reported time says so, whatever
    # clock it reads or forges (the child writes no figure the harness reads)
    spin = ("if (i == 0) { long long t0 = clock64(); while (clock64() - t0 < 200000000LL) {} }\n"
            "    if (i < n) C[i] = A[i] + B[i];")
    c, text, _ = compiled(kc, kernel("spinner", spin))
    assert c["status"] == "ok", text
    c, text, doc = cell(kc, "%vecadd --size 4096 --variant spinner --reps 2")
    assert c["status"] == "ok", text
    t = doc["runs"][0]["kernel_ms"]
    assert 190 <= t["min"] <= 5000, t


@pytest.mark.parametrize("head, what", [
    ("#ifdef CUDALAB_CPU_RUNNER\n__attribute__((constructor)) void early(void) { printf(\"x\"); }\n#endif\n",
     "a constructor"),
    ("#ifdef CUDALAB_CPU_RUNNER\n__attribute__((destructor)) void late(void) { printf(\"x\"); }\n#endif\n",
     "a destructor"),
    ("#ifdef CUDALAB_CPU_RUNNER\nextern \"C\" int system(const char *);\n"
     "__device__ int call() { return system(\"true\"); }\n#endif\n", "system"),
    ("#ifdef CUDALAB_CPU_RUNNER\nextern \"C\" int clock_gettime(int, void *) { return 0; }\n#endif\n",
     "clock_gettime"),
])
def test_the_audit_refuses_code_outside_a_launch(kc, head, what):
    c, text, _ = compiled(kc, kernel("audited", head=head))
    assert c["status"] == "error" and c["ename"] == "CompileError", text
    assert "cannot run on the CPU runner" in c["evalue"] and what in c["evalue"], c["evalue"]
    c, text, _ = compiled(kc, kernel("fine"))
    assert c["status"] == "ok", text


@pytest.mark.serial    # it looks for any runner on the machine, and another test's may be running: run alone
def test_nothing_outlives_a_launch(kc):
    c, text, _ = compiled(kc, kernel("plain"))
    assert c["status"] == "ok", text
    c, text, _ = cell(kc, "%vecadd --size 100000 --variant plain --reps 3")
    assert c["status"] == "ok", text
    runners = [p for p in psutil.process_iter(["name", "cmdline"])
               if "cudalab-runner" in " ".join(p.info["cmdline"] or [])]
    assert not runners, [(p.pid, p.info["cmdline"]) for p in runners]
