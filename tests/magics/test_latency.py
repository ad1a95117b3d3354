"""%latency and %hiding on the CPU backend: the lecture's memory table with every row measured by a
pointer chase through the host's own levels (each row saying which served it), the staircase of a
working-set sweep, the lecture's reckoning of the warps that hide a latency (G80: 13) with its
flags, the measured curve of loads in flight against bandwidth with Little's law below it, and a
clear error for each bad flag, after which the next cell works. The GPU side is
tests/gpu/test_latency_gpu.py."""
from __future__ import annotations

import pytest

from conftest import load_schema, magic_doc, run_cell

LATENCY = load_schema("latency")
HIDING = load_schema("hiding")
LEVELS = ["register", "shared", "local", "constant", "l1", "l2", "dram"]


def by_level(doc):
    return {r["level"]: r for r in doc["runs"]}


def test_the_table_has_every_memory_of_the_lecture_in_order():
    doc = magic_doc("latency", "%latency", LATENCY)
    assert [r["level"] for r in doc["runs"]] == LEVELS
    rows = by_level(doc)
    assert (rows["shared"]["scope"], rows["shared"]["lifetime"]) == ("block", "kernel")
    assert (rows["constant"]["scope"], rows["constant"]["lifetime"]) == ("grid", "application")
    assert (rows["local"]["scope"], rows["register"]["scope"]) == ("thread", "thread")
    assert rows["register"]["working_set"] is None and rows["register"]["slots"] == 0
    assert rows["l1"]["working_set"] == 16384 and rows["l1"]["slots"] == 16384 // 64
    assert "standing in for shared memory" in rows["shared"]["served_by"]
    assert rows["dram"]["served_by"].startswith("host DRAM") or "unknown" in rows["dram"]["served_by"]
    # a dependent load from DRAM takes far longer than one from L1, on any host
    assert rows["dram"]["ns"]["median"] > 5 * rows["l1"]["ns"]["median"]
    assert all(r["steps"] == 8192 and r["cycles"]["reps"] == 5 for r in doc["runs"])


def test_a_working_set_sweep_draws_the_staircase():
    doc = magic_doc("latency", "%latency --working-set 4K,64K,1M,64M", LATENCY)
    assert doc["params"]["level"] == "l1" and doc["sweep"]["varying"] == ["working_set"]
    assert doc["sweep"]["chart"] == "line"
    ns = [r["ns"]["median"] for r in doc["runs"]]
    assert [r["working_set"] for r in doc["runs"]] == [4096, 65536, 1 << 20, 64 << 20]
    assert ns[-1] > 5 * ns[0], ns


def test_assert_reads_the_rows_and_the_text_shows_the_table():
    rc, _, out, err = run_cell("%latency --level shared,dram\n"
                               "%assert latency[level=dram].cycles.median > latency[level=shared].cycles.median",
                               json_mode=False)
    assert rc == 0 and err == "", out
    assert "declaration" in out and "__shared__ int s[N];" in out and "served by" in out


@pytest.mark.parametrize("cell, words", [
    ("%latency --level register --working-set 4K", "the register row has none to choose"),
    ("%latency --level local --working-set 4K", "the local row has none to choose"),
    ("%latency --level constant --working-set 64K", "the constant chase's array holds 32768 bytes"),
    ("%latency --level l2 --working-set 128", "needs at least 256 bytes"),
    ("%latency --level l4", "--level"),
    ("%latency --working-set 1T", "--working-set"),
    ("%hiding --warps 65", "an SM of this device holds at most 64 warps"),
    ("%hiding --ilp 3", "1, 2, 4 or 8"),
    ("%hiding --ilp 16", "--ilp"),
    ("%hiding --latency 0", "--latency"),
])
def test_a_bad_flag_is_a_clear_error_and_the_next_cell_works(cell, words):
    rc, _, out, err = run_cell(cell + "\n", json_mode=False)
    assert rc != 0 and words in out + err, out + err
    rc, _, out, err = run_cell("%latency --level shared --reps 1", json_mode=False)
    assert rc == 0 and err == ""


@pytest.mark.serial    # a measured latency sweep within the 60 s limit: run alone
def test_hiding_reckons_the_lectures_13_warps_and_measures_the_curve():
    doc = magic_doc("hiding", "%hiding", HIDING)
    assert doc["model"] == {"latency_cycles": 200, "independent": 4, "issue_cycles": 4, "warps_needed": 13}
    warps = [r["warps_per_sm"] for r in doc["runs"]]
    assert warps == [1, 2, 4, 8, 16, 32, 64]           # up to what the CPU model's SM holds
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert [r["loads_in_flight_per_sm"] for r in doc["runs"]] == [32 * w for w in warps]
    gbs = [r["gbs"] for r in doc["runs"]]
    assert max(gbs) > 2 * gbs[0], gbs                  # more loads in flight hide the latency
    little, = doc["littles_law"]
    assert little["ilp"] == 1 and little["best_gbs"] == pytest.approx(max(gbs))
    assert little["bytes_in_flight_per_sm"] == pytest.approx(little["best_gbs"] * little["dram_ns"])
    assert little["warps_needed"] == pytest.approx(little["bytes_in_flight_per_sm"] / 64)
    assert min(w for w, g in zip(warps, gbs) if g >= 0.9 * max(gbs)) == little["measured_warps"]
    assert doc["sweep"]["chart"] == "line"


@pytest.mark.serial    # a measured latency sweep within the 60 s limit: run alone
def test_hiding_takes_the_lectures_numbers_and_loads_per_thread():
    doc = magic_doc("hiding", "%hiding --warps 2,8 --ilp 1,4 --latency 400 --independent 2 --issue 4", HIDING)
    assert doc["model"]["warps_needed"] == 50
    assert [(r["warps_per_sm"], r["ilp"]) for r in doc["runs"]] == [(2, 1), (2, 4), (8, 1), (8, 4)]
    assert [r["loads_in_flight_per_sm"] for r in doc["runs"]] == [64, 256, 256, 1024]
    assert sorted(x["ilp"] for x in doc["littles_law"]) == [1, 4]
    rc, _, out, err = run_cell("%hiding --warps 1,4\n%assert hiding.model.warps_needed == 13", json_mode=False)
    assert rc == 0 and err == "", out
    assert "ceil(200 / 16) = 13" in out and "Little's law" in out
