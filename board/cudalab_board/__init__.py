"""cudalab_board: the class leaderboard of students' kernels and the instructor's live view of the
class, a JupyterHub-managed tornado service (`python -m cudalab_board serve --db URL --problems FILE
--port N [--class-view]`).

Modules: store (SQLite or PostgreSQL, migrations, every query), ranking (scores, ties, the physical
bound, the anonymised student view), service/auth/roles/events (the HTTP API), runner/problems (the
queue's runs through a real cudalab kernel). Importing the package is cheap: the standard library
only (psycopg is imported when a postgresql:// URL is opened)."""

__version__ = "0.1.0"
