"""Who a request acts as. ``serve`` authenticates one bearer token (made with the data dir and
written into its kubeconfig as user ``kubesched-admin``); a request that carries it is that user, in
``system:masters`` (allowed everything) and ``system:authenticated``. Every other request is
refused with 401 before it gets here.

A request may impersonate another user with the ``Impersonate-*`` headers, as kube-apiserver
allows a user permitted to impersonate: the reviews then answer for the impersonated user.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from urllib.parse import unquote

from multidict import CIMultiDictProxy

from kubesched.registry.errors import ApiError
from kubesched.registry.review import AUTHENTICATED, MASTERS, UNAUTHENTICATED, UserInfo

#: The user the server's token stands for (the kubeconfig's user name).
ADMIN = UserInfo("kubesched-admin", groups=(MASTERS, AUTHENTICATED))

_ANONYMOUS = "system:anonymous"
_SERVICE_ACCOUNT = "system:serviceaccount:"
_EXTRA_PREFIX = "impersonate-extra-"


def token_user(server_token: str, token: str) -> UserInfo | None:
    """The user a bearer token stands for (a TokenReview's answer): the admin for the server's
    token, nobody for any other."""
    return ADMIN if hmac.compare_digest(token.encode(), server_token.encode()) else None


def requester(headers: CIMultiDictProxy[str] | Mapping[str, str]) -> UserInfo:
    """The user an authenticated request acts as: the token's, or the one it impersonates (upstream's
    ``WithImpersonation`` filter)."""
    name = headers.get("Impersonate-User", "")
    uid = headers.get("Impersonate-Uid", "")
    groups = _all(headers, "Impersonate-Group")
    extra: dict[str, tuple[str, ...]] = {}
    for key in {k.lower() for k in headers if k.lower().startswith(_EXTRA_PREFIX)}:
        extra[unquote(key[len(_EXTRA_PREFIX) :])] = _all(headers, key)
    if not name:
        if groups or extra or uid:
            asked = ", ".join([*(f"group {g}" for g in groups), *(f"extra {k}" for k in extra)])
            raise ApiError(
                500,
                "InternalError",
                f"Internal error occurred: requested [{asked or 'uid ' + uid}] without impersonating a user",
            )
        return ADMIN
    given = list(groups)
    if name.startswith(_SERVICE_ACCOUNT) and not given:
        # A service account's groups follow from its name.
        namespace = name[len(_SERVICE_ACCOUNT) :].partition(":")[0]
        given = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    if name != _ANONYMOUS:
        if AUTHENTICATED not in given and UNAUTHENTICATED not in given:
            given.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in given:
        given.append(UNAUTHENTICATED)
    return UserInfo(name, uid, tuple(given), extra)


def _all(headers: CIMultiDictProxy[str] | Mapping[str, str], key: str) -> tuple[str, ...]:
    if isinstance(headers, CIMultiDictProxy):
        return tuple(headers.getall(key, []))
    value = headers.get(key)
    return (value,) if value else ()
