"""psets.py — the kernel-writing problem sets of the sample nbgrader course (ps2, ps3) as the tests see
them: each one's kernel cells, graded parts and points, and the score and the error every sample
submission must get on a GPU and without one.

test_autograde_psets.py grades the samples against these tables, test_malicious_submission.py grades
its forger beside them, and grade_samples.py (`make grade`) prints every score against them; the
README of notebooks/assignments shows the same tables to people. To update an expected score after a
run on another GPU, change the sample's row below (EXPECTED_GPU: what it loses, part by part); the
CPU table follows from it (the GPU-only parts score 0 there).

The tables assume the lesson checks of issue 33 (`check.lesson.<name>` on every run of a student
kernel, measured by the CPU runner on both backends) and bug parity on a GPU (the CPU runner's
findings fail a GPU run of a student kernel as they fail a CPU one): a sample whose bug a GPU run
alone does not show (frank's uninitialised tile, bob's missing barrier in ps3) expects the CPU's 0
on a GPU too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import nbformat

GPU_FIRST_LINE = "%assert device.backend == 'cuda'   # a GPU-only part: without a GPU it scores 0"

# The errors a failing test cell may show on a GPU, where a bug can surface in more than one way: a
# wrong element, a fault, or the CPU runner's finding (bug parity).
WRONG_ON_GPU = ("CheckError", "KernelError")
FAULT_ON_GPU = ("CheckError", "CudaError", "KernelError")


@dataclass
class Pset:
    """One problem set: `kernel_cells` maps each solution cell's grade_id to (family, kernel name);
    `max_points` lists every test cell with its points, in notebook order; `lesson` names the parts
    graded by a lesson check (they fail with AssertionError on a right run that misses the lesson);
    `samples` maps each student to the parts that student loses on a GPU and the error each of those
    cells shows there and without a GPU ((cpu error, gpu error); a tuple: any of them)."""
    assignment: str
    notebook: str
    kernel_cells: dict[str, tuple[str, str]]
    max_points: dict[str, float]
    gpu_only: tuple[str, ...]
    lesson: tuple[str, ...]
    samples: dict[str, dict[str, tuple[object, object]]] = field(default_factory=dict)
    # the samples that copy a built-in kernel, disguised: student -> {kernel cell: the built-in variant}.
    # They score normally; the similarity report (issue 33, item 4) must name the variant beside the grade.
    copies: dict[str, dict[str, str]] = field(default_factory=dict)

    def parts(self, question: str) -> list[str]:
        """The test cells of one question ("q1")."""
        return [cell for cell in self.max_points if cell.startswith(question + "-")]

    def family_parts(self, family: str) -> list[str]:
        q = next(cell.split("-")[0] for cell, (f, _) in self.kernel_cells.items() if f == family)
        return self.parts(q)

    def expected_gpu(self) -> dict[str, dict[str, float]]:
        return {student: {cell: 0.0 if cell in lost else points for cell, points in self.max_points.items()}
                for student, lost in self.samples.items()}

    def expected_cpu(self) -> dict[str, dict[str, float]]:
        """The GPU scores, with every GPU-only part 0: the kernels run on the CPU runner, which scores
        every other part as a GPU does, bug for bug."""
        return {student: dict(scores, **{c: 0.0 for c in self.gpu_only})
                for student, scores in self.expected_gpu().items()}

    def expected_scores(self, backend: str, families: set[str]) -> dict[str, dict[str, float]]:
        """The scores of every sample on this backend, in a build whose %%kernel takes kernels for
        `families`: the parts of a family it does not know are 0 (the kernel cell is a UsageError)."""
        table = self.expected_gpu() if backend == "cuda" else self.expected_cpu()
        for family, _ in self.kernel_cells.values():
            if family not in families:
                for s in table.values():
                    s.update({cell: 0.0 for cell in self.family_parts(family)})
        return table

    def expected_errors(self, backend: str, families: set[str]) -> dict[str, dict[str, object]]:
        """The error each test cell of each sample shows (absent: none)."""
        errors = {}
        for student, lost in self.samples.items():
            want = {cell: pair[1] if backend == "cuda" else pair[0] for cell, pair in lost.items()}
            if backend != "cuda":
                # without a GPU, a GPU-only cell stops at its first line, unless the kernel it names
                # does not exist: then the cell is refused before its first line runs
                want.update({c: "AssertionError" for c in self.gpu_only if want.get(c) != "UsageError"})
            errors[student] = want
        for family, _ in self.kernel_cells.values():
            if family not in families:
                for e in errors.values():
                    e.update({cell: "UsageError" for cell in self.family_parts(family)})
        return errors

    def read_release(self, root) -> nbformat.NotebookNode:
        return nbformat.read(root / "release" / self.assignment / f"{self.notebook}.ipynb", as_version=4)

    def read_autograded(self, root, student: str) -> nbformat.NotebookNode:
        return nbformat.read(root / "autograded" / student / self.assignment / f"{self.notebook}.ipynb",
                             as_version=4)


def broken(cells: list[str], cpu: object, gpu: object) -> dict[str, tuple[object, object]]:
    """A bug that makes every run of the kernel fail: each of these cells scores 0, with these errors."""
    return {cell: (cpu, gpu) for cell in cells}


def unknown_kernel(cells: list[str]) -> dict[str, tuple[object, object]]:
    """A kernel that did not compile: every cell that names it is refused (UsageError: unknown value)."""
    return broken(cells, "UsageError", "UsageError")


def nobody(pset: Pset) -> dict[str, tuple[object, object]]:
    """The release as handed out: each stub compiles and computes nothing, so every run fails its check."""
    return broken(list(pset.max_points), "CheckError", "CheckError")


# ---------------------------------------------------------------- ps2: write kernels

PS2 = Pset(
    assignment="ps2", notebook="write-kernels",
    kernel_cells={"q1-kernel": ("matmul", "mytiled"), "q2-kernel": ("histo", "myhisto"),
                  "q3-kernel": ("reduce", "myreduce")},
    max_points={
        "q1-builds": 1.0, "q1-tiled": 1.0, "q1-small": 2.0, "q1-large": 1.0, "q1-speed": 1.0,
        "q2-private": 1.0, "q2-small": 2.0, "q2-speed": 1.0,
        "q3-convergent": 1.0, "q3-small": 2.0, "q3-speed": 1.0,
    },
    gpu_only=("q1-large", "q1-speed", "q2-speed", "q3-speed"),
    lesson=("q1-builds", "q1-tiled", "q2-private", "q3-convergent"),
)
_Q1 = PS2.parts("q1")
PS2.samples = {
    "alice": {},                                                      # right: 14 on a GPU, 10 without
    # no __syncthreads() between loading the tiles and reading them: a race on As (KernelError)
    "bob": broken(_Q1, "KernelError", WRONG_ON_GPU),
    # no bounds checks: reads past the rows of A, writes past C at 67 x 33 x 129
    "carol": broken(_Q1, "KernelError", FAULT_ON_GPU),
    # __syncthread() (misspelt): CompileError under the kernel cell; nothing of Q1 exists
    "dave": unknown_kernel(_Q1),
    # the tile loop never advances: each run ends at the launch limit
    "erin": broken(_Q1, "TimeoutError", "TimeoutError"),
    # A's tile is not zeroed past the edge of A: shared memory read before it is written (a GPU run
    # alone is right: the stale values meet zeros of B's tile; bug parity fails it)
    "frank": broken(_Q1, "KernelError", WRONG_ON_GPU),
    # the built-in tiled kernel (%matmul --show-source tiled) renamed, reformatted and reordered: full
    # marks (copying is the similarity report's business, never an automatic zero)
    "grace": {},
    # the naive kernel with a 4-byte `volatile __shared__` decoy: right everywhere, but it reads no tile
    # from shared memory, loads 2 per multiply-add, and is slower than 80 % of tiled (TILE = 32)
    "heidi": {"q1-builds": ("AssertionError", "AssertionError"), "q1-tiled": ("AssertionError", "AssertionError"),
              "q1-speed": ("AssertionError", "AssertionError")},
    # the interleaved (divergent) tree in myreduce: right, with idle lanes in every step, and slower
    # than 3/4 of convergent
    "ivan": {"q3-convergent": ("AssertionError", "AssertionError"), "q3-speed": ("AssertionError", "AssertionError")},
    # one global atomic per letter in myhisto: right, not privatised, slower than half of privatized
    "judy": {"q2-private": ("AssertionError", "AssertionError"), "q2-speed": ("AssertionError", "AssertionError")},
    # myhisto's private counts incremented without atomics: a race on shared memory; updates lost on a GPU
    "kevin": broken(PS2.parts("q2"), "KernelError", WRONG_ON_GPU),
    # a decoy that reads: both tiles loaded into shared memory and read, the product taken from global
    # memory all the same. It passes the shared-memory part, not the loads per multiply-add, and is
    # slower than the naive kernel
    "leo": {"q1-tiled": ("AssertionError", "AssertionError"), "q1-speed": ("AssertionError", "AssertionError")},
}
PS2.samples["nobody"] = nobody(PS2)
PS2.copies = {"grace": {"q1-kernel": "tiled"}}

# ---------------------------------------------------------------- ps3: stencils and coalescing

PS3 = Pset(
    assignment="ps3", notebook="stencils-and-coalescing",
    kernel_cells={"q1-kernel": ("stencil", "mystencil"), "q2-kernel": ("stencil", "myconv"),
                  "q3-kernel": ("coalesce", "mycopy")},
    max_points={
        "q1-tiled": 1.0, "q1-small": 2.0, "q1-speed": 1.0,
        "q2-tiled": 1.0, "q2-small": 2.0, "q2-speed": 1.0,
        "q3-coalesced": 1.0, "q3-small": 2.0, "q3-speed": 1.0,
    },
    gpu_only=("q1-speed", "q2-speed", "q3-speed"),
    lesson=("q1-tiled", "q2-tiled", "q3-coalesced"),
)
PS3.samples = {
    "alice": {},                                                      # right: 12 on a GPU, 9 without
    # mystencil reads its tile with no __syncthreads() after loading it: a race on tile (a GPU run is
    # often right, the warps of a block keeping step; bug parity fails it)
    "bob": broken(PS3.parts("q1"), "KernelError", WRONG_ON_GPU),
    # mystencil loads the halo without bounds checks: reads before in[0] and past in[n-1]
    "carol": broken(PS3.parts("q1"), "KernelError", FAULT_ON_GPU),
    # a missing ';' in myconv: CompileError under the kernel cell
    "dave": unknown_kernel(PS3.parts("q2")),
    # mycopy's loop steps by 0 in every block but the first: each run ends at the launch limit
    "erin": broken(PS3.parts("q3"), "TimeoutError", "TimeoutError"),
    # myconv leaves the ghost cells of its tile unwritten: shared memory read before it is written
    "frank": broken(PS3.parts("q2"), "KernelError", WRONG_ON_GPU),
    # the built-in tiled stencil and convolution (%stencil --show-source tiled), renamed and reformatted
    "grace": {},
    # the naive 1D stencil with a `volatile __shared__` decoy: right, 2R + 1 loads per output; as fast
    # as tiled at R = 2 on a GPU (the caches absorb the reloads), so only the lesson check tells
    "heidi": {"q1-tiled": ("AssertionError", "AssertionError")},
    # the experiment's strided traversal as mycopy: right, 32 sectors per request from stride 8 on
    "ivan": {"q3-coalesced": ("AssertionError", "AssertionError"), "q3-speed": ("AssertionError", "AssertionError")},
}
PS3.samples["nobody"] = nobody(PS3)
PS3.copies = {"grace": {"q1-kernel": "tiled", "q2-kernel": "tiled"}}

PSETS = (PS2, PS3)
