"""--check-reps all on a GPU (the class board's runs): every timed rep's result is checked on its own
inputs, not two drawn at random (cuda/common.h, cl_cuda_reps; docs/security.md layer 6).

A matmul that is wrong on one timed rep only (the fifth of ten: honest on the warm-up, the quick check,
the other reps and the last launch) escapes the default draw of two reps eight runs in ten; under
--check-reps all it fails every run with the CheckError naming that rep. An honest kernel passes under
both, and each run's check says how many reps were checked (check.reps_checked: 10 under all, 2
drawn) and how (check.reps_check). Skipped without a GPU (the gpu_doc fixture), failing loudly under
CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

from student_session import cell, kc  # noqa: F401  (kc: the fixture)
from test_redteam_reps_gpu import HONEST, REP_ERROR, REPS, RUN, WARMUP, matmul_attack

ODD_REP = 5                                   # the timed rep (1-based) the attack gets wrong
ONE_REP = matmul_attack("onerep", f"""
        C[row * N + col] = launch == {WARMUP + ODD_REP} ? 0.0f : dot(A, B, N, K, row, col);""")
RUN_LINE = f"%matmul --size {RUN} --variant {{}} --reps {REPS} --warmup {WARMUP}"


def test_every_rep_checked_catches_the_one_wrong_rep(kc):  # noqa: F811
    c, text, _ = cell(kc, ONE_REP)
    assert c["status"] == "ok", text
    for _ in range(3):
        c, _, _ = cell(kc, RUN_LINE.format("onerep") + " --check-reps all", timeout=300)
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
