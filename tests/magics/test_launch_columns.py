"""--launch on every timed family and %reduce --steps, through a kernel (jupyter_client) on the CPU
backend: the launch columns appear only under the flag; each run's launch.occupancy is what
%occupancy computes for the same block, registers and shared memory (with the driver's reserve per
block), valid against tests/schemas/launch_occupancy.schema.json inside each family's schema;
library calls and host code show no numbers and say why, and the CPU analogues' unknown registers
are said to be unknown, not 0. --steps gives the block's tree of the lecture's kernels step by step,
exactly as counted by hand for the slides' block of 256."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import cell, load_schema

CPU = {"CUDALAB_BACKEND": "cpu"}
HEADERS = ("regs/thread", "smem/block B", "warps/SM", "theor. occupancy %", "limited by")
CELLS = {
    "matmul": "%matmul --size 64 --variant naive,tiled,cublas,cpu --tile 8 --reps 1 --warmup 0",
    "histo": "%histo --size 4096 --variant cpu,privatized,fast,cub --reps 1 --warmup 0",
    "reduce": "%reduce --size 4096 --variant cpu,divergent,fast,cub --reps 1 --warmup 0",
    "stencil": "%stencil --size 64 --dim 2 --variant naive,tiled --reps 1 --warmup 0",
    "coalesce": "%coalesce --size 4096 --stride 1,4 --reps 1 --warmup 0",
    "vecadd": "%vecadd --size 4096 --block 128 --reps 1 --warmup 0",
}
# Neither a kernel of ours nor one whose launch the run reports: the host loops and the libraries.
NO_LAUNCH = {"cpu": "none shown: host code, no kernel launch",
             "cub": "none shown: a library call picks its own kernels and launches",
             "cublas": "none shown: a library call picks its own kernels and launches"}
# The shared memory the driver keeps per block on sm_8x/sm_9x; the CPU device model is an sm_90.
RESERVED = 1024


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def ok(kc, code: str) -> tuple[str, dict]:
    reply, text, doc = cell(kc, code)
    assert reply["status"] == "ok", reply
    return text, doc


def table_header(text: str) -> str:
    """The runs table's header line (the one that starts with "variant" or "traversal")."""
    return next(line for line in text.splitlines() if line.split()[:1] in (["variant"], ["traversal"]))


@pytest.mark.parametrize("magic", sorted(CELLS))
def test_columns_only_with_the_flag(kc, magic):
    schema = load_schema(magic)
    text, doc = ok(kc, CELLS[magic])
    assert not any(h in table_header(text) for h in HEADERS)
    assert all("occupancy" not in run["launch"] for run in doc["runs"])
    assert doc["params"]["launch"] is False

    text, doc = ok(kc, CELLS[magic] + " --launch")
    jsonschema.validate(doc, schema)
    header = table_header(text)
    assert all(h in header for h in HEADERS), header
    assert header.count(" block ") + header.endswith(" block") <= 1 and header.count(" grid ") <= 1, header
    for run in doc["runs"]:
        occ = run["launch"]["occupancy"]
        jsonschema.validate(occ, load_schema("launch_occupancy"))
        if run["variant"] in NO_LAUNCH:
            assert occ["pct"] is None and occ["note"] == NO_LAUNCH[run["variant"]], run
        else:
            # the CPU analogues are not compiled for a GPU: registers unknown, never a fake 0
            assert occ["pct"] > 0 and occ["regs_counted"] is False and "registers per thread not known" in occ["note"]
    assert "registers per thread not known" in text


def occupancy_of(kc, threads: int, regs: int, smem: int) -> dict:
    _, doc = ok(kc, f"%occupancy --threads {threads} --regs {regs} --smem {smem} --smem-reserved {RESERVED}")
    return doc["runs"][0]


def test_occupancy_is_what_the_occupancy_magic_computes(kc):
    """Every run's launch.occupancy against %occupancy on the same numbers, in the same kernel; histo's
    fast variant (32 KiB of shared memory per block) is the one that shared memory limits."""
    launches = []
    for code in ("%histo --size 4096 --variant privatized,warp,fast --block 256,512 --reps 1 --warmup 0 --launch",
                 "%matmul --size 64 --variant tiled --tile 8,16,32 --reps 1 --warmup 0 --launch",
                 "%reduce --size 4096 --variant convergent,fast --block 64,1024 --reps 1 --warmup 0 --launch"):
        _, doc = ok(kc, code)
        launches += [run["launch"] for run in doc["runs"]]
    limiters = set()
    for launch in launches:
        threads = launch["block"][0] * launch["block"][1] * launch["block"][2]
        want = occupancy_of(kc, threads, launch["regs_per_thread"], launch["smem_per_block"])
        got = launch["occupancy"]
        assert (got["pct"], got["warps_per_sm"], got["blocks_per_sm"], got["limiter"]) == \
            (want["occupancy_pct"], want["warps_per_sm"], want["blocks_per_sm"], want["limiter"]), launch
        assert got["max_warps_per_sm"] == want["device_model"]["max_threads_sm"] // 32
        limiters.add(got["limiter"])
    assert limiters == {"threads per SM", "shared memory per SM"}
    fast = [l for l in launches if l["smem_per_block"] == 32768 and l["block"][0] == 256]
    assert fast and fast[0]["occupancy"]["warps_per_sm"] == 48 and fast[0]["occupancy"]["pct"] == 75


def test_library_and_host_rows_say_why(kc):
    text, doc = ok(kc, "%reduce --size 4096 --variant cpu,convergent,cub --reps 1 --warmup 0 --launch")
    rows = {line.split()[0]: line for line in text.splitlines() if line.split()[:1] in (["cpu"], ["convergent"], ["cub"])}
    # no launch numbers for the host loop and the library: every launch cell (grid, regs, smem, warps,
    # occupancy, limiter; the block is the family's own column) is empty ("-")
    for name in ("cpu", "cub"):
        assert rows[name].split()[-6:] == ["-"] * 6, rows[name]
    assert rows["convergent"].split()[-10:] == ["8", "-", "1024", "64", "of", "64", "100", "threads", "per", "SM"]
    assert "occupancy for cpu: none shown: host code, no kernel launch" in text
    assert "occupancy for cub: none shown: a library call picks its own kernels and launches" in text
    assert "occupancy for convergent: registers per thread not known" in text
    occ = {run["variant"]: run["launch"]["occupancy"] for run in doc["runs"]}
    assert occ["cpu"]["warps_per_sm"] is None and occ["cub"]["limiter"] is None
    assert occ["convergent"]["warps_per_sm"] == 64 and occ["convergent"]["limiter"] == "threads per SM"


DIVERGENT_256 = [  # stride, active threads, active warps, full, divergent, idle warps, wasted lanes
    (1, 128, 8, 0, 8, 0, 128), (2, 64, 8, 0, 8, 0, 192), (4, 32, 8, 0, 8, 0, 224), (8, 16, 8, 0, 8, 0, 240),
    (16, 8, 8, 0, 8, 0, 248), (32, 4, 4, 0, 4, 4, 124), (64, 2, 2, 0, 2, 6, 62), (128, 1, 1, 0, 1, 7, 31)]
CONVERGENT_256 = [
    (128, 128, 4, 4, 0, 4, 0), (64, 64, 2, 2, 0, 6, 0), (32, 32, 1, 1, 0, 7, 0), (16, 16, 1, 0, 1, 7, 16),
    (8, 8, 1, 0, 1, 7, 24), (4, 4, 1, 0, 1, 7, 28), (2, 2, 1, 0, 1, 7, 30), (1, 1, 1, 0, 1, 7, 31)]
STEP_KEYS = ("stride", "active_threads", "active_warps", "full_warps", "divergent_warps", "idle_warps", "wasted_lanes")


def test_reduce_steps_for_a_block_of_256(kc):
    text, doc = ok(kc, "%reduce --size 512 --variant divergent,convergent,fast --steps")
    jsonschema.validate(doc, load_schema("reduce"))
    steps = {run["variant"]: run.get("steps") for run in doc["runs"]}
    assert [tuple(s[k] for k in STEP_KEYS) for s in steps["divergent"]] == DIVERGENT_256
    assert [tuple(s[k] for k in STEP_KEYS) for s in steps["convergent"]] == CONVERGENT_256
    assert [s["step"] for s in steps["convergent"]] == list(range(1, 9))
    assert steps["fast"] is None
    assert "divergent, block 256 (8 warps), step by step: if (t % (2*stride) == 0)" in text
    assert "convergent, block 256 (8 warps), step by step: if (t < stride)" in text
    assert "no steps for fast: only divergent, convergent, multiblock reduce a block" in text
    # the table as the slides draw it: convergent's stride 16, one warp left, 16 of its lanes idle
    assert any(line.split() == ["4", "16", "16", "1", "0", "1", "7", "16"] for line in text.splitlines())


def test_reduce_steps_once_per_variant_and_block(kc):
    text, doc = ok(kc, "%reduce --size 512,4096 --variant convergent --block 32,1024 --steps --reps 1 --warmup 0")
    assert [len(run["steps"]) for run in doc["runs"]] == [5, 10, 5, 10]
    assert text.count("convergent, block 32 (1 warp), step by step") == 1
    assert text.count("convergent, block 1024 (32 warps), step by step") == 1


def test_no_steps_without_the_flag(kc):
    text, doc = ok(kc, "%reduce --size 512 --variant divergent,convergent")
    assert all("steps" not in run for run in doc["runs"]) and "step by step" not in text
    assert doc["params"]["steps"] is False


def test_help_names_both_flags(kc):
    text, _ = ok(kc, "%help reduce")
    assert "--launch" in text and "theory" in text and "--steps" in text and "idle lanes" in text
