"""papermill_engine.py — the `papermill.engine` entry point that makes papermill import cudalab's translator
(papermill reads no entry points for translators; papermill.py says more). A module of its own because
papermill loads engine entry points while `papermill.engines` itself is being imported: the translator's
module, which papermill imports in turn, must not need the engines module finished."""
from papermill.engines import NBClientEngine

from . import papermill as _translator  # noqa: F401  (registers CudalabTranslator)

__all__ = ["CudalabEngine"]


class CudalabEngine(NBClientEngine):
    """papermill's nbclient engine under the name "cudalab"; `--engine cudalab` runs notebooks as the
    default does."""
