"""problems.py — the course's board problems (a JSON file kept off the students' image), read and checked
once when the service starts, and the magic command lines the runner times a submission with.

A problem (the key is its name, for example "ps2.matmul"):

    {"family": "matmul", "title": "...", "sizes": ["--m 1000 --n 1100 --k 900", ...], "seeds": [7, 11],
     "flags": "", "references": ["naive", "tiled", "fast", "cublas"], "bound": "flops" | "bytes",
     "rate_limit_s": 60, "exercise": "matmul"}

`sizes` are the hidden sizes (argument strings of the family's magic: the size flags only), `seeds` the
hidden seeds; every size runs under every seed. `flags` are further arguments of the magic the problem
fixes for everyone (`--dim 2 --filter gauss5`, `--stride 1,32`). `bound` names the work a run's time is
held against: "flops" (the run's GFLOP/s × its time, against the device's FP32 peak) or "bytes" (its
GB/s × its time, against the device's memory bandwidth); a problem whose family reports neither has no
bound and says so. Written by hand by an instructor, so every mistake is refused at load with the
problem's name and the field, never later when a student's submission meets it.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

# The families a student's kernel can be written for (`%%kernel --for FAMILY`), and each one's magic's
# metric that measures work done per second: what the physical bound multiplies by a time.
FAMILY_RATES = {"matmul": ("flops",), "histo": ("bytes",), "reduce": ("bytes",), "stencil": ("bytes",),
                "coalesce": ("bytes",), "vecadd": ("bytes",)}
# A run's keys in the result document for each kind of work, the first present taken: GFLOP/s, or GB/s
# (%vecadd's kernel alone is kernel_gbs; its gbs-less row also times the copies).
RATE_KEYS = {"flops": ("gflops",), "bytes": ("gbs", "kernel_gbs")}
# Flags the runner sets itself: a problem that set them would change what is timed and checked.
RUNNER_FLAGS = ("--variant", "--seed", "--reps", "--warmup", "--check", "--no-check", "--check-reps",
                "--backend", "--force")
# The flags of a %%kernel cell a submission may carry (its launch shape, its -D values, code generation);
# never --for/--name/--dim (the problem's) nor --check/--cpu-check (the board always checks).
SUBMISSION_FLAGS = ("--block", "--grid", "--smem", "--define", "--maxrregcount", "--opt-level", "--fast-math")
# Flags of the problem's magic that a %%kernel cell needs too (a 2-D stencil's kernel is declared 2-D).
KERNEL_CELL_FLAGS = ("--dim",)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEFAULT_RATE_LIMIT_S = 60


class ProblemError(ValueError):
    """A problems file that cannot be used: names the problem and the field."""


@dataclass(frozen=True)
class Problem:
    name: str
    family: str
    title: str
    sizes: tuple[str, ...]
    seeds: tuple[int, ...]
    flags: str
    references: tuple[str, ...]
    bound: str | None
    rate_limit_s: int
    exercise: str

    @property
    def magic(self) -> str:
        """The magic a %%kernel --for FAMILY cell's kernel runs under (stencil's --dim 2 is a flag)."""
        return self.family

    def timed_runs(self) -> list[tuple[str, int]]:
        """(size arguments, seed) for every timed run of a submission, sizes first."""
        return [(size, seed) for size in self.sizes for seed in self.seeds]

    def command(self, size: str, seed: int, variants: list[str], timing_flags: str) -> str:
        """The magic's line for one timed run: the hidden size and seed, the problem's flags, the variants
        (the references and the submission's kernel) and the runner's timing flags."""
        parts = [f"%{self.magic}", size, self.flags, f"--variant {','.join(variants)}", f"--seed {seed}",
                 timing_flags]
        return " ".join(p for p in parts if p)

    def kernel_cell_flags(self) -> str:
        """The problem's flags the %%kernel cell takes as well (`--dim 2`)."""
        words, out = shlex.split(self.flags), []
        for i, w in enumerate(words):
            if w in KERNEL_CELL_FLAGS and i + 1 < len(words):
                out += [w, words[i + 1]]
        return " ".join(out)

    def as_json(self) -> dict:
        return {"family": self.family, "title": self.title, "references": list(self.references),
                "bound": self.bound, "rate_limit_s": self.rate_limit_s, "exercise": self.exercise}


def _fail(name: str, field: str, why: str) -> ProblemError:
    return ProblemError(f"problem {name!r}: {field}: {why}")


def _flag_words(name: str, field: str, text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise _fail(name, field, f"cannot split {text!r}: {e}") from None
    for w in words:
        if any(w == f or w.startswith(f + "=") for f in RUNNER_FLAGS):
            raise _fail(name, field, f"{w} is the runner's to set")
        if w.startswith("%") or "\n" in w:
            raise _fail(name, field, f"{w!r} is not an argument of the magic")
    return words


def problem_from_json(name: str, spec: dict) -> Problem:
    if not NAME.match(name):
        raise _fail(name, "name", "letters, digits, '.', '_' and '-' only, at most 64")
    if not isinstance(spec, dict):
        raise _fail(name, "problem", "must be an object")
    family = spec.get("family")
    if family not in FAMILY_RATES:
        raise _fail(name, "family", f"{family!r} is not one of {', '.join(sorted(FAMILY_RATES))}")
    sizes = spec.get("sizes")
    if not isinstance(sizes, list) or not sizes or not all(isinstance(s, str) and s.strip() for s in sizes):
        raise _fail(name, "sizes", "a non-empty list of the magic's size arguments")
    for s in sizes:
        _flag_words(name, "sizes", s)
    seeds = spec.get("seeds", [1])
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
        raise _fail(name, "seeds", "a non-empty list of non-negative integers")
    flags = spec.get("flags", "")
    if not isinstance(flags, str):
        raise _fail(name, "flags", "a string of the magic's arguments")
    _flag_words(name, "flags", flags)
    refs = spec.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) and NAME.match(r) for r in refs):
        raise _fail(name, "references", "a list of the family's built-in variant names")
    bound = spec.get("bound")
    if bound is not None and bound not in FAMILY_RATES[family]:
        raise _fail(name, "bound", f"{bound!r}: %{family} reports {' or '.join(FAMILY_RATES[family])}")
    rate = spec.get("rate_limit_s", DEFAULT_RATE_LIMIT_S)
    if not isinstance(rate, int) or isinstance(rate, bool) or rate < 0:
        raise _fail(name, "rate_limit_s", "a non-negative whole number of seconds")
    title = spec.get("title", name)
    exercise = spec.get("exercise", family)
    if not isinstance(title, str) or not isinstance(exercise, str) or not NAME.match(exercise):
        raise _fail(name, "title/exercise", "strings (the exercise a name as the problem's)")
    return Problem(name=name, family=family, title=title, sizes=tuple(s.strip() for s in sizes),
                   seeds=tuple(seeds), flags=flags.strip(), references=tuple(refs), bound=bound,
                   rate_limit_s=rate, exercise=exercise)


def load_problems(path: str | Path) -> dict[str, Problem]:
    """Every problem of a problems file, by name; ProblemError names the first thing wrong."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ProblemError(f"{path}: {e}") from None
    if not isinstance(data, dict) or not data:
        raise ProblemError(f"{path}: an object of problems by name")
    return {name: problem_from_json(name, spec) for name, spec in data.items()}


def submission_flags(text: str) -> str:
    """A submission's %%kernel flags, checked: only SUBMISSION_FLAGS with plain values; ValueError says why.
    Returned re-joined, one space apart, for the cell's first line."""
    if not isinstance(text, str) or len(text) > 512:
        raise ValueError("flags: a string of at most 512 characters")
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"flags: {e}") from None
    for w in words:
        if w.startswith("-"):
            if w.split("=", 1)[0] not in SUBMISSION_FLAGS:
                raise ValueError(f"flags: {w} is not one a submission may set ({', '.join(SUBMISSION_FLAGS)})")
        elif not re.fullmatch(r"[A-Za-z0-9_.,=xX+-]{1,64}", w):
            raise ValueError(f"flags: {w!r} is not a plain value")
    return " ".join(words)
