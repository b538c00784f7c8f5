"""The running schedulers' configuration over HTTP: ``/kubesched/v1/config/scheduler`` (the
``KubeSchedulerConfiguration``) and ``/kubesched/v1/config/batch`` (the Volcano scheduler conf).

``GET`` answers the text the schedulers run with; ``PUT`` with a new text validates it as ``--config``
or ``--batch-conf`` would and, when valid, replaces the running schedulers with ones built from it
(a hot reload, as Volcano's scheduler reloads its conf file). An invalid text is refused with a 422
``Status`` whose cause names the field, and the running schedulers are kept. Like every API path
these need the token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiohttp import web

from kubesched.batch.conf import BatchConf
from kubesched.batch.conf_loader import batch_conf_from_text
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig, config_from_text
from kubesched.framework.registry import Registry
from kubesched.registry.errors import ApiError, method_not_allowed

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

DEFAULT_CONFIG_TEXT = """\
# kube-scheduler's defaults: the default profile, every in-tree plugin at its default weight
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
"""

SCHEDULER = "scheduler"
BATCH = "batch"
_SOURCES = {SCHEDULER: "KubeSchedulerConfiguration", BATCH: "volcano-scheduler.conf"}

#: Starts schedulers with the configuration given (None: keep that half's current one).
Replace = Callable[[SchedulerConfig | None, BatchConf | None], None]


class RunningConfigs:
    """The configurations the running schedulers were built from (None: the defaults), their texts,
    and the way to replace them."""

    def __init__(
        self,
        config: SchedulerConfig | None,
        config_text: str,
        batch: BatchConf | None,
        batch_text: str,
        registry: Registry,
        replace: Replace,
    ) -> None:
        self.texts = {SCHEDULER: config_text, BATCH: batch_text}
        self.registry = registry
        self._config = config
        self._batch = batch
        self._replace = replace
        self._lock = asyncio.Lock()

    @property
    def config(self) -> SchedulerConfig | None:
        return self._config

    @property
    def batch(self) -> BatchConf | None:
        return self._batch

    def parse(self, which: str, text: str) -> SchedulerConfig | BatchConf:
        """Validate ``text``; raises :class:`InputError` naming the field."""
        source = _SOURCES[which]
        if which == SCHEDULER:
            return config_from_text(text, self.registry, source)
        return batch_conf_from_text(text, source)

    async def replace(self, which: str, text: str) -> None:
        parsed = self.parse(which, text)
        async with self._lock:
            config = parsed if isinstance(parsed, SchedulerConfig) else self._config
            batch = parsed if isinstance(parsed, BatchConf) else self._batch
            await asyncio.to_thread(self._replace, config, batch)
            self._config, self._batch = config, batch
            self.texts[which] = text


def invalid_config(which: str, err: InputError) -> ApiError:
    """422 Invalid naming the field, as kube-apiserver refuses an invalid object."""
    field = err.field or ""
    message = err.message
    shown = f"{field}: {message}" if field else message
    return ApiError(
        422,
        "Invalid",
        f"{_SOURCES[which]} is invalid: {shown}; the running configuration is kept",
        details={
            "name": which,
            "kind": _SOURCES[which],
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
        },
    )


async def config_endpoint(server: ApiServer, request: web.Request, which: str) -> web.StreamResponse:
    configs = server.configs
    if configs is None or which not in _SOURCES:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if request.method == "GET":
        return web.Response(text=configs.texts[which], content_type="application/yaml")
    if request.method != "PUT":
        raise method_not_allowed()
    text = await request.text()
    try:
        await configs.replace(which, text)
    except InputError as err:
        raise invalid_config(which, err) from None
    return web.Response(text=configs.texts[which], content_type="application/yaml")
