"""--check-reps on the family magics, on the CPU backend: the CPU runner checks every timed rep of a
student's kernel on its own inputs whichever is asked (tests/magics/test_redteam_reps.py shows it
catching the attacks), so each run's check says all of them were (check.reps_checked = the timed reps,
check.reps_check "all"), under --check-reps all and the default alike; a check that did not run
(--no-check) claims none; the documents stay valid against their schemas; a bad value is refused
before anything runs. The GPU side (every rep checked instead of two drawn) is
tests/gpu/test_check_reps_gpu.py."""
from __future__ import annotations

import jsonschema

from conftest import cell, compiled, load_schema
from kernels import vecadd


def test_every_rep_is_said_checked_on_the_cpu(start_kernel):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]
    c, text, _ = compiled(kc, "%%kernel --for vecadd --name mine\n" + vecadd("mine"))
    assert c["status"] == "ok", text
    for extra in ("--check-reps all", ""):
        c, text, doc = cell(kc, f"%vecadd --variant mine,builtin --size 100000 --reps 3 {extra}")
        assert c["status"] == "ok", text
        jsonschema.validate(doc, load_schema("vecadd"))
        for run in doc["runs"]:
            assert run["check"]["reps_checked"] == run["time_ms"]["reps"] > 0, run["check"]
            assert run["check"]["reps_check"] == "all"
    c, text, doc = cell(kc, "%vecadd --variant mine --size 100000 --reps 3 --no-check")
    assert c["status"] == "ok", text
    assert "reps_checked" not in doc["runs"][0]["check"]
    c, text, _ = cell(kc, "%vecadd --variant mine --check-reps some")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "drawn" in c["evalue"], c
