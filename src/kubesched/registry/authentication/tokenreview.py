"""TokenReview: who does this bearer token stand for? Asked by servers that delegate their
authentication to the API server (kube-scheduler's and ``kubesched run``'s metrics endpoint).

``serve`` knows one token, its own: it stands for ``kubesched-admin``. Any other token is not
authenticated, and the answer says so with upstream's error (not a failed request)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.registry.errors import bad_request
from kubesched.registry.review import ReviewStrategy, UserInfo, resource

#: What kube-apiserver's token authenticators answer for a token none of them knows.
INVALID_TOKEN = "invalid bearer token"


class TokenReviewStrategy(ReviewStrategy):
    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        raise NotImplementedError("a TokenReview is answered by review_token")

    def review_token(
        self, body: dict[str, Any], authenticate: Callable[[str], UserInfo | None]
    ) -> dict[str, Any]:
        """The answer to ``body``; ``authenticate`` gives the user of a token the server takes."""
        spec = self.spec_of(body)
        token = spec.get("token")
        if token is not None and not isinstance(token, str):
            raise self.cannot_decode("spec.token", token, "string")
        audiences = spec.get("audiences")
        if audiences is not None and not (
            isinstance(audiences, list) and all(isinstance(a, str) for a in audiences)
        ):
            raise self.cannot_decode("spec.audiences", audiences, "[]string")
        if not token:
            raise bad_request("token is required for TokenReview in authentication")
        found = authenticate(token)
        if found is None:
            return self.answer(body, {"user": {}, "error": INVALID_TOKEN})
        status: dict[str, Any] = {"authenticated": True, "user": found.as_json()}
        if audiences:
            status["audiences"] = list(audiences)
        return self.answer(body, status)


STRATEGY = TokenReviewStrategy(resource("authentication.k8s.io", "tokenreviews", "TokenReview"))
