"""roles.py — the course's hub groups and what each may see on the class board.

The one place that names them: deploy/jupyterhub/jupyterhub_config.py imports this file to define
the groups and give them access to the service, and the service (auth.py) reads a user's groups
from the hub through it. Instructors see every name, every submission and the class view;
students see their own rank and anonymised neighbours, and only their own submissions.
"""
from __future__ import annotations

from typing import Iterable

SERVICE_NAME = "board"        # the managed service's name: its URL is /services/board/
INSTRUCTORS = "instructors"   # hub group: names visible, the class view, any submission
STUDENTS = "students"         # hub group: own rank, anonymised neighbours, own submissions

INSTRUCTOR = "instructor"
STUDENT = "student"

# the scope a token needs to reach the service at all (JupyterHub's own name for it)
ACCESS_SCOPE = f"access:services!service={SERVICE_NAME}"


def role_of(groups: Iterable[str]) -> str | None:
    """The board role of a hub user in these groups; None for a user in neither (refused).
    An instructor who is also in the students group (trying the course as a student) is an
    instructor: the wider view never hides anything from its holder."""
    groups = set(groups)
    if INSTRUCTORS in groups:
        return INSTRUCTOR
    if STUDENTS in groups:
        return STUDENT
    return None
