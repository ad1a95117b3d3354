"""The CPU runner's image exports nothing of its own but what the prelude reaches (issue 32).

A student's object is loaded into the runner's image and its references resolve to the names that
image exports (cpu/simt/runtime/object.c). So the runtime's objects may export only the entry points
under the reserved prefixes (`__cudalab_*`, `__tsan_*`), the built-in variables the prelude declares
(`threadIdx`, ...) and `main`; their own state and helpers (the arena, the launch, the scheduler, the
findings) are static or hidden. Read from the built runner beside the kernel under test (its symbol
tables, static and dynamic) and its runtime objects (what the runtime defines, as opposed to the C
library's start-up code), with binutils' nm; no kernel is started.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import kernel_binary

BUILD = kernel_binary().parent.parent
RUNNER = BUILD / "lib/cudalab/simt/cudalab-runner"
PRELUDE = BUILD / "lib/cudalab/simt/cudalab_simt.h"
OBJECTS = sorted((BUILD / "obj/simt-runtime").glob("*.o"))
RESERVED = ("__cudalab_", "__tsan_")

pytestmark = pytest.mark.skipif(not shutil.which("nm") or not RUNNER.exists() or not OBJECTS,
                                reason="needs binutils' nm and the built runner with its objects")


def defined_globals(*args: str) -> set[str]:
    """The global (upper-case type) symbols nm lists as defined, less their version suffix."""
    out = subprocess.run(["nm", "--defined-only", *args], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1].isupper():
            names.add(fields[2].split("@")[0])
    return names


def builtin_variables() -> set[str]:
    """The variables the prelude declares for the student's code: `extern "C" const uint3 threadIdx, ...;`."""
    names = set()
    for decl in re.findall(r'^extern "C" const \w+ ([\w, ]+);', PRELUDE.read_text(), re.M):
        names.update(n.strip() for n in decl.split(","))
    return names


def prelude_entry_points() -> set[str]:
    """The runtime's functions the prelude declares in its `extern "C"` block (the student's object calls
    them by these names; the prelude's inline helpers are compiled into the object itself)."""
    block = re.search(r'^extern "C" \{\n(.*?)^\}', PRELUDE.read_text(), re.M | re.S)
    return set(re.findall(r"(__cudalab_\w+)\(", block.group(1))) if block else set()


def test_the_runtime_exports_only_reserved_names():
    runtime = set().union(*(defined_globals(str(o)) for o in OBJECTS))
    allowed = builtin_variables() | {"main"}
    assert {"threadIdx", "blockIdx", "blockDim", "gridDim"} <= allowed
    for table, args in (("dynamic", ("-D", str(RUNNER))), ("static", (str(RUNNER),))):
        exported = defined_globals(*args) & runtime
        stray = sorted(n for n in exported if not n.startswith(RESERVED) and n not in allowed)
        assert not stray, f"the runner's {table} symbol table exports names of its own: {stray}"


def test_what_the_prelude_reaches_is_still_exported():
    """Hiding the runtime's own names left every name the student's object resolves in the image."""
    wanted = prelude_entry_points() | builtin_variables()
    assert len(wanted) > 10 and "__cudalab_syncthreads" in wanted
    missing = sorted(wanted - defined_globals("-D", str(RUNNER)))
    assert not missing, f"the prelude declares names the runner does not export: {missing}"
