"""Variants broken on purpose, for the debugging lecture (kernel/student/broken.c), on the CPU backend
through a real client: %matmul's missing_sync, %histo's lost_update and %vecadd's off_by_one run as
students' kernels do (the CPU runner here), are left out of `all`, and their bug is the cell's answer,
not its error: the CPU runner stops them at the bug (a stopped run, the finding in a note), or at a
size where the bug has no thread to show in, the result comes out right and the note says the bug hid.
The next cell works; --show-source shows the bug, --as-kernel gives the student a copy to fix, and the
fixed copy passes. On a GPU, where a wrong result or racecheck's findings stand in for the runner's:
tests/gpu/test_broken_gpu.py. Needs NVRTC and g++ (the CPU runner): without NVRTC the tests skip."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import cell, compiled, load_schema

CPU = {"CUDALAB_BACKEND": "cpu"}


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def ran(kc, code: str) -> tuple[dict, str, dict]:
    """A cell that names a broken variant: skipped where there is no NVRTC (it compiles like a student's)."""
    c, text, doc = compiled(kc, code)
    assert c["status"] == "ok", c
    return c, text, doc


def test_lost_update_is_stopped_at_the_race_and_the_cell_succeeds(kc):
    c, text, doc = ran(kc, "%histo --size 100003 --dist skewed --variant privatized,lost_update --reps 1")
    jsonschema.validate(doc, load_schema("histo"))
    ours, broken = doc["runs"]
    assert ours["check"]["passed"] is True and "expected" not in ours
    assert ours["check"]["counted_total"] == ours["check"]["expected_total"] > 0
    assert broken["variant"] == "lost_update" and broken["source"] == "broken on purpose"
    assert broken["expected"] == "wrong" and broken["outcome"] == "stopped" and broken["time_ms"] is None
    assert broken["size"] == 100003 and broken["dist"] == "skewed"        # the table's columns, from the point
    assert "data race on shared memory" in broken["check"]["error"]
    assert "lost_update failed on the CPU runner" in broken["check"]["error"]
    assert "your kernel" not in broken["check"]["error"]
    assert {"time_ms", "check", "bins"} <= set(broken["nondeterministic"])
    assert "lost_update is broken on purpose" in text and "It was stopped, as expected" in text
    assert "stopped (expected)" in text
    # the next cell works
    c, text, doc = cell(kc, "%histo --size 4096 --variant privatized --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True


def test_missing_sync_and_off_by_one_stopped_by_the_cpu_runner(kc):
    _, text, doc = ran(kc, "%matmul --m 67 --n 33 --k 129 --variant tiled,missing_sync --reps 1")
    jsonschema.validate(doc, load_schema("matmul"))
    tiled, broken = doc["runs"]
    assert tiled["check"]["passed"] is True
    assert broken["outcome"] == "stopped" and "data race on shared memory" in broken["check"]["error"]
    assert "missing_sync is broken on purpose" in text

    _, text, doc = ran(kc, "%vecadd --size 1000003 --variant off_by_one --reps 1")
    jsonschema.validate(doc, load_schema("vecadd"))
    (run,) = doc["runs"]
    assert run["outcome"] == "stopped" and run["size"] == 1000003
    assert "out-of-bounds access" in run["check"]["error"] and "A[1000003]" in run["check"]["error"]


def test_off_by_one_hides_where_no_thread_reaches_n(kc):
    """n a multiple of the block: no thread has i == n, so the bug has nowhere to show."""
    _, text, doc = ran(kc, "%vecadd --size 1048576 --variant off_by_one --reps 1")
    jsonschema.validate(doc, load_schema("vecadd"))
    (run,) = doc["runs"]
    assert run["check"]["passed"] is True and run["outcome"] == "right" and run["expected"] == "wrong"
    assert run["source"] == "broken on purpose" and "racecheck" not in run["check"].get("tools", {})       # no racecheck on the CPU runner
    assert "Its result came out right this time: the bug did not show in this run" in text
    assert "ok (bug hid)" in text


def test_all_leaves_them_out_and_help_marks_them(kc):
    c, _, doc = cell(kc, "%vecadd --size 4096 --variant all --reps 1")
    assert c["status"] == "ok"
    assert "off_by_one" not in {r["variant"] for r in doc["runs"]}
    c, text, _ = cell(kc, "%help histo")
    assert c["status"] == "ok"
    assert "lost_update" in text and "[broken on purpose: a wrong result is expected]" in text
    assert "all runs every one but those broken on purpose" in text


def test_their_names_are_taken(kc):
    c, text, _ = cell(kc, "%%kernel --for histo --name lost_update\n__global__ void lost_update(const unsigned char "
                          "*data, long long n, unsigned int *histo) {}\n")
    assert c["status"] == "error" and c["ename"] == "UsageError"
    assert "has a variant of that name already (one broken on purpose)" in c["evalue"]


def test_show_source_then_fix_it(kc):
    c, text, doc = cell(kc, "%histo --show-source lost_update --as-kernel")
    assert c["status"] == "ok"
    assert doc["file"] == "kernel/student/broken.c" and "// BUG: not atomic" in doc["source"]
    exercise = doc["kernel_cell"]
    assert exercise.startswith("%%kernel --for histo --name lost_update_fixed\n")
    assert "BUG" not in exercise and "__global__ void lost_update_fixed(" in exercise
    assert "bins[(c - 'a') / 4]++;\n" in exercise
    fixed = exercise.replace("bins[(c - 'a') / 4]++;", "atomicAdd(&bins[(c - 'a') / 4], 1u);")
    c, text, _ = compiled(kc, fixed)
    assert c["status"] == "ok", text
    c, text, doc = cell(kc, "%histo --size 100003 --dist skewed --variant lost_update_fixed --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True
    assert doc["runs"][0]["source"] == "student"
