"""Where the cluster is and how to authenticate: kubeconfig files or the pod's service account.

The files are read by kubernetes_asyncio's loaders (kubeconfig merging, contexts, certificate data
written to temporary files, exec credential plugins, in-cluster service-account settings); what
they produce is turned into what :class:`~kubesched.remote.client.ApiClient` needs: the server URL,
one ``ssl.SSLContext`` and a source of the ``Authorization`` header that may refresh.

Which configuration is used follows client-go's ``BuildConfigFromFlags`` as kube-scheduler calls
it: an explicit kubeconfig path wins; without one, the in-cluster service account when the process
runs in a pod (``KUBERNETES_SERVICE_HOST``/``PORT`` set and its files readable); otherwise the
kubeconfig loading rules (``KUBECONFIG``, a list of files merged first-wins, then
``~/.kube/config``). A ``--context`` asks for a kubeconfig, so it skips the in-cluster step.

Credentials that change while the scheduler runs are refreshed as client-go does: a token file
(kubeconfig ``tokenFile``, the service account's projected token) is re-read at most once a minute;
an exec plugin's token is renewed when it expires or when the server answers 401.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

from kubesched.errors import InputError

#: How long a token read from a file is used before the file is read again (client-go's
#: cachedFileTokenSource period).
TOKEN_FILE_PERIOD = 60.0


class TokenFile:
    """A bearer token kept in a file that may be rotated (a projected service-account token)."""

    def __init__(self, path: str, period: float = TOKEN_FILE_PERIOD) -> None:
        self.path = path
        self.period = period
        self._token: str | None = None
        self._read_at = -float("inf")

    def token(self) -> str:
        now = time.monotonic()
        if self._token is None or now - self._read_at >= self.period:
            try:
                text = Path(self.path).read_text().strip()
            except OSError as exc:
                if self._token is not None:
                    return self._token  # keep the last good token while the file is replaced
                raise InputError(f"cannot read the token file: {exc.strerror}", file=self.path) from None
            if not text:
                if self._token is not None:
                    return self._token
                raise InputError("the token file is empty", file=self.path)
            self._token, self._read_at = text, now
        return self._token

    def invalidate(self) -> None:
        self._read_at = -float("inf")


class ExecCredential:
    """A token from a kubeconfig exec plugin, renewed when it expires or is refused."""

    def __init__(self, loader: KubeConfigLoader, header: str | None) -> None:
        self._loader = loader
        self._header = header

    async def header(self) -> str | None:
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        if self._header is None or (expiry is not None and _expired(expiry)):
            await self._renew()
        return self._header

    async def _renew(self) -> None:
        if hasattr(self._loader, "exec_plugin_expiry"):
            del self._loader.exec_plugin_expiry
        await self._loader.load_from_exec_plugin()
        token = getattr(self._loader, "token", None)
        self._header = str(token) if token else None

    def invalidate(self) -> None:
        self._header = None


def _expired(expiry: Any) -> bool:
    if not isinstance(expiry, datetime.datetime):
        return False
    now = datetime.datetime.now(tz=expiry.tzinfo) if expiry.tzinfo else datetime.datetime.now()
    return expiry <= now


@dataclass
class ClientConfig:
    """How to reach one API server: the base URL, TLS, and the ``Authorization`` header's source."""

    server: str
    #: TLS settings for an ``https`` server (CA, client certificate, verification); None for http.
    ssl: ssl.SSLContext | None = None
    #: A fixed ``Authorization`` header value (``Bearer …`` or ``Basic …``).
    authorization: str | None = None
    #: A token file re-read periodically (takes precedence over ``authorization``).
    token_file: TokenFile | None = None
    #: An exec plugin's credential (takes precedence over both).
    exec_credential: ExecCredential | None = None
    #: The name TLS verifies the server certificate against, when not the URL's host.
    tls_server_name: str | None = None
    #: An HTTP proxy URL from the kubeconfig (``proxy-url``).
    proxy: str | None = None
    #: Where the settings came from (for messages): ``kubeconfig PATH (context NAME)`` or ``in-cluster``.
    source: str = ""
    #: Extra headers sent with every request (e.g. a User-Agent).
    headers: dict[str, str] = field(default_factory=dict)

    async def auth_header(self) -> str | None:
        """The ``Authorization`` header value for the next request (refreshed when due)."""
        if self.exec_credential is not None:
            return await self.exec_credential.header()
        if self.token_file is not None:
            return f"Bearer {self.token_file.token()}"
        return self.authorization

    def refused(self) -> bool:
        """The server answered 401: drop cached credentials that can be renewed. True when a retry
        could use a different credential."""
        if self.exec_credential is not None:
            self.exec_credential.invalidate()
            return True
        if self.token_file is not None:
            self.token_file.invalidate()
            return True
        return False


def _ssl_context(
    server: str, ca_file: str | None, cert_file: str | None, key_file: str | None, verify: bool, where: str
) -> ssl.SSLContext | None:
    if not server.startswith("https"):
        return None
    try:
        ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
        if cert_file:
            ctx.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise InputError(f"cannot load TLS settings: {exc}", file=where) from None
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _kubeconfig_paths(kubeconfig: str | None) -> tuple[list[str], str]:
    """The kubeconfig files to merge and how they were chosen (for messages)."""
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        if not os.path.isfile(path):
            raise InputError("the kubeconfig file does not exist", file=kubeconfig, field="--kubeconfig")
        return [path], kubeconfig
    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths = [os.path.expanduser(p) for p in env.split(os.pathsep) if p]
        present = [p for p in paths if os.path.isfile(p)]
        if not present:
            raise InputError(f"no file named by KUBECONFIG exists: {env}", field="KUBECONFIG")
        return present, env
    default = os.path.expanduser("~/.kube/config")
    if os.path.isfile(default):
        return [default], default
    return [], ""


def in_cluster_available() -> bool:
    """Whether kubesched runs in a pod (the service's host and port are in the environment)."""
    return bool(os.environ.get(SERVICE_HOST_ENV_NAME)) and bool(os.environ.get(SERVICE_PORT_ENV_NAME))


async def load_client_config_async(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
) -> ClientConfig:
    """Build the client configuration (see the module docstring for the order of sources);
    :class:`InputError` names what is missing or wrong."""
    in_cluster_error: InputError | None = None
    if kubeconfig is None and context is None and in_cluster_available():
        try:
            return _in_cluster(token_file, ca_file)
        except InputError as exc:  # as client-go: fall back to the kubeconfig loading rules
            in_cluster_error = exc
    paths, where = _kubeconfig_paths(kubeconfig)
    if not paths:
        if in_cluster_error is not None:
            raise in_cluster_error
        raise InputError(
            "no cluster configuration found: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, "
            f"or run in a pod ({SERVICE_HOST_ENV_NAME} is not set)"
        )
    return await _from_kubeconfig(paths, where, context)


def load_client_config(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
) -> ClientConfig:
    """:func:`load_client_config_async` for synchronous callers (not from inside an event loop)."""
    return asyncio.run(load_client_config_async(kubeconfig, context, token_file=token_file, ca_file=ca_file))


def _in_cluster(token_file: str, ca_file: str) -> ClientConfig:
    loader = InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file, try_refresh_token=False)
    configuration = Configuration()
    try:
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise InputError(f"in-cluster configuration: {exc}") from None
    server = str(configuration.host)
    return ClientConfig(
        server=server,
        ssl=_ssl_context(server, ca_file, None, None, True, ca_file),
        token_file=TokenFile(token_file),
        source="in-cluster",
    )


async def _from_kubeconfig(paths: list[str], where: str, context: str | None) -> ClientConfig:
    try:
        merged = KubeConfigMerger(os.pathsep.join(paths))
        node = merged.config
        if node is None or not isinstance(node.value, dict):
            raise InputError(
                "not a kubeconfig (expected a mapping with clusters, users and contexts)", file=where
            )
        chosen = context or node.value.get("current-context")
        if not chosen:
            raise InputError("the kubeconfig sets no current-context; pass --context", file=where)
        if chosen not in _context_names(node.value):
            field_name = "--context" if context else "current-context"
            known = ", ".join(_context_names(node.value)) or "none"
            raise InputError(
                f"context {chosen!r} is not in the kubeconfig (contexts: {known})",
                file=where,
                field=field_name,
            )
        loader = KubeConfigLoader(config_dict=node, config_base_path=None, active_context=chosen)
        configuration = Configuration()
        await loader.load_and_set(configuration)
    except InputError:
        raise
    except ConfigException as exc:
        raise InputError(str(exc), file=where) from None
    except (OSError, ValueError, TypeError, KeyError, AssertionError) as exc:
        raise InputError(f"cannot load the kubeconfig: {exc}", file=where) from None
    except Exception as exc:  # YAML errors and the like; the message names the file
        raise InputError(f"cannot load the kubeconfig: {exc}", file=where) from None
    server = str(configuration.host or "")
    if not server or server == "http://localhost":
        raise InputError(f"context {chosen!r} names a cluster without a server", file=where)
    user = loader._user  # the active context's user section (None when it names no user)
    exec_credential: ExecCredential | None = None
    token: TokenFile | None = None
    authorization = configuration.api_key.get("BearerToken")
    if user is not None and "exec" in user:
        exec_credential = ExecCredential(loader, authorization)
    elif user is not None and "tokenFile" in user and "token" not in user:
        base = os.path.dirname(getattr(user, "path", None) or paths[0])
        token = TokenFile(os.path.join(base, str(user["tokenFile"])))
    return ClientConfig(
        server=server,
        ssl=_ssl_context(
            server,
            configuration.ssl_ca_cert,
            configuration.cert_file,
            configuration.key_file,
            bool(configuration.verify_ssl),
            where,
        ),
        authorization=authorization,
        token_file=token,
        exec_credential=exec_credential,
        tls_server_name=configuration.tls_server_name,
        proxy=configuration.proxy,
        source=f"kubeconfig {where} (context {chosen})",
    )


def _context_names(config: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for entry in config.get("contexts") or []:
        value = getattr(entry, "value", entry)
        if isinstance(value, dict) and "name" in value:
            out.append(str(value["name"]))
    return out
