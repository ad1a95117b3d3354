"""cudalab's Python package: the kernel binary's locator and installer, the IPython extension
(`%load_ext cudalab`), the Pygments lexer and the papermill translator of the cell language.

Importing it is cheap (the standard library only): `python -m cudalab kernel`, the kernelspec's
launcher, imports it on every kernel start; the extension's modules load with the extension."""
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """`%load_ext cudalab`: starts a cudalab kernel and registers its magics (see extension.py)."""
    from . import extension
    extension.load(ipython)


def unload_ipython_extension(ipython):
    """`%unload_ext cudalab`: removes the magics and stops the kernel."""
    from . import extension
    extension.unload(ipython)


def results():
    """Every run of every cudalab result this session has shown, as a pandas DataFrame: one row per
    run, with result (which document), magic, variant, backend, device and the run's fields
    flattened (time_ms.median, gflops, check.passed, …), then the command's params.*."""
    from . import extension, table
    return table.dataframe(extension.documents())


def documents():
    """Every cudalab result document this session has shown, as dicts, oldest first."""
    from . import extension
    return extension.documents()
