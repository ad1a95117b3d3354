"""ranking.py — how the board ranks: a submission's score against the reference ladder of its own
run, ties by overlapping intervals, the physical bound below which a time is impossible, and the
document of a board as an instructor or a student sees it (the API's GET api/boards/PROBLEM).

    score_sizes(sizes) -> Score              # the runner, once per ranked submission
    geomean_interval(medians, rels)          # a reference's one figure over the sizes
    physical_bound_ms(work, peak_per_s)      # the least time the device could take
    impossible_finding(...) -> str | None    # "impossible: …" when a time is below it
    rank_entries(entries) -> [entry + rank, tied]
    board_document(problem, title, data, viewer, instructor) -> the API's document

Pure functions on plain data (no database, no clock): the store keeps the rows, the runner measures.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import NamedTuple, Optional

# Intervals wider than this (relative half-width) count as this wide when deciding ties: a kernel
# that makes its own time noisy widens its interval but cannot stretch it into a tie with the
# leader. Honest runs under --reps auto are well inside it.
TIE_MAX_CI95_REL = 0.05
NEIGHBOURS = 2                 # entries a student sees on each side of their own
BOUNDS = ("flops", "bytes")    # a problem's "bound": what its physical bound divides by


class Score(NamedTuple):
    """A submission over the problem's hidden sizes."""
    median_ms: float      # geometric mean over the sizes of its median times
    ci95_rel: float       # relative half-width of that mean's 95% interval
    score: float          # geometric mean of median ÷ the fastest reference's median (lower wins)
    score_lo: float       # the score's 95% interval
    score_hi: float


def _geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def geomean_interval(medians, rels) -> tuple:
    """(geometric mean of medians, relative half-width of its interval): if each median i lies
    within ±rels[i] of itself, their geometric mean lies within [gm·Π(1-r)^(1/n), gm·Π(1+r)^(1/n)];
    the wider (upper) side is returned."""
    medians, rels = list(medians), list(rels)
    if not medians or len(medians) != len(rels):
        raise ValueError("one median and one ci95_rel per size, at least one size")
    if not all(_positive(m) for m in medians):
        raise ValueError(f"median times must be positive and finite: {medians}")
    if not all(isinstance(r, (int, float)) and 0 <= r < 1 for r in rels):
        raise ValueError(f"ci95_rel must be in [0, 1): {rels}")
    return _geomean(medians), _geomean(1 + r for r in rels) - 1


def score_sizes(sizes: list) -> Score:
    """sizes: one {"median_ms", "ci95_rel", "reference_ms"} per hidden size, reference_ms being
    the fastest reference's median at that size in the same run (so the GPU's clock and load of
    the run cancel out)."""
    medians = [s["median_ms"] for s in sizes]
    rels = [s["ci95_rel"] for s in sizes]
    references = [s["reference_ms"] for s in sizes]
    if not all(_positive(r) for r in references):
        raise ValueError(f"reference times must be positive and finite: {references}")
    median, rel = geomean_interval(medians, rels)
    score = _geomean(m / r for m, r in zip(medians, references))
    lo = score * _geomean(1 - r for r in rels)
    hi = score * _geomean(1 + r for r in rels)
    return Score(median, rel, score, lo, hi)


def physical_bound_ms(work: float, peak_per_s: float) -> float:
    """The least time in ms to do work (FLOPs or bytes) at the device's peak (FLOP/s or B/s)."""
    if not _positive(work) or not _positive(peak_per_s):
        raise ValueError(f"work {work} and peak {peak_per_s} must be positive")
    return work / peak_per_s * 1e3


def _si(x: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def impossible_finding(time_ms: float, *, work: float, peak_per_s: float, bound: str,
                       size: str) -> Optional[str]:
    """The finding when time_ms (a run's fastest or median time at one size) is below the physical
    bound of that size's work, else None. A zero, negative or non-finite time is impossible too."""
    if bound not in BOUNDS:
        raise ValueError(f"bound {bound!r}: one of {BOUNDS}")
    least = physical_bound_ms(work, peak_per_s)
    if _positive(time_ms) and time_ms >= least:
        return None
    what = (f"{_si(work, 'FLOP')} at the device's peak of {_si(peak_per_s, 'FLOP/s')}"
            if bound == "flops" else
            f"{_si(work, 'B')} at the device's peak bandwidth of {_si(peak_per_s, 'B/s')}")
    return (f"impossible: {time_ms:.4g} ms at {size} is below the physical bound of "
            f"{least:.4g} ms ({what})")


def rank_entries(entries: list) -> list:
    """Entries (dicts with score, score_lo, score_hi and submitted_at, id) sorted best first, each
    with "rank" and "tied" added. An entry shares the rank of the current group's best when its
    interval overlaps that best's (each clipped to TIE_MAX_CI95_REL around its score); ranks skip
    past ties (1, 1, 3)."""
    def clipped(e):
        return (max(e["score_lo"], e["score"] * (1 - TIE_MAX_CI95_REL)),
                min(e["score_hi"], e["score"] * (1 + TIE_MAX_CI95_REL)))

    ordered = sorted(entries, key=lambda e: (e["score"], e.get("submitted_at") or 0, e.get("id") or 0))
    ranked, groups = [], []
    for i, e in enumerate(ordered):
        if groups and clipped(e)[0] <= clipped(ordered[groups[-1][0]])[1]:
            groups[-1].append(i)
        else:
            groups.append([i])
    for group in groups:
        for i in group:
            ranked.append(dict(ordered[i], rank=group[0] + 1, tied=len(group) > 1))
    return ranked


def best_per_user(ranked_rows: list) -> list:
    """Each user's best ranked submission (lowest score, the earlier on equal scores)."""
    best: dict = {}
    for row in ranked_rows:
        key = (row["score"], row.get("submitted_at") or 0, row.get("id") or 0)
        held = best.get(row["user"])
        if held is None or key < (held["score"], held.get("submitted_at") or 0, held.get("id") or 0):
            best[row["user"]] = row
    return list(best.values())


def iso_time(epoch: Optional[float]) -> Optional[str]:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _shown_user(user: str, viewer: str, instructor: bool, aliases: dict) -> str:
    if instructor:
        return user
    return "you" if user == viewer else f"student {aliases.get(user, '?')}"


def board_document(problem: str, title: str, data, viewer: str, instructor: bool) -> dict:
    """GET api/boards/PROBLEM for viewer. data: the store's BoardData. Instructors see every
    student's best entry and every listed failure, with names; a student sees their own entry and
    NEIGHBOURS each side, others as "student K", and only their own failures."""
    ranked = rank_entries(best_per_user(data.ranked))
    if not instructor:
        mine = [i for i, e in enumerate(ranked) if e["user"] == viewer]
        ranked = (ranked[max(0, mine[0] - NEIGHBOURS): mine[0] + NEIGHBOURS + 1] if mine else [])
    entries = [{"rank": e["rank"], "tied": e["tied"],
                "user": _shown_user(e["user"], viewer, instructor, data.aliases),
                "you": e["user"] == viewer, "name": e["name"], "median_ms": e["median_ms"],
                "ci95_rel": e["ci95_rel"], "score": e["score"],
                "submitted_at": iso_time(e["submitted_at"])} for e in ranked]
    failed = [{"user": _shown_user(f["user"], viewer, instructor, data.aliases), "name": f["name"],
               "finding": f["finding"], "line": f["line"]}
              for f in data.failed if instructor or f["user"] == viewer]
    run = data.run or {}
    return {"problem": problem, "title": title, "gpu": run.get("gpu"),
            "clock_mhz": run.get("clock_mhz"), "run_at": iso_time(run.get("run_at")),
            "backend": run.get("backend"),
            "references": [{"variant": r["variant"], "median_ms": r["median_ms"],
                            "ci95_rel": r.get("ci95_rel")} for r in data.references],
            "entries": entries, "failed": failed, "queue": data.queue}
