"""cudalab_hub_auth.py — who may log in to a cudalab course hub, and in which group.

A course's LMS (Canvas, Moodle, Blackboard, Brightspace, Open edX) launches the hub through LTI 1.3
(jupyterhub-ltiauthenticator): the LMS signs an id_token whose claims say who the user is, in which
course (the context) and with which roles there. CourseLTI13Authenticator lets in only members of
the course's context (when the hub is registered for one) whose roles there are a teaching one
(instructors group, hub admin) or a learner (students group), and gives JupyterHub their groups on
every launch (Authenticator.manage_groups), so a TA dropped in the LMS is dropped from the hub's
instructors at their next launch. The group names are board/cudalab_board/roles.py's.

A course without an LMS uses the fallback of jupyterhub_config.py (CUDALAB_AUTHENTICATOR=native:
jupyterhub-nativeauthenticator, sign-up approved by an admin); its instructors are named in
CUDALAB_INSTRUCTORS and put in the instructors group by instructors_hook.
"""
from __future__ import annotations

from ltiauthenticator.lti13.auth import LTI13Authenticator
from traitlets import Unicode

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
# LTI 1.3's context roles (the LIS vocabulary); a sub-role (…/membership/Instructor#TeachingAssistant)
# belongs to its role, and LMSes also send the short forms ("Instructor", "Learner")
LIS_MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
TEACHING_ROLES = ("Instructor", "ContentDeveloper", "Administrator")
LEARNER_ROLES = ("Learner",)


def _role_names(roles: list[str]) -> set[str]:
    """The context roles of an LTI roles claim, by short name: Instructor, Learner, …
    (institution and system roles, e.g. …/institution/person#Administrator, are not course roles)."""
    names = set()
    for role in roles if isinstance(roles, list) else []:
        if not isinstance(role, str):
            continue
        if "/" not in role:
            names.add(role)
        elif role.startswith(LIS_MEMBERSHIP + "#"):
            names.add(role.split("#", 1)[1])
        elif role.startswith(LIS_MEMBERSHIP + "/"):               # a sub-role: …/membership/Instructor#TA
            names.add(role[len(LIS_MEMBERSHIP) + 1:].split("#", 1)[0])
    return names


def course_groups(id_token: dict, instructors: str, students: str) -> list[str]:
    """The hub groups an LTI launch puts its user in: [instructors], [students] or [] (no course role)."""
    names = _role_names(id_token.get(ROLES_CLAIM, []))
    if names & set(TEACHING_ROLES):
        return [instructors]
    if names & set(LEARNER_ROLES):
        return [students]
    return []


class CourseLTI13Authenticator(LTI13Authenticator):
    """LTI 1.3 launches of one course's members, with their course group and admin rights."""

    context_id = Unicode("", config=True, help="""The LMS course (the LTI context claim's id) this hub
        serves; launches from another course are refused. Empty: any context of the registered tool.""")
    instructors_group = Unicode("instructors", config=True, help="Hub group of the course's teaching roles.")
    students_group = Unicode("students", config=True, help="Hub group of the course's learners.")

    def check_allowed(self, username: str, authentication: dict | None = None) -> bool:
        token = (authentication or {}).get("auth_state") or {}
        if self.context_id and (token.get(CONTEXT_CLAIM) or {}).get("id") != self.context_id:
            self.log.warning("LTI launch of %r from another course's context refused", username)
            return False
        if not course_groups(token, self.instructors_group, self.students_group):
            self.log.warning("LTI launch of %r with no course role (%s) refused", username,
                             token.get(ROLES_CLAIM))
            return False
        return True

    async def authenticate(self, handler, data=None) -> dict:
        model = await super().authenticate(handler, data)
        groups = course_groups(model["auth_state"] or {}, self.instructors_group, self.students_group)
        model["groups"] = groups
        model["admin"] = groups == [self.instructors_group]     # the course's instructors run its hub
        return model


def instructors_hook(instructors: set[str], instructors_group: str, students_group: str):
    """A post_auth_hook for the fallback authenticator: the named instructors in the instructors
    group (and hub admins), everyone else who was let in a student."""
    def hook(authenticator, handler, model: dict) -> dict:
        teaching = model["name"] in instructors
        model["groups"] = [instructors_group if teaching else students_group]
        model["admin"] = teaching or bool(model.get("admin"))
        return model
    return hook
