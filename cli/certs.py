"""``rota certs init``: a small CA, the scheduler's server certificate and client certificates.

Files in the output directory (keys mode 0600, never overwritten):
``ca.pem``/``ca-key.pem``, ``scheduler.pem``/``scheduler-key.pem`` (SANs: localhost, 127.0.0.1,
::1 and every ``--scheduler-name``), ``node-NAME.pem``/``node-NAME-key.pem`` per ``--node``
(common name NAME, unit "rota node": it may speak only for node NAME) and
``user-NAME.pem``/``user-NAME-key.pem`` per ``--user`` (for CLIs of a scheduler that requires
client certificates).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rota.tls import NODE_UNIT

CA_DAYS = 3650
LEAF_DAYS = 825


@dataclass(frozen=True)
class KeyPair:
    """A private key and its certificate."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _name(common: str, unit: str = "") -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rota")]
    if unit:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit))
    parts.append(x509.NameAttribute(NameOID.COMMON_NAME, common))
    return x509.Name(parts)


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def make_ca(common: str = "rota CA") -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common)
    cert = (
        _builder(name, name, key, CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return KeyPair(key, cert)


def make_leaf(
    ca: KeyPair, common: str, unit: str = "", hosts: Sequence[str] = (), server: bool = False
) -> KeyPair:
    """A certificate signed by ``ca``: a server one with ``hosts`` as SANs, else a client one."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(_name(common, unit), ca.cert.subject, key, LEAF_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if hosts:
        sans: list[x509.GeneralName] = []
        for host in dict.fromkeys(hosts):
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return KeyPair(key, builder.sign(ca.key, hashes.SHA256()))


def _write(path: Path, data: bytes, private: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _save(directory: Path, stem: str, pair: KeyPair) -> list[Path]:
    key_pem = pair.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}-key.pem"
    _write(key_path, key_pem, private=True)
    _write(cert_path, pair.cert.public_bytes(serialization.Encoding.PEM), private=False)
    return [cert_path, key_path]


def _load_ca(directory: Path) -> KeyPair:
    key = serialization.load_pem_private_key((directory / "ca-key.pem").read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey), "ca-key.pem is not an EC key"
    return KeyPair(key, x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes()))


def init_certs(
    directory: Path,
    scheduler_names: Sequence[str] = (),
    nodes: Sequence[str] = (),
    users: Sequence[str] = (),
) -> list[Path]:
    """Create what is missing in ``directory`` (mode 0700): the CA (kept when present, so nodes
    can be added later), the scheduler's certificate, and one client certificate per node and
    user. Returns the files written; FileExistsError for a certificate already there."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    written: list[Path] = []
    if (directory / "ca.pem").exists():
        ca = _load_ca(directory)
    else:
        ca = make_ca()
        written += _save(directory, "ca", ca)
    if not (directory / "scheduler.pem").exists():
        hosts = ["localhost", "127.0.0.1", "::1", *scheduler_names]
        written += _save(directory, "scheduler", make_leaf(ca, hosts[0], hosts=hosts, server=True))
    for node in nodes:
        written += _save(directory, f"node-{node}", make_leaf(ca, node, NODE_UNIT))
    for user in users:
        written += _save(directory, f"user-{user}", make_leaf(ca, user))
    return written
