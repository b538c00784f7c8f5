"""The serving identity kept in the data dir: a self-signed CA, a serving certificate, a bearer
token, and a kubeconfig that uses them. Made once; a restart reuses them, so clients keep working."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True, slots=True)
class Identity:
    ca_cert: Path
    cert: Path
    key: Path
    token: str

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self.cert), str(self.key))
        return ctx


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def ensure_identity(data_dir: Path, hosts: list[str]) -> Identity:
    """Load the CA, serving certificate and token from ``data_dir``, making what is missing. The
    serving certificate is made again when it does not cover ``hosts``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = data_dir / "ca.crt", data_dir / "ca.key"
    cert_path, key_path = data_dir / "apiserver.crt", data_dir / "apiserver.key"
    token_path = data_dir / "token"
    now = datetime.datetime.now(datetime.UTC)
    if ca_cert_path.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("kubesched-ca"))
            .issuer_name(_name("kubesched-ca"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(
            ca_key_path,
            ca_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        ca_cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        cert_path.unlink(missing_ok=True)
    wanted = sorted(set(hosts) | {"127.0.0.1", "localhost"})
    if not cert_path.exists() or not key_path.exists() or not _covers(cert_path, wanted):
        key = ec.generate_private_key(ec.SECP256R1())
        sans: list[x509.GeneralName] = []
        for host in wanted:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name("kubesched-apiserver"))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=825))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(
            key_path,
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if not token_path.exists():
        _write_private(token_path, secrets.token_urlsafe(32).encode())
    return Identity(ca_cert_path, cert_path, key_path, token_path.read_text().strip())


def _covers(cert_path: Path, hosts: list[str]) -> bool:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in san.get_values_for_type(x509.IPAddress)} | set(
        san.get_values_for_type(x509.DNSName)
    )
    return set(hosts) <= have


def write_kubeconfig(path: Path, server: str, identity: Identity) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kubesched",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(identity.ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "kubesched-admin", "user": {"token": identity.token}}],
        "contexts": [{"name": "kubesched", "context": {"cluster": "kubesched", "user": "kubesched-admin"}}],
        "current-context": "kubesched",
        "preferences": {},
    }
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
