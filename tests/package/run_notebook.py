"""run_notebook.py IN OUT KERNEL — execute notebook IN on kernelspec KERNEL with nbclient and write the
executed notebook to OUT. Run by test_wheel.py with a fresh virtualenv's Python, so that the kernel,
the kernelspec lookup and the package are that virtualenv's (only nbclient and nbformat needed)."""
import sys

import nbformat
from nbclient import NotebookClient

src, dst, kernel = sys.argv[1:4]
nb = nbformat.read(src, as_version=4)
try:
    NotebookClient(nb, kernel_name=kernel, timeout=60).execute()
finally:
    nbformat.write(nb, dst)
