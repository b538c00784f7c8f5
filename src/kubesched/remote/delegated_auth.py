"""Who may read ``kubesched run``'s endpoint: authentication and authorization delegated to the API
server, as kube-scheduler's (``DelegatingAuthenticationOptions``, ``DelegatingAuthorizationOptions``
of k8s.io/apiserver).

Authentication, in upstream's order:

1. a client certificate verified against ``--client-ca-file``: the user is its Common Name, its
   groups its Organizations;
2. a bearer token (``Authorization: Bearer …``): a ``TokenReview`` (authentication.k8s.io/v1)
   through ``--authentication-kubeconfig`` (or the pod's service account in a cluster). A token the
   server does not accept, or a review that fails, is ``401 Unauthorized``, whatever the path. The
   answer is kept ``--authentication-token-webhook-cache-ttl`` (10s), accepted or not; a failed review
   is not kept;
3. nothing: ``system:anonymous`` in ``system:unauthenticated`` (delegated authentication allows
   anonymous requests; authorization then decides).

Every authenticated user is also in ``system:authenticated``.

Authorization, the first that allows wins:

1. a user in ``system:masters``;
2. a path of ``--authorization-always-allow-paths`` (``/healthz``, ``/readyz``, ``/livez``): exact, or
   a prefix when it ends in ``*`` (the leading ``/`` optional);
3. a ``SubjectAccessReview`` (authorization.k8s.io/v1) through ``--authorization-kubeconfig`` for
   the path and the verb (the request's method in lower case: ``get``), kept
   ``--authorization-webhook-cache-authorized-ttl`` when allowed and
   ``--authorization-webhook-cache-unauthorized-ttl`` when not (10s each).

Otherwise ``403 Forbidden``: ``forbidden: User "NAME" cannot get path "/metrics"`` (and the review's
reason after a colon when it gave one); a review that fails is ``500``. Without a kubeconfig to
review with (none given, not in a pod) tokens are not looked at and only the always-allowed paths
are served, as upstream's, with a warning at start.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesched.errors import InputError
from kubesched.registry.review import AUTHENTICATED, MASTERS, UNAUTHENTICATED, UserInfo
from kubesched.remote.client import ApiClient
from kubesched.remote.config import ClientConfig, in_cluster_available, load_client_config

log = logging.getLogger(__name__)

ANONYMOUS = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))
#: kube-scheduler's ``--authorization-always-allow-paths``.
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
#: Groups allowed without asking (upstream's ``AlwaysAllowGroups``).
ALWAYS_ALLOW_GROUPS = (MASTERS,)
#: Answers kept at most (oldest forgotten first).
CACHE_SIZE = 4096
#: The review clients' rate limit (upstream's delegated clients: 200 QPS, burst 400).
REVIEW_QPS, REVIEW_BURST = 200.0, 400
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True, slots=True)
class AuthOptions:
    """kube-scheduler's authentication and authorization flags (defaults as upstream's)."""

    authentication_kubeconfig: str | None = None
    token_cache_ttl: float = 10.0
    authorization_kubeconfig: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authorized_ttl: float = 10.0
    unauthorized_ttl: float = 10.0

    def validate(self) -> None:
        for path in self.always_allow_paths:
            bare = path.removeprefix("/")
            if "*" in bare[:-1]:
                raise InputError(
                    f'only trailing * allowed in "{bare}"', field="--authorization-always-allow-paths"
                )
        for flag, value in (
            ("--authentication-token-webhook-cache-ttl", self.token_cache_ttl),
            ("--authorization-webhook-cache-authorized-ttl", self.authorized_ttl),
            ("--authorization-webhook-cache-unauthorized-ttl", self.unauthorized_ttl),
        ):
            if value < 0:
                raise InputError(f"must not be negative, got {value:g}s", field=flag)


class ExpiringCache:
    """Answers kept for a time each, at most ``size`` of them (the oldest written goes first)."""

    def __init__(self, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._items: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self.clock():
            del self._items[key]
            return None
        return item[1]

    def put(self, key: Hashable, value: Any, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (replacing what ``key`` held); a TTL of 0 keeps
        nothing."""
        self._items.pop(key, None)
        if ttl <= 0:
            return
        self._items[key] = (self.clock() + ttl, value)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class ReviewError(Exception):
    """A review the API server did not answer."""


class _Reviewer:
    """An API client made on first use on the serving loop (the endpoint's own)."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._client: ApiClient | None = None
        self._lock: asyncio.Lock | None = None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._client is None:
                    self._client = await ApiClient.connect(
                        self.config, qps=REVIEW_QPS, burst=REVIEW_BURST, max_retries=3, timeout=10.0
                    )
        try:
            answer = await self._client.request("POST", path, body=body)
        except Exception as exc:  # any failure of the review is the request's failure
            raise ReviewError(str(exc)) from exc
        if not isinstance(answer, dict):
            raise ReviewError(f"{path}: the answer is not an object")
        return answer

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class TokenAuthenticator:
    """Bearer tokens through ``TokenReview``, with upstream's cache."""

    def __init__(self, reviewer: _Reviewer, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.reviewer = reviewer
        self.ttl = ttl
        self.cache = ExpiringCache(clock=clock)
        #: Reviews sent (for tests and metrics of the cache).
        self.reviews = 0

    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user; None when the server does not accept it; :class:`ReviewError` when
        it could not say."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self.cache.get(key)
        if cached is not None:
            user: UserInfo | None = cached[0]
            return user
        self.reviews += 1
        answer = await self.reviewer.post(
            TOKEN_REVIEWS,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        status = answer.get("status") or {}
        if status.get("error") and not status.get("authenticated"):
            log.debug("token review: %s", status["error"])
        user = _user(status.get("user") or {}) if status.get("authenticated") else None
        self.cache.put(key, (user,), self.ttl)
        return user


def _user(raw: dict[str, Any]) -> UserInfo:
    extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in (raw.get("extra") or {}).items()}
    return UserInfo(
        str(raw.get("username") or ""),
        str(raw.get("uid") or ""),
        tuple(str(g) for g in raw.get("groups") or ()),
        extra,
    )


class SubjectAccessReviewer:
    """May this user do this verb on this path? Through ``SubjectAccessReview``, with upstream's
    cache (allowed and denied answers kept for their own times)."""

    def __init__(
        self,
        reviewer: _Reviewer,
        authorized_ttl: float,
        unauthorized_ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        self.authorized_ttl = authorized_ttl
        self.unauthorized_ttl = unauthorized_ttl
        self.cache = ExpiringCache(clock=clock)
        self.reviews = 0

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason); :class:`ReviewError` when the server could not say."""
        spec: dict[str, Any] = {"nonResourceAttributes": {"path": path, "verb": verb}, "user": user.username}
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        cached = self.cache.get(key)
        if cached is not None:
            result: tuple[bool, str] = cached
            return result
        self.reviews += 1
        answer = await self.reviewer.post(
            SUBJECT_ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        status = answer.get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        result = (allowed, str(status.get("reason") or ""))
        self.cache.put(key, result, self.authorized_ttl if allowed else self.unauthorized_ttl)
        return result


def path_allowed(patterns: tuple[str, ...], path: str) -> bool:
    """Upstream's path authorizer: an exact path, or a prefix given with a trailing ``*``; the
    leading ``/`` of either is not compared."""
    bare = path.removeprefix("/")
    for pattern in patterns:
        want = pattern.removeprefix("/")
        if want.endswith("*"):
            if bare.startswith(want[:-1]):
                return True
        elif bare == want:
            return True
    return False


def _status(code: int, reason: str, message: str, *, details: bool) -> web.Response:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = {}
    body["code"] = code
    return web.Response(
        body=orjson.dumps(body),
        status=code,
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def unauthorized() -> web.Response:
    return _status(401, "Unauthorized", "Unauthorized", details=False)


def forbidden(user: UserInfo, verb: str, path: str, reason: str) -> web.Response:
    message = f"User {_go_quote(user.username)} cannot {verb} path {_go_quote(path)}"
    if reason:
        message = f"{message}: {reason}"
    return _status(403, "Forbidden", f"forbidden: {message}", details=True)


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _bearer(header: str) -> str | None:
    """The token of ``Authorization: Bearer TOKEN`` (the scheme in any case); None when there is
    none."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def _certificate_user(peercert: Any) -> UserInfo | None:
    """The user of a verified client certificate: Common Name and Organizations."""
    if not peercert:
        return None
    name, groups = "", []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    return UserInfo(name, groups=tuple(groups)) if name else None


class DelegatedAuth:
    """The endpoint's authentication and authorization; :meth:`middleware` goes into its aiohttp
    application, :meth:`close` into its cleanup."""

    def __init__(
        self,
        options: AuthOptions,
        authentication: ClientConfig | None,
        authorization: ClientConfig | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.tokens = (
            TokenAuthenticator(_Reviewer(authentication), options.token_cache_ttl, clock)
            if authentication is not None
            else None
        )
        self.access = (
            SubjectAccessReviewer(
                _Reviewer(authorization), options.authorized_ttl, options.unauthorized_ttl, clock
            )
            if authorization is not None
            else None
        )

    @classmethod
    def from_options(cls, options: AuthOptions) -> DelegatedAuth:
        """Load the kubeconfigs (the pod's service account when a flag is empty and kubesched runs
        in a pod); a warning for each review that cannot be made, as upstream's."""
        options.validate()
        authn = _review_config(options.authentication_kubeconfig, "--authentication-kubeconfig")
        if authn is None:
            log.warning(
                "no --authentication-kubeconfig and not in a pod: bearer tokens are not reviewed, "
                "every request is anonymous"
            )
        authz = _review_config(options.authorization_kubeconfig, "--authorization-kubeconfig")
        if authz is None:
            log.warning(
                "no --authorization-kubeconfig and not in a pod: SubjectAccessReviews cannot be made, "
                "only %s are served",
                ", ".join(options.always_allow_paths) or "no path",
            )
        return cls(options, authn, authz)

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        """The request's user (anonymous when it says nothing); None when it must be refused."""
        transport = request.transport
        user = _certificate_user(transport.get_extra_info("peercert") if transport is not None else None)
        if user is None:
            token = _bearer(request.headers.get("Authorization", ""))
            if token is not None and self.tokens is not None:
                try:
                    user = await self.tokens.authenticate(token)
                except ReviewError as exc:
                    log.warning("unable to authenticate the request: %s", exc)
                    return None
                if user is None:
                    return None
        if user is None:
            return ANONYMOUS
        if AUTHENTICATED not in user.groups:
            user = UserInfo(user.username, user.uid, (*user.groups, AUTHENTICATED), user.extra)
        return user

    async def authorize(self, user: UserInfo, verb: str, path: str) -> web.Response | None:
        """None when allowed; else the answer that refuses the request."""
        if any(g in ALWAYS_ALLOW_GROUPS for g in user.groups):
            return None
        if path_allowed(self.options.always_allow_paths, path):
            return None
        if self.access is None:
            return forbidden(user, verb, path, "")
        try:
            allowed, reason = await self.access.authorize(user, verb, path)
        except ReviewError as exc:
            log.warning("unable to authorize %s %s for %s: %s", verb, path, user.username, exc)
            return web.Response(
                text=f'Internal Server Error: "{path}": {exc}', status=500, content_type="text/plain"
            )
        return None if allowed else forbidden(user, verb, path, reason)

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        user = await self.authenticate(request)
        if user is None:
            return unauthorized()
        refusal = await self.authorize(user, request.method.lower(), request.path)
        if refusal is not None:
            return refusal
        return await handler(request)

    async def close(self, _app: web.Application | None = None) -> None:
        for review in (self.tokens, self.access):
            if review is not None:
                await review.reviewer.close()


def _review_config(path: str | None, flag: str) -> ClientConfig | None:
    if path:
        try:
            return load_client_config(path)
        except InputError as exc:
            raise InputError(exc.message, field=flag) from None
    if in_cluster_available():
        return load_client_config()
    return None


__all__ = [
    "ANONYMOUS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "AuthOptions",
    "DelegatedAuth",
    "ExpiringCache",
    "ReviewError",
    "SubjectAccessReviewer",
    "TokenAuthenticator",
    "forbidden",
    "path_allowed",
    "unauthorized",
]
