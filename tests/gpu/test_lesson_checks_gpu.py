"""On a GPU: the lesson checks of students' kernels (check.lesson.<name>) read the same as on the CPU
backend (tests/magics/test_lesson_checks.py, the same kernels from tests/lesson_kernels.py): they are
the CPU runner's figures at the quick check's size whatever the backend, while the runs' times and
checks stay the GPU's. --no-cpu-check leaves them (and the CPU runner's run) out."""
from __future__ import annotations

import pytest

import lesson_kernels as K
from student_session import cell, gpu_doc, kc  # noqa: F401  (gpu_doc, kc: fixtures)

PAIRS = [
    (K.matmul_tiled, K.matmul_naive, "global_loads_per_fma"),
    (K.matmul_tiled, K.matmul_decoy, "shared_bytes_used"),
    (K.matmul_tiled, K.matmul_uncoalesced, "load_sectors_per_request"),
    (K.histo_private, K.histo_global, "global_atomics_per_byte"),
    (K.reduce_convergent, K.reduce_divergent, "divergent_steps"),
    (K.stencil_tiled, K.stencil_naive, "global_loads_per_output"),
    (K.stencil_tiled_2d, K.stencil_naive_2d, "global_loads_per_output"),
    (K.copy_coalesced, K.copy_strided, "load_sectors_per_request"),
]


def lesson_of(kc, kernel_cell: str) -> dict:
    c, text, doc = cell(kc, kernel_cell, timeout=300)
    assert c["status"] == "ok", (c, text)
    assert doc["check"]["passed"] is True and doc["check"]["tools"]["cpu-runner"]["status"] == "passed", doc["check"]
    return doc["check"]["lesson"]


@pytest.mark.parametrize("good, bad, name", PAIRS, ids=[f"{g.__name__}-{b.__name__}" for g, b, _ in PAIRS])
def test_lesson_passes_for_the_lesson_and_fails_against_it(kc, good, bad, name):
    assert lesson_of(kc, good())[name]["passed"]
    failed = lesson_of(kc, bad())[name]
    assert not failed["passed"] and failed["why"], failed


def test_family_runs_carry_the_lesson_and_keep_the_gpu_times(kc):
    lesson_of(kc, K.matmul_tiled())
    c, text, doc = cell(kc, "%matmul --size 512 --variant tiled,mytiled --reps 5")
    assert c["status"] == "ok", (c, text)
    mine = next(r for r in doc["runs"] if r["variant"] == "mytiled")
    assert doc["backend"] == "cuda" and mine["time_ms"]["median"] > 0
    assert mine["check"]["lesson"]["global_loads_per_fma"]["passed"]
    assert "lesson" not in next(r for r in doc["runs"] if r["variant"] == "tiled")["check"]


def test_hardware_counters_join_the_lesson(kc):
    """With --counters where profiling is allowed, the GPU's own figure stands beside the CPU runner's:
    the uncoalesced B load's sectors per request over the whole launch, the check still the runner's."""
    lesson_of(kc, K.matmul_uncoalesced())
    c, text, doc = cell(kc, "%matmul --size 512 --variant mycolumns --reps 3 --counters")
    assert c["status"] == "ok", (c, text)
    run = doc["runs"][0]
    if not run["counters"]["measured"]:
        pytest.skip(f"no hardware counters here: {run['counters']['unavailable']}")
    sectors = run["check"]["lesson"]["load_sectors_per_request"]
    assert sectors["passed"] is False and sectors["gpu"]["global_load_sectors_per_request"] > 4, sectors
    c, text, doc = cell(kc, "%matmul --size 512 --variant mycolumns --reps 3")
    assert "gpu" not in doc["runs"][0]["check"]["lesson"]["load_sectors_per_request"]


def test_no_cpu_check_runs_the_gpu_alone(kc):
    c, text, doc = cell(kc, K.histo_racy().replace("--name myracy", "--name myracy --no-cpu-check"), timeout=300)
    assert "lesson" not in (doc or {}).get("check", {}), doc
    assert "cpu-runner" not in (doc or {}).get("check", {}).get("tools", {}), doc
