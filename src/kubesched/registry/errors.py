"""API errors as ``Status`` objects with upstream's reasons and codes (apimachinery's ``api/errors``)."""

from __future__ import annotations

from typing import Any

from kubesched.errors import KubeschedError


class ApiError(KubeschedError):
    """A request the API server refuses; rendered as a ``Status`` body with ``code``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        # metav1.Status's field order, which clients that compare the text rely on.
        if self.details:
            out["details"] = self.details
        out["code"] = self.code
        return out


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """Upstream's StatusDetails, which leaves empty strings out (omitempty)."""
    return {key: value for key, value in (("name", name), ("group", group), ("kind", kind)) if value}


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        details=_details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        details=_details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        details=_details(name, group, resource),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; each cause is (reason, field, message) as upstream's field.Error."""
    text = ", ".join(f"{field}: {message}" if field else message for _, field, message in causes)
    shown = f"{kind}.{group}" if group else kind
    if len(causes) > 1:
        text = f"[{text}]"
    details = _details(name, group, kind)
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    return ApiError(422, "Invalid", f'{shown} "{name}" is invalid: {text}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
        f"application/strategic-merge-patch+json (got {content_type!r})",
    )


def too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", "the request body is too large")


def success(details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    return out
