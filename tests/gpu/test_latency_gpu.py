"""%latency and %hiding on a CUDA device: the chases order the hierarchy as the lecture does
(registers, then shared memory and L1, then L2, then DRAM), cycles and nanoseconds agree on a
plausible SM clock, a working-set sweep climbs from L1 to DRAM, and the streaming read holds
exactly the asked warps per SM, sums what it read correctly and gains bandwidth from warps and
from loads in flight. Standard library and pytest only (gpu_cli)."""
from __future__ import annotations

from gpu_cli import gpu, magic_doc  # noqa: F401  (gpu is the fixture)


def test_the_hierarchy_in_the_lectures_order(gpu):
    doc = magic_doc("latency", "%latency")
    assert doc["backend"] == "cuda"
    c = {r["level"]: r["cycles"]["median"] for r in doc["runs"]}
    assert c["register"] < 10 < c["shared"] < c["l2"] < c["dram"], c
    assert c["l1"] < c["l2"] / 2 and c["local"] < c["l2"] / 2 and c["constant"] < c["l2"], c
    for r in doc["runs"]:
        ghz = r["cycles"]["median"] / r["ns"]["median"]
        assert 0.5 < ghz < 3.5, (r["level"], ghz)


def test_a_working_set_sweep_climbs_from_l1_to_dram(gpu):
    doc = magic_doc("latency", "%latency --level l1 --working-set 16K,4M,1G")
    c = [r["cycles"]["median"] for r in doc["runs"]]
    assert c[0] * 2 < c[1] and c[1] * 1.3 < c[2], c
    assert doc["sweep"]["chart"] == "line"


def test_hiding_holds_the_asked_warps_and_gains_from_them(gpu):
    doc = magic_doc("hiding", "%hiding --warps 1,8,64 --ilp 1,4")
    sms = doc["device"]["sms"]
    runs = {(r["warps_per_sm"], r["ilp"]): r for r in doc["runs"]}
    for (w, _), r in runs.items():
        assert r["check"]["passed"], r["check"]
        bps = r["blocks_per_sm"]
        assert r["launch"]["grid"][0] == bps * sms and r["launch"]["block"][0] * bps == 32 * w
    assert runs[(64, 1)]["blocks_per_sm"] == 2
    gbs = {k: r["gbs"] for k, r in runs.items()}
    assert gbs[(8, 1)] > 3 * gbs[(1, 1)] and gbs[(64, 1)] > gbs[(8, 1)], gbs
    assert gbs[(8, 4)] > 1.5 * gbs[(8, 1)], gbs     # four loads in flight per thread hide what warps would
    assert doc["model"]["warps_needed"] == 13
    for law in doc["littles_law"]:
        assert 100 < law["dram_ns"] < 2000 and law["warps_needed"] > 0
