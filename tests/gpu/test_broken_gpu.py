"""Variants broken on purpose on a GPU (kernel/student/broken.c; the CPU side is
tests/magics/test_broken.py): the lost update loses counts on skewed input, and the result says how
many; the missing barrier either gives a wrong result or hides, and then racecheck's findings stand in
for it; the off-by-one write past C is caught by the guard after C at an odd size and has no thread at a
multiple of the block. None of them fails its cell, and the next cell works."""
from __future__ import annotations

import jsonschema

from conftest import load_schema
from student_session import cell
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)


def ok(kc, code: str, timeout: float = 300) -> tuple[str, dict]:
    c, text, doc = cell(kc, code, timeout=timeout)
    assert c["status"] == "ok", text
    return text, doc


def test_lost_update_loses_counts(gpu_doc, kernel):
    _, kc = kernel
    text, doc = ok(kc, "%histo --size 16777216 --dist skewed --variant privatized,lost_update --reps 2")
    jsonschema.validate(doc, load_schema("histo"))
    ours, broken = doc["runs"]
    assert ours["check"]["passed"] is True and ours["check"]["counted_total"] == ours["check"]["expected_total"]
    assert broken["expected"] == "wrong" and broken["outcome"] == "wrong" and broken["backend"] == "cuda"
    lost = broken["check"]["expected_total"] - broken["check"]["counted_total"]
    assert lost > 0, broken["check"]          # 90% of the bytes in one bin: every warp collides
    assert "counts lost" in text and "Its result is wrong, as expected" in text and "wrong (expected)" in text
    _, doc = ok(kc, "%histo --size 4096 --variant fast --reps 1")
    assert doc["runs"][0]["check"]["passed"] is True


def test_missing_sync_is_wrong_or_found_by_racecheck(gpu_doc, kernel):
    _, kc = kernel
    text, doc = ok(kc, "%matmul --size 1024 --variant missing_sync --reps 3", timeout=600)
    jsonschema.validate(doc, load_schema("matmul"))
    (run,) = doc["runs"]
    assert run["expected"] == "wrong" and run["outcome"] in ("wrong", "right"), run
    if run["outcome"] == "right":
        # the warps did not drift apart in this run: racecheck sees the race anyway
        found = run["check"]["tools"]["racecheck"]
        assert found["tool"] == "racecheck" and found["status"] in ("failed", "unavailable"), found
        if found["status"] == "failed":
            assert "hazard" in " ".join(found["findings"]).lower(), found
            assert "racecheck (compute-sanitizer) finds it" in text


def test_off_by_one_caught_by_the_guard_or_hidden(gpu_doc, kernel):
    _, kc = kernel
    text, doc = ok(kc, "%vecadd --size 1000003,1048576 --variant off_by_one --reps 1")
    jsonschema.validate(doc, load_schema("vecadd"))
    odd, even = doc["runs"]
    assert odd["outcome"] == "wrong" and odd["check"]["out_of_bounds"] == 1000003, odd
    assert "C[1000003] was written, past the end of C" in text
    assert even["outcome"] == "right" and even["check"]["passed"] is True
