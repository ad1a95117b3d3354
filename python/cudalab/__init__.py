"""cudalab's Python package: the kernel binary's locator and installer, the IPython extension
(`%load_ext cudalab`), the Pygments lexer and the papermill translator of the cell language."""
__version__ = "0.1.0"
