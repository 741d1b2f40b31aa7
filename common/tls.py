"""TLS credentials for gRPC from PEM files: the scheduler serves, the CLI and agents verify.

Errors reading a file are ``TLSFileError`` naming the file and the setting it came from.
A client certificate names who presents it in its common name: an agent's is its node name.
"""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import grpc

NODE_UNIT = "rota node"  # organizational unit of node client certificates


class TLSFileError(ValueError):
    """A certificate or key file could not be read."""


def read_pem(path: str, setting: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise TLSFileError(f"{setting}: cannot read {path}: {exc.strerror}") from None


def channel_credentials(ca: str, cert: str = "", key: str = "") -> grpc.ChannelCredentials:
    """Verify the server against ``ca``; present ``cert``/``key`` when given (mutual TLS)."""
    if bool(cert) != bool(key):
        raise TLSFileError("a client certificate needs its key and the key its certificate")
    return grpc.ssl_channel_credentials(
        root_certificates=read_pem(ca, "ca"),
        private_key=read_pem(key, "key") if key else None,
        certificate_chain=read_pem(cert, "cert") if cert else None,
    )


def server_credentials(cert: str, key: str, client_ca: str = "") -> grpc.ServerCredentials:
    """Serve ``cert``/``key``; with ``client_ca`` every client must present a certificate that
    it signed."""
    return grpc.ssl_server_credentials(
        [(read_pem(key, "tls_key"), read_pem(cert, "tls_cert"))],
        root_certificates=read_pem(client_ca, "tls_client_ca") if client_ca else None,
        require_client_auth=bool(client_ca),
    )


def http_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context for the HTTP port with the certificate gRPC serves (browsers and
    Prometheus present no client certificate, so none is asked for); TLSFileError names a file
    that cannot be read."""
    read_pem(cert, "tls_cert")
    read_pem(key, "tls_key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise TLSFileError(f"tls_cert, tls_key: cannot use {cert} with {key}: {exc}") from None
    return context


def is_loopback(listen: str) -> bool:
    """True when ``HOST:PORT`` binds only the loopback interface."""
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
