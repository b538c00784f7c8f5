"""SelfSubjectReview (``kubectl auth whoami``): who does the server take the requester for?"""

from __future__ import annotations

import time
from typing import Any

from kubesched.registry.review import ReviewStrategy, UserInfo, resource


class SelfSubjectReviewStrategy(ReviewStrategy):
    top_fields = frozenset({"status"})

    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        out = self.answer(body, {"userInfo": user.as_json()})
        # Upstream stamps the answer with the time it was made.
        out["metadata"] = {"creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        return out


STRATEGY = SelfSubjectReviewStrategy(
    resource("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview")
)
