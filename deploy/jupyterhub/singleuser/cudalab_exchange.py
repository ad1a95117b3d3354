"""cudalab_exchange.py — nbgrader's collect for a course hub where every student is a uid of their own
(deploy/jupyterhub/cudalab_identity.py): a submission is collected only when every file in it is owned
by the uid of the student it names. nbgrader_config.py (beside it, in the image's /etc/jupyter) makes
it the formgrader's collect.

In the shared exchange anyone may write inbound/NAME+ASSIGNMENT+TIME+RANDOM for any NAME (`nbgrader
submit --student alice`); only the owner of what was written says who wrote it. nbgrader's own
ExchangeCollect.check_owner only logs a warning and then collects the newest submission under a name,
whoever wrote it, and it knows uids only through /etc/passwd, which in the formgrader's container
does not list the students. Here a forged submission is set aside before the newest of each student
is chosen (so it can neither replace nor hide the student's own), and the collect says so. Uids are
named by the hub's record (uid_map, read at each collect: students log in after the formgrader
started), then by the system's passwd (a course on a host's own accounts).
"""
from __future__ import annotations

import json
import os
import pwd
import stat

from nbgrader.exchange.default.collect import ExchangeCollect
from traitlets import Unicode

FORGED = "\0forged"     # a username no student has: keeps a forged submission out of the student's group


class OwnerCheckedCollect(ExchangeCollect):
    """ExchangeCollect that refuses a submission not wholly owned by the student it names."""

    uid_map = Unicode("", config=True, help="""The hub's record of the students' uids, a JSON object
        {"UID": "NAME"} (cudalab_identity.StudentIdentities). Empty: the system's passwd only.""")

    def _names(self) -> dict[int, str]:
        if not self.uid_map:
            return {}
        try:
            with open(self.uid_map) as f:
                return {int(uid): name for uid, name in json.load(f).items()}
        except FileNotFoundError:
            return {}

    def _name_of(self, uid: int) -> str | None:
        if uid in self.names:
            return self.names[uid]
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return None

    def forgery(self, path: str, student: str) -> str | None:
        """Why the submission at path is not student's own, or None when it is."""
        entries = [path]
        for folder, dirs, files in os.walk(path):
            entries += [os.path.join(folder, name) for name in dirs + files]
        for entry in entries:
            st = os.lstat(entry)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                return f"{os.path.relpath(entry, path)} is not a file or a folder"
            owner = self._name_of(st.st_uid)
            if owner != student:
                return f"{os.path.relpath(entry, path)} belongs to {owner or f'uid {st.st_uid}, no student'}"
        return None

    def init_src(self):
        self.names = self._names()
        super().init_src()

    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        if self.check_owner:
            why = self.forgery(path, record["username"])
            if why:
                record.update(claimed=record["username"], why=why, username=record["username"] + FORGED + why)
        return record

    def copy_files(self):
        forged = [r for r in self.src_records if "why" in r]
        for r in forged:
            self.log.error("Refused %s: it names student %s, but %s", r["filename"], r["claimed"], r["why"])
        self.src_records = [r for r in self.src_records if "why" not in r]
        # nbgrader's own check would warn about every student it cannot name from /etc/passwd; what it
        # checks was checked above
        checking, self.check_owner = self.check_owner, False
        try:
            super().copy_files()
        finally:
            self.check_owner = checking
