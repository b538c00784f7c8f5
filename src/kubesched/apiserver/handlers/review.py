"""POST of a review kind: answered from the request's user, nothing stored (upstream's
``selfsubjectaccessreview``, ``selfsubjectrulesreview`` and ``selfsubjectreview`` REST storages)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesched.apiserver.authn import requester, token_user
from kubesched.apiserver.handlers.prepare import check_type_meta
from kubesched.apiserver.handlers.responses import json_response
from kubesched.registry.authentication.tokenreview import TokenReviewStrategy
from kubesched.registry.errors import bad_request
from kubesched.registry.review import ReviewStrategy


def review(request: web.Request, strategy: ReviewStrategy, body: Any, server_token: str) -> web.Response:
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
    check_type_meta(strategy, body)
    if isinstance(strategy, TokenReviewStrategy):
        return json_response(strategy.review_token(body, lambda token: token_user(server_token, token)), 201)
    return json_response(strategy.review(body, requester(request.headers)), 201)
