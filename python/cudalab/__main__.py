"""`python -m cudalab install|uninstall|kernel|where` (see kernelspec._main). `kernel`, what every
kernel start runs, goes straight to the launcher: no argument parser, no kernelspec module."""
import sys

if sys.argv[1:2] == ["kernel"]:
    from .launch import exec_kernel
    sys.exit(exec_kernel(sys.argv[2:]))

from .kernelspec import _main  # noqa: E402

sys.exit(_main(sys.argv[1:]))
