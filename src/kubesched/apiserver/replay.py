"""``POST /kubesched/v1/replay``: YAML manifests run over virtual time on a cluster of their own,
with the running schedulers' configurations, answered as a timeline for the web UI's replay (the
run itself is the simulator's, handed in as a :data:`Replayer`). One replay runs at a time; bad
input is a 422 naming the document, object and field. Behind the token like every API path."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.apiserver.handlers.body import raw_body
from kubesched.apiserver.handlers.responses import json_response
from kubesched.batch.conf import BatchConf
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig
from kubesched.registry.errors import ApiError, bad_request, method_not_allowed

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: Runs manifests (YAML text) to the end with these configurations; raises InputError.
Replayer = Callable[[str, SchedulerConfig | None, BatchConf | None], dict[str, Any]]

_one_at_a_time = asyncio.Lock()


async def replay(server: ApiServer, request: web.Request) -> web.Response:
    if server.replayer is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if request.method != "POST":
        raise method_not_allowed()
    try:
        text = (await raw_body(request)).decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("the body must be UTF-8 text") from None
    configs = server.configs
    config = configs.config if configs is not None else None
    batch = configs.batch if configs is not None else None
    async with _one_at_a_time:
        try:
            timeline = await asyncio.to_thread(server.replayer, text, config, batch)
        except InputError as err:
            # The text came in the request: its document, object and field locate it, no file.
            located = InputError(err.message, document=err.document, obj=err.obj, field=err.field)
            cause = {"reason": "FieldValueInvalid", "message": err.message, "field": err.field or ""}
            raise ApiError(422, "Invalid", f"replay: {located}", details={"causes": [cause]}) from None
    return json_response(timeline)
