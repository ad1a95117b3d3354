"""The host-work limit, one estimate for every family, through the command line on the CPU backend:
a cell whose estimate is over CUDALAB_HOST_WORK_LIMIT (30 s by default) is refused before anything
runs, with the estimate, the limit and the way out; --force runs it; cells under the limit run as
before; a magic that only computes (%occupancy, %grid without --run) has no host work to refuse.

The over-limit cells are chosen to stay over 30 s on any host the tests run on: their work is on
one thread (the host loops, the copies, the counters' zeroing) or many times the limit on every core
the estimate could assume (64). The forced cells run under a limit of a microsecond, so any work at
all is over it, and are small enough to run in a moment."""
from __future__ import annotations

import pytest

from conftest import run_cell

TINY_LIMIT = {"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": "1e-6"}

# magic: (a cell far over the default limit, how its refusal begins: the point it names)
OVER = {
    "matmul": ("%matmul --size 2048 --variant cpu", "%matmul --size 2048: about "),
    "histo": ("%histo --size 2^30 --variant cpu --reps 1000", "%histo --size 2^30: about "),
    "reduce": ("%reduce --size 2^28 --variant cpu --reps 1000", "%reduce --size 2^28 --variant cpu: about "),
    "stencil": ("%stencil --size 2^26 --radius 64 --reps 1000", "%stencil --size 2^26 --variant "),
    "vecadd": ("%vecadd --size 2^26 --reps 1000", "%vecadd --size 2^26: about "),
    "coalesce": ("%coalesce --size 2^27 --stride 1024 --reps 1000", "%coalesce --size 2^27: about "),
    "grid": ("%grid --data 16384x16384 --run --reps 1000", "%grid --data 16384x16384: about "),
}

# magic: a small cell (quick when forced; some host work, so over a limit of a microsecond)
SMALL = {
    "matmul": "%matmul --size 64 --variant tiled --reps 1 --warmup 0",
    "histo": "%histo --size 2^16 --variant fast --reps 1 --warmup 0",
    "reduce": "%reduce --size 2^16 --variant fast --reps 1 --warmup 0",
    "stencil": "%stencil --size 2^16 --variant tiled --reps 1 --warmup 0",
    "vecadd": "%vecadd --size 2^16 --reps 1 --warmup 0",
    "coalesce": "%coalesce --size 2^16 --stride 1,2 --reps 1 --warmup 0",
    "grid": "%grid --data 256x256 --run --reps 1 --warmup 0",
}


def refused(cell: str, env: dict[str, str] | None = None) -> str:
    """The refusal's evalue (the first line of stderr; the next ones echo the cell)."""
    rc, _, out, err = run_cell(cell, env=env)
    assert rc == 1 and out == "", (rc, out, err)      # refused before any point ran
    assert err.startswith("UsageError: "), err
    return err.splitlines()[0][len("UsageError: "):]


@pytest.mark.parametrize("magic", sorted(OVER))
def test_over_the_default_limit_is_refused(magic):
    cell, point = OVER[magic]
    err = refused(cell)
    assert err.startswith(point) and "of host work, estimated from this host's CPU backend" in err, err
    assert "the limit is 30 s (CUDALAB_HOST_WORK_LIMIT)" in err and err.endswith("or --force"), err


@pytest.mark.parametrize("magic", sorted(SMALL))
def test_force_runs_over_the_limit(magic):
    cell = SMALL[magic]
    err = refused(cell, env=TINY_LIMIT)
    assert err.startswith(f"%{magic} ") and "the limit is 1e-06 s (CUDALAB_HOST_WORK_LIMIT)" in err, err
    rc, docs, _, err = run_cell(cell + " --force", env=TINY_LIMIT)
    assert rc == 0 and err == "", err
    assert [d for d in docs if d.get("magic") == magic][0]["params"]["force"] is True


@pytest.mark.parametrize("magic", sorted(SMALL))
def test_under_the_limit_unchanged(magic):
    rc, docs, _, err = run_cell(SMALL[magic])
    assert rc == 0 and err == "", err
    doc = [d for d in docs if d.get("magic") == magic][0]
    assert doc["params"]["force"] is False
    runs = doc["runs"] if "runs" in doc else [doc["run"]]
    assert runs and all(r["check"]["passed"] for r in runs), runs


def test_a_sweep_is_limited_in_all():
    # each point about 21 s and 14 s on one thread; together over 30 s
    err = refused("%reduce --size 2^26 --dtype float,int --variant cpu --reps 400")
    assert err.startswith("%reduce --size 2^26 --dtype float --variant cpu: about"), err
    assert "the sweep's 2 points: about" in err and "in all; the limit is 30 s" in err, err
    assert "use fewer points, a smaller --size" in err, err


def test_all_leaves_the_host_loop_out():
    # --variant all brings in the host loop only where it is within the limit: over it, the loop is
    # left out (not what the refusal names); the analogues, asked for by `all` too, are refused
    err = refused("%matmul --size 64 --variant all --reps 1 --warmup 0", env=TINY_LIMIT)
    assert err.startswith("%matmul --size 64 --variant ") and "--variant cpu" not in err, err


@pytest.mark.parametrize("cell", ["%occupancy --threads 32,64,128 --regs 32,64",
                                  "%grid --data 46340x46340 --block 16x16", "%device --brief"])
def test_no_host_work_nothing_to_refuse(cell):
    rc, _, _, err = run_cell(cell, env=TINY_LIMIT)
    assert rc == 0 and err == "", err


def test_too_many_points_named_before_anything_runs():
    threads = ",".join(str(t) for t in range(1, 1001))
    regs = ",".join(str(r) for r in range(100))
    rc, _, out, err = run_cell(f"%occupancy --threads {threads} --regs {regs}")
    assert rc == 1 and out == "", err
    assert "this sweep has 100000 points (1000 × 100: --threads, --regs); the limit is 10000" in err, err


def test_limit_environment_variable_must_be_a_positive_number():
    # an unreadable limit is the default, not "no limit"
    for bad in ("", "abc", "-5", "0", "inf"):
        err = refused(OVER["matmul"][0], env={"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": bad})
        assert "the limit is 30 s" in err, err
