"""The `cudalab` command and `python -m cudalab kernel`: exec the kernel binary with the arguments
given, in locate.kernel_env's environment.

exec, not a child process: the kernel keeps the pid its launcher (Jupyter, nbclient) started, so
interrupts (SIGINT to that pid), shutdown and the kernel's own watch on its parent (it leaves when
the process that started it dies) work as with the bare binary, and no Python stays resident.
"""
from __future__ import annotations

import os
import sys

from . import locate


def exec_kernel(args: list[str]) -> int:
    """Replaces this process with the kernel binary; returns (1) only when it cannot."""
    try:
        binary = locate.binary()
    except locate.NotFound as e:
        print(f"cudalab: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(str(binary), [str(binary), *args], locate.kernel_env())
    except OSError as e:
        print(f"cudalab: cannot run {binary}: {e}", file=sys.stderr)
    return 1


def main() -> int:
    """Entry point of the `cudalab` console script (`cudalab --help`, `cudalab --run '%device'`)."""
    return exec_kernel(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
