"""SelfSubjectRulesReview (``kubectl auth can-i --list``): what may the requesting user do in a
namespace?"""

from __future__ import annotations

from typing import Any

from kubesched.registry.errors import bad_request
from kubesched.registry.review import ReviewStrategy, UserInfo, resource

#: What AlwaysAllow's rule resolver answers: anything, anywhere.
_RESOURCE_RULES = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
_NON_RESOURCE_RULES = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]


class SelfSubjectRulesReviewStrategy(ReviewStrategy):
    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        spec = self.spec_of(body)
        namespace = spec.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise self.cannot_decode("spec.namespace", namespace, "string")
        if not namespace:
            raise bad_request("no namespace on request")
        return self.answer(
            body,
            {
                "resourceRules": [dict(rule) for rule in _RESOURCE_RULES],
                "nonResourceRules": [dict(rule) for rule in _NON_RESOURCE_RULES],
                "incomplete": False,
            },
        )


STRATEGY = SelfSubjectRulesReviewStrategy(
    resource("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview")
)
