"""`python -m cudalab install|uninstall|kernel|where` (see kernelspec._main)."""
import sys

from .kernelspec import _main

sys.exit(_main(sys.argv[1:]))
