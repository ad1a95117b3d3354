"""cudalab_identity.py — each student of a cudalab course hub runs as a UNIX uid of their own.

nbgrader's exchange is a directory every server shares; it tells students apart only by the owner
of what they write there. So each student's server runs as uid UID_BASE + the hub's user id (the
scheme deploy/z2jh/config.yaml uses on Kubernetes), named jovyan inside their container, group
users (USERS_GID). The hub's pre-spawn hook (jupyterhub_config.py) gives the container that uid
(CUDALAB_UID, for the image's cudalab-entrypoint.sh) and records uid → hub name in a JSON file of a
host directory the formgrader reads (read-only): its collect (singleuser/cudalab_exchange.py)
refuses a submission whose files are not owned by the uid of the student it names.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

UID_BASE = 100000          # past any uid an image or a host hands out (useradd's 1000-60000)
USERS_GID = 100            # the group `users` of Debian and Ubuntu images
UID_MAP_NAME = "uids.json"  # in the identities directory: {"100007": "alice", ...}


def student_uid(user_id: int) -> int:
    """The uid of the hub's user number user_id."""
    return UID_BASE + int(user_id)


class StudentIdentities:
    """The hub's record of which uid is which student, in directory/uids.json."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / UID_MAP_NAME

    def read(self) -> dict[str, str]:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}

    def record(self, uid: int, name: str) -> None:
        """uid is name's from now on. Written whole and renamed into place, so that the formgrader
        never reads half a file (the hub is one process: its spawns do not race on it)."""
        uids = self.read()
        if uids.get(str(uid)) == name:
            return
        uids[str(uid)] = name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".uids-")
        with os.fdopen(fd, "w") as f:
            json.dump(uids, f, indent=1, sort_keys=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)

    def assign(self, spawner) -> int:
        """A pre-spawn hook's part: the student's uid, recorded, and in their server's environment."""
        uid = student_uid(spawner.user.id)
        self.record(uid, spawner.user.name)
        spawner.environment = {**spawner.environment, "CUDALAB_UID": str(uid), "CUDALAB_GID": str(USERS_GID)}
        return uid
