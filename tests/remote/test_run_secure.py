"""``kubesched run``'s health and metrics endpoint as kube-scheduler serves its own: HTTPS, a bearer
token reviewed by the API server (TokenReview), ``/metrics`` authorized by it (SubjectAccessReview),
the health paths open to anyone, and the answers of both reviews kept for their TTLs.

Here the API server is ``kubesched serve``: it knows one token (its admin's, in
``system:masters``) and refuses anonymous users; against kube-apiserver see
``test_run_secure_refcp.py``."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from hypothesis import example, given
from hypothesis import strategies as st
from tests.remote.conftest import Cluster, started_runners

from kubesched.errors import InputError
from kubesched.remote.delegated_auth import AuthOptions, ExpiringCache, path_allowed
from kubesched.remote.run import Runner, RunOptions
from kubesched.remote.serving import ServingOptions, self_signed_pair, ssl_context


@pytest.fixture
def start_runner() -> Iterator[Callable[..., Runner]]:
    yield from started_runners(bind_address="127.0.0.1", port=0)


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def get(port: int, path: str, token: str | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=_insecure(), timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        raw = resp.read().decode()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw


def _delegating(cluster: Cluster, **auth: Any) -> dict[str, Any]:
    """RunOptions that review through ``cluster`` on a free port."""
    kubeconfig = str(cluster.kubeconfig)
    return {
        "port": _free_port(),
        "auth": AuthOptions(
            authentication_kubeconfig=kubeconfig, authorization_kubeconfig=kubeconfig, **auth
        ),
    }


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_metrics_need_a_token_the_api_server_accepts(cluster: Cluster, start_runner: Any) -> None:
    runner = start_runner(cluster, **_delegating(cluster))
    assert runner.health_server is not None and runner.health_server.url.startswith("https://")
    port = runner.health_server.port
    # Anonymous: authenticated as system:anonymous, which the API server does not authorize.
    code, body = get(port, "/metrics")
    assert code == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    # A token the API server does not know: 401, on every path (authentication comes first).
    for path in ("/metrics", "/healthz"):
        code, body = get(port, path, "not-a-token")
        assert code == 401, path
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
    code, body = get(port, "/metrics", cluster.token)
    assert code == 200 and "scheduler_schedule_attempts_total" in body
    # Health paths need no token; a path under them is not always allowed.
    for path in ("/healthz", "/livez", "/readyz", "/readyz?verbose"):
        assert get(port, path)[0] == 200, path
    assert get(port, "/readyz/informer-sync")[0] == 403
    assert get(port, "/readyz/informer-sync", cluster.token)[0] == 200


def test_plain_http_is_not_served(cluster: Cluster, start_runner: Any) -> None:
    runner = start_runner(cluster, **_delegating(cluster))
    assert runner.health_server is not None
    conn = http.client.HTTPConnection("127.0.0.1", runner.health_server.port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        status: int | None = conn.getresponse().status
    except (http.client.HTTPException, ConnectionError):
        status = None  # the TLS server drops a request that is not a TLS handshake
    finally:
        conn.close()
    assert status is None


def test_reviews_are_cached_for_their_ttls(cluster: Cluster, start_runner: Any) -> None:
    runner = start_runner(cluster, **_delegating(cluster))
    assert runner.health_server is not None and runner.auth is not None
    port = runner.health_server.port
    for _ in range(3):
        assert get(port, "/metrics", cluster.token)[0] == 200
        assert get(port, "/metrics", "bad")[0] == 401
        assert get(port, "/metrics")[0] == 403
    tokens, access = runner.auth.tokens, runner.auth.access
    assert tokens is not None and access is not None
    # One review per token (the good and the bad), one access review for the anonymous user;
    # system:masters never needs one.
    assert tokens.reviews == 2
    assert access.reviews == 1


def test_without_review_kubeconfigs_only_the_health_paths_are_served(
    cluster: Cluster, start_runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    runner = start_runner(cluster, port=_free_port())
    assert runner.health_server is not None
    port = runner.health_server.port
    assert get(port, "/healthz")[0] == 200
    # Tokens are not looked at: the request is anonymous, and nobody can authorize it.
    assert get(port, "/metrics", cluster.token)[0] == 403
    assert get(port, "/metrics")[0] == 403


def test_always_allowed_paths_are_configurable(cluster: Cluster, start_runner: Any) -> None:
    runner = start_runner(cluster, **_delegating(cluster, always_allow_paths=("/metrics", "/ready*")))
    assert runner.health_server is not None
    port = runner.health_server.port
    assert get(port, "/metrics")[0] == 200
    assert get(port, "/readyz/informer-sync")[0] == 200
    assert get(port, "/healthz")[0] == 403


def test_a_given_certificate_is_served(cluster: Cluster, start_runner: Any, tmp_path: Path) -> None:
    chain, key = self_signed_pair("kubesched.example", ("127.0.0.1",))
    (tmp_path / "tls.crt").write_bytes(chain)
    (tmp_path / "tls.key").write_bytes(key)
    serving = ServingOptions(cert_file=str(tmp_path / "tls.crt"), key_file=str(tmp_path / "tls.key"))
    runner = start_runner(cluster, serving=serving, **_delegating(cluster))
    assert runner.health_server is not None
    ca = x509.load_pem_x509_certificates(chain)[1]
    (tmp_path / "ca.crt").write_bytes(chain[chain.index(b"-----BEGIN", 10) :])
    ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    conn = http.client.HTTPSConnection("127.0.0.1", runner.health_server.port, context=ctx, timeout=10)
    conn.request("GET", "/healthz")
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (200, b"ok")
    conn.close()
    assert ca.subject.rfc4514_string().startswith("CN=kubesched.example-ca@")


def test_client_certificates_are_users(cluster: Cluster, start_runner: Any, tmp_path: Path) -> None:
    """A certificate signed by --client-ca-file authenticates its Common Name, in its Organizations."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clients")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "prometheus"),
                ]
            )
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(ca_key, hashes.SHA256())
    )
    (tmp_path / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "c.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "c.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    serving = ServingOptions(client_ca_file=str(tmp_path / "ca.crt"))
    runner = start_runner(cluster, serving=serving, **_delegating(cluster))
    assert runner.health_server is not None
    ctx = _insecure()
    ctx.load_cert_chain(str(tmp_path / "c.crt"), str(tmp_path / "c.key"))
    conn = http.client.HTTPSConnection("127.0.0.1", runner.health_server.port, context=ctx, timeout=10)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    conn.close()
    assert get(runner.health_server.port, "/metrics")[0] == 403


# -- the parts -----------------------------------------------------------------------------------


#: Upstream's path authorizer table (TestNewAuthorizer): always-allowed paths, the paths allowed,
#: the paths left to the next authorizer, and whether the paths are refused.
PATH_CASES = [
    ("inner star", ["/foo*bar"], [], [], True),
    ("double star", ["/foo**"], [], [], True),
    ("empty", [], [], ["/"], False),
    ("slash", ["/"], ["/"], ["/foo", "//"], False),
    ("foo", ["/foo"], ["/foo", "foo"], ["/", "", "/bar", "/foo/", "/fooooo", "//foo"], False),
    ("foo slash", ["/foo/"], ["/foo/"], ["/", "", "/bar", "/foo", "/fooooo"], False),
    ("foo slash star", ["/foo/*"], ["/foo/", "/foo/bar/bla"], ["/", "", "/foo", "/bar", "/fooooo"], False),
    ("foo bar", ["/foo", "/bar"], ["/foo", "/bar"], ["/", "", "/foo/", "/bar/", "/fooooo"], False),
    ("foo star", ["/foo*"], ["/foo", "/foooo"], ["/", "", "/fo", "/bar"], False),
    ("star", ["/*"], ["/", "", "/foo", "/foooo"], [], False),
]


@pytest.mark.parametrize(
    ("name", "paths", "allowed", "no_opinion", "want_err"), PATH_CASES, ids=[c[0] for c in PATH_CASES]
)
def test_always_allowed_paths(
    name: str, paths: list[str], allowed: list[str], no_opinion: list[str], want_err: bool
) -> None:
    options = AuthOptions(always_allow_paths=tuple(paths))
    if want_err:
        with pytest.raises(InputError) as err:
            options.validate()
        assert err.value.field == "--authorization-always-allow-paths"
        assert err.value.message.startswith("only trailing * allowed in ")
        return
    options.validate()
    for path in allowed:
        assert path_allowed(options.always_allow_paths, path), path
    for path in no_opinion:
        assert not path_allowed(options.always_allow_paths, path), path


def test_the_cache_forgets_after_the_ttl_and_keeps_a_bounded_number() -> None:
    now = [0.0]
    cache = ExpiringCache(size=3, clock=lambda: now[0])
    cache.put("a", 1, 10.0)
    cache.put("b", 2, 1.0)
    cache.put("zero", 3, 0.0)  # a TTL of 0 keeps nothing
    assert (cache.get("a"), cache.get("b"), cache.get("zero")) == (1, 2, None)
    now[0] = 5.0
    assert (cache.get("a"), cache.get("b")) == (1, None)
    for key in "cdef":
        cache.put(key, key, 10.0)
    assert len(cache) == 3 and cache.get("a") is None and cache.get("f") == "f"


def test_the_self_signed_certificate_is_upstreams() -> None:
    chain, _key = self_signed_pair()
    cert, ca = x509.load_pem_x509_certificates(chain)
    assert cert.issuer == ca.subject
    assert cert.subject.rfc4514_string().startswith("CN=localhost@")
    assert ca.subject.rfc4514_string().startswith("CN=localhost-ca@")
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    days = (cert.not_valid_after_utc - cert.not_valid_before_utc).days
    assert days == 365


def test_cert_dir_keeps_the_pair_across_starts(tmp_path: Path) -> None:
    options = ServingOptions(cert_dir=str(tmp_path / "certs"))
    ssl_context(options)
    first = (tmp_path / "certs" / "kubesched.crt").read_bytes()
    assert (tmp_path / "certs" / "kubesched.key").stat().st_mode & 0o077 == 0
    ssl_context(options)
    assert (tmp_path / "certs" / "kubesched.crt").read_bytes() == first


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (ServingOptions(cert_file="/nonexistent.crt", key_file="/nonexistent.key"), "--tls-cert-file"),
        (ServingOptions(cert_file="/etc/hostname"), "--tls-private-key-file"),
        (ServingOptions(client_ca_file="/nonexistent-ca.crt"), "--client-ca-file"),
    ],
)
def test_bad_serving_flags_are_located(options: ServingOptions, field: str) -> None:
    with pytest.raises(InputError) as err:
        RunOptions(serving=options).validate()
    assert err.value.field == field


@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.floats(0, 5), st.floats(0, 3)),
        max_size=60,
    )
)
@example([(1, 5.0, 0.0), (1, 0.0, 0.0)])  # an answer not to keep replaces the one kept
def test_the_cache_is_bounded_and_answers_only_fresh_values(steps: list[tuple[int, float, float]]) -> None:
    """Whatever is put, at most ``size`` answers are kept, and an answer comes back only while its
    TTL runs and it was the last one put for its key."""
    now = [0.0]
    cache = ExpiringCache(size=4, clock=lambda: now[0])
    latest: dict[int, tuple[int, float]] = {}
    for i, (key, ttl, wait) in enumerate(steps):
        cache.put(key, i, ttl)
        if ttl > 0:
            latest[key] = (i, now[0] + ttl)
        else:
            latest.pop(key, None)
        now[0] += wait
        assert len(cache) <= 4
        for k in range(10):
            got = cache.get(k)
            if got is not None:
                value, expires = latest[k]
                assert got == value and now[0] < expires
