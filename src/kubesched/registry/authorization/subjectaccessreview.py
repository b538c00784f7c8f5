"""SubjectAccessReview: may this user do this? Asked about another user by servers that delegate
their authorization to the API server (kube-scheduler's and ``kubesched run``'s metrics endpoint),
and by admins.

``serve`` allows every authenticated user everything (kube-apiserver's ``AlwaysAllow``) and takes
no anonymous request: a user in ``system:unauthenticated`` (``system:anonymous``) is not allowed,
so an endpoint that delegates to ``serve`` refuses what ``serve`` itself would refuse."""

from __future__ import annotations

from typing import Any

from kubesched.registry.authorization.selfsubjectaccessreview import SelfSubjectAccessReviewStrategy
from kubesched.registry.review import UNAUTHENTICATED, UserInfo, resource

_ANONYMOUS = "system:anonymous"


class SubjectAccessReviewStrategy(SelfSubjectAccessReviewStrategy):
    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        spec = self.spec_of(body)
        subject = spec.get("user")
        groups = spec.get("groups")
        if subject is not None and not isinstance(subject, str):
            raise self.cannot_decode("spec.user", subject, "string")
        if groups is not None and not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)):
            raise self.cannot_decode("spec.groups", groups, "[]string")
        causes = self.causes(body, spec)
        if not subject and not groups:
            # Before the metadata check, as upstream's spec validation comes first.
            at = next((i for i, c in enumerate(causes) if c[1] == "metadata"), len(causes))
            causes.insert(
                at,
                (
                    "FieldValueInvalid",
                    "spec.user",
                    'Invalid value: "": at least one of user or group must be specified',
                ),
            )
        if causes:
            raise self.refuse(causes)
        allowed = subject != _ANONYMOUS and UNAUTHENTICATED not in (groups or [])
        return self.answer(body, {"allowed": allowed})


STRATEGY = SubjectAccessReviewStrategy(
    resource("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview")
)
