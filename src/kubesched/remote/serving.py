"""The TLS identity of ``kubesched run``'s health and metrics endpoint, as kube-scheduler's secure
serving makes it:

- ``--tls-cert-file`` and ``--tls-private-key-file`` given: that pair (the certificate file may
  carry its chain after it);
- else ``--cert-dir`` given: ``kubesched.crt``/``kubesched.key`` there, made self-signed on the first
  start and reused afterwards;
- else a self-signed pair made in memory at each start (kube-scheduler's default: its certificate
  directory is empty).

A self-signed pair is a CA ``localhost-ca@<unix time>`` and a serving certificate ``localhost@<unix
time>`` it signs, for ``localhost`` and ``127.0.0.1``, valid for a year from an hour ago (upstream's
``GenerateSelfSignedCertKey``). ``--client-ca-file`` makes the server ask for a client certificate
(optional) and verify it against that bundle.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubesched.errors import InputError

#: The file names under ``--cert-dir`` (kube-scheduler's pair name is ``kube-scheduler``).
PAIR_NAME = "kubesched"
SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)


@dataclass(frozen=True, slots=True)
class ServingOptions:
    """``--tls-cert-file``, ``--tls-private-key-file``, ``--cert-dir``, ``--client-ca-file``."""

    cert_file: str | None = None
    key_file: str | None = None
    cert_dir: str | None = None
    client_ca_file: str | None = None

    def validate(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            given, missing = (
                ("--tls-cert-file", "--tls-private-key-file")
                if self.cert_file
                else ("--tls-private-key-file", "--tls-cert-file")
            )
            raise InputError(f"{given} needs {missing} too", field=missing)
        for flag, path in (
            ("--tls-cert-file", self.cert_file),
            ("--tls-private-key-file", self.key_file),
            ("--client-ca-file", self.client_ca_file),
        ):
            if path and not os.path.isfile(path):
                raise InputError(f"no such file: {path}", field=flag)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def self_signed_pair(
    host: str = SELF_SIGNED_HOST, ips: tuple[str, ...] = SELF_SIGNED_IPS
) -> tuple[bytes, bytes]:
    """A serving certificate (followed by the CA that signed it) and its key, both PEM."""
    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp())
    not_before, not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=365)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{host}-ca@{stamp}")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(host)]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{host}@{stamp}"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return chain, key_pem


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def ssl_context(options: ServingOptions) -> ssl.SSLContext:
    """The server side of the endpoint's TLS; an :class:`InputError` naming the flag when a file
    cannot be used."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.cert_file and options.key_file:
        _load(ctx, options.cert_file, options.key_file, "--tls-cert-file")
    elif options.cert_dir:
        directory = Path(options.cert_dir)
        cert, key = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
        if not (cert.is_file() and key.is_file()):
            try:
                directory.mkdir(parents=True, exist_ok=True)
                chain, key_pem = self_signed_pair()
                _write_private(key, key_pem)
                cert.write_bytes(chain)
            except OSError as exc:
                raise InputError(
                    f"cannot write the self-signed certificate: {exc}", field="--cert-dir"
                ) from None
        _load(ctx, str(cert), str(key), "--cert-dir")
    else:
        chain, key_pem = self_signed_pair()
        # ssl loads a pair from files only: a private directory that lives for the load.
        with tempfile.TemporaryDirectory(prefix="kubesched-serving-") as tmp:
            cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert_path.write_bytes(chain)
            _write_private(key_path, key_pem)
            _load(ctx, str(cert_path), str(key_path), "--tls-cert-file")
    if options.client_ca_file:
        try:
            ctx.load_verify_locations(cafile=options.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"cannot load {options.client_ca_file}: {exc}", field="--client-ca-file"
            ) from None
        ctx.verify_mode = ssl.CERT_OPTIONAL
    else:
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load(ctx: ssl.SSLContext, cert: str, key: str, flag: str) -> None:
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise InputError(f"cannot load the pair {cert}, {key}: {exc}", field=flag) from None


__all__ = ["PAIR_NAME", "ServingOptions", "self_signed_pair", "ssl_context"]
