"""--check-reps all on a GPU (the class board's runs): every timed rep's result is checked on its own
inputs, not two drawn at random (cuda/common.h, cl_cuda_reps; docs/security.md layer 6).

A matmul that is wrong on one timed rep only (the fifth of ten: honest on the warm-up, the quick check,
the other reps and the last launch) escapes the default draw of two reps eight runs in ten; under
--check-reps all it fails every run with the CheckError naming that rep. An honest kernel passes under
both, and each run's check says how many reps the backend's harness checked (check.reps_checked: 10
under all, 2 drawn; the reference itself, cuBLAS, all of them) and how (check.reps_check). A size whose
copies for --check-reps all cannot fit on the device is refused before it runs. Skipped without a GPU (the gpu_doc fixture), failing loudly under
CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

from student_session import cell, kc  # noqa: F401  (kc: the fixture)
from test_gpu import gpu_doc  # noqa: F401  (the fixture kc needs: skip or fail without a GPU)
from test_redteam_reps_gpu import HONEST, REP_ERROR, REPS, RUN, WARMUP, matmul_attack

ODD_REP = 5                                   # the timed rep (1-based) the attack gets wrong


def one_rep(name: str) -> str:
    """The attack as kernel NAME: its launch count (in __device__ memory) starts at 0 with its module."""
    return matmul_attack(name, f"""
        C[row * N + col] = launch == {WARMUP + ODD_REP} ? 0.0f : dot(A, B, N, K, row, col);""")
RUN_LINE = f"%matmul --size {RUN} --variant {{}} --reps {REPS} --warmup {WARMUP}"


def test_every_rep_checked_catches_the_one_wrong_rep(kc):  # noqa: F811
    for i in range(3):          # each time a kernel of its own, so that its launches are counted from 1
        c, text, _ = cell(kc, one_rep(f"onerep{i}"))
        assert c["status"] == "ok", text
        c, _, _ = cell(kc, RUN_LINE.format(f"onerep{i}") + " --check-reps all", timeout=300)
        assert c["status"] == "error" and c["ename"] == "CheckError", c
        m = REP_ERROR.search(c["evalue"])
        assert m and int(m.group(1)) == ODD_REP, c["evalue"]
    c, _, doc = cell(kc, "%matmul --size 64 --variant naive --reps 2")     # the next cell works
    assert c["status"] == "ok", c


def test_the_document_says_how_many_reps_were_checked(kc):  # noqa: F811
    c, text, _ = cell(kc, HONEST)
    assert c["status"] == "ok", text
    for how, checked in (("all", REPS), ("drawn", 2)):
        c, _, doc = cell(kc, RUN_LINE.format("honest") + f" --check-reps {how}", timeout=300)
        assert c["status"] == "ok", c
        run = doc["runs"][0]
        assert run["check"]["passed"] is True
        assert run["check"]["reps_checked"] == checked and run["check"]["reps_check"] == how, run["check"]


def test_built_in_variants_say_what_the_harness_checked(kc):  # noqa: F811
    """The numbers come from the backend: a built-in that is checked (tiled) keeps two drawn reps, the
    reference itself (cublas) has nothing to be checked against and counts every rep."""
    c, _, doc = cell(kc, f"%matmul --size {RUN} --variant tiled,cublas --reps {REPS} --warmup {WARMUP}",
                     timeout=300)
    assert c["status"] == "ok", c
    checks = {r["variant"]: r["check"] for r in doc["runs"]}
    assert (checks["tiled"]["reps_checked"], checks["tiled"]["reps_check"]) == (2, "drawn"), checks
    assert (checks["cublas"]["reps_checked"], checks["cublas"]["reps_check"]) == (REPS, "all"), checks


def test_check_reps_all_copies_that_cannot_fit_are_refused_up_front(kc):  # noqa: F811
    """8192² floats kept once per rep of --reps 1000 (256 GiB) fit no GPU: a MemoryError naming the
    copies before anything runs; drawn (two copies) the same size is not refused for memory."""
    c, _, doc = cell(kc, "%matmul --size 8192 --variant tiled --reps 1000 --check-reps all --no-check", timeout=300)
    assert c["status"] == "error" and c["ename"] == "MemoryError", c
    assert "1000 copies of C kept" in c["evalue"] and doc is None, c["evalue"]
    c, _, _ = cell(kc, "%matmul --size 8192 --variant tiled --reps 2 --warmup 0 --no-check", timeout=300)
    assert c["status"] == "ok", c
