"""SelfSubjectAccessReview (``kubectl auth can-i``): may the requesting user do this?"""

from __future__ import annotations

from typing import Any

from kubesched.registry.review import ReviewStrategy, UserInfo, resource


class SelfSubjectAccessReviewStrategy(ReviewStrategy):
    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        causes = self.causes(body, self.spec_of(body))
        if causes:
            raise self.refuse(causes)
        # Every authenticated request is allowed (AlwaysAllow), so every question is answered yes;
        # upstream's allowing authorizer gives no reason.
        return self.answer(body, {"allowed": True})

    def causes(self, body: dict[str, Any], spec: dict[str, Any]) -> list[tuple[str, str, str]]:
        """What upstream's validation refuses in the review, in its order."""
        attributes = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        for path, value, go_type in (
            ("spec.resourceAttributes", attributes, "v1.ResourceAttributes"),
            ("spec.nonResourceAttributes", non_resource, "v1.NonResourceAttributes"),
        ):
            if value is not None and not isinstance(value, dict):
                raise self.cannot_decode(path, value, go_type)
        causes: list[tuple[str, str, str]] = []
        if attributes is not None and non_resource is not None:
            shown = _go_struct("authorization.NonResourceAttributes", non_resource, ("path", "verb"))
            causes.append(
                (
                    "FieldValueInvalid",
                    "spec.nonResourceAttributes",
                    f"Invalid value: {shown}: cannot be specified in combination with resourceAttributes",
                )
            )
        if attributes is None and non_resource is None:
            causes.append(
                (
                    "FieldValueInvalid",
                    "spec.resourceAttributes",
                    'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
                    "must be specified",
                )
            )
        causes += self.empty_metadata_errors(body)
        return causes


def _go_struct(name: str, value: dict[str, Any], fields: tuple[str, ...]) -> str:
    """A value as Go's ``%#v`` prints the struct it decodes into (upstream's message shows it)."""
    inner = ", ".join(f'{f[0].upper()}{f[1:]}:"{value.get(f) or ""}"' for f in fields)
    return f"{name}{{{inner}}}"


STRATEGY = SelfSubjectAccessReviewStrategy(
    resource("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview")
)
