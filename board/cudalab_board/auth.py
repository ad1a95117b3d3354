"""auth.py — who is asking: every request is identified by the JupyterHub that runs the service.

A kernel sends its user's hub token (`Authorization: token T`, what JUPYTERHUB_API_TOKEN holds in
a single-user server); the page in a browser carries the cookie the hub's OAuth flow set for this
service. Either way jupyterhub.services.auth.HubOAuth asks the hub (`GET {api_url}/user`, cached a
few minutes) and the reply's `groups` give the board role (roles.py). Identification is awaited in
`prepare()`, never through HubAuth's synchronous path, which would block the event loop for the
hub's round trip.

Writes (submissions, quick checks) must carry the token itself: a cookie alone never posts, so a
page elsewhere cannot make a student's browser submit for them (no cross-site request forgery).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from jupyterhub.services.auth import HubOAuth, HubOAuthenticated, UserNotAllowed
from tornado import web

from . import roles


@dataclass(frozen=True)
class Identity:
    """A hub user the board serves, and the role their groups give them."""
    name: str
    role: str

    @property
    def instructor(self) -> bool:
        return self.role == roles.INSTRUCTOR


def hub_auth() -> HubOAuth:
    """The service's HubOAuth (the one instance, which the OAuth callback's handler uses too), configured from the environment the hub gives a managed service
    (JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_PREFIX, JUPYTERHUB_CLIENT_ID …).
    Tokens in URLs are refused: they end up in proxies' logs."""
    return HubOAuth.instance(allow_token_in_url=False, access_scopes={roles.ACCESS_SCOPE})


class AuthenticatedHandler(HubOAuthenticated, web.RequestHandler):
    """Base of every route: identifies the caller before the method runs and answers JSON errors.
    `self.current_user` is an Identity or None (not identified, or in neither course group)."""

    def initialize(self, board) -> None:
        self.board = board
        self.hub_auth = board.hub_auth

    async def prepare(self) -> None:
        self.refusal = None          # why an identified hub user is still refused (403), if so
        model = await self.hub_auth.get_user(self, sync=False)
        identity = None
        if model:
            try:
                model = self.check_hub_user(model)
            except UserNotAllowed:
                model = None
                self.refusal = "this token may not use the class board"
        if model and model.get("kind", "user") == "user":
            role = roles.role_of(model.get("groups") or [])
            if role is None:
                self.refusal = (f"{model['name']} is in neither hub group "
                                f"'{roles.INSTRUCTORS}' nor '{roles.STUDENTS}'")
            else:
                identity = Identity(model["name"], role)
        self.current_user = identity

    def require_user(self, *, token_only: bool = False) -> Identity:
        """The caller, or an HTTP error: 401 unidentified, 403 identified but not in the course."""
        if self.current_user is None:
            if self.refusal:
                raise ApiError(403, self.refusal)
            raise ApiError(401, "a JupyterHub token is required (Authorization: token T)")
        if token_only and not self.hub_auth.get_token(self, in_cookie=False):
            raise ApiError(401, "a write needs the hub token in the Authorization header")
        return self.current_user

    def check_xsrf_cookie(self) -> None:
        """Writes are token-only (require_user(token_only=True)); nothing relies on XSRF cookies."""

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        body = {"error": getattr(exc, "message", None) or self._reason}
        body.update(getattr(exc, "extra", {}))
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))


class ApiError(web.HTTPError):
    """An HTTP error whose JSON body carries more than the message (429's retry_after_s)."""

    def __init__(self, status: int, message: str, **extra) -> None:
        super().__init__(status, log_message=message.replace("%", "%%"))  # logged as a format
        self.message = message
        self.extra = extra
