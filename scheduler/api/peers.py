"""Who is at the other end of a connection, from its verified client certificate.

With mutual TLS (``tls_client_ca``) every peer presents a certificate signed by the cluster's
CA. An agent's must be a node certificate (unit "rota node", ``rota certs init --node``) whose
common name is the node it says it is: a node certificate speaks for its node only.
"""

from __future__ import annotations

from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from rota.tls import NODE_UNIT


def _attribute(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> str:
    values = cert.subject.get_attributes_for_oid(oid)
    return str(values[0].value) if values else ""


def node_certificate_problem(context: Any, node: str) -> str:
    """Why this peer may not connect as agent of ``node``; "" when it may (or when it presented
    no certificate: then the node's join token alone decides)."""
    pem = (context.auth_context().get("x509_pem_cert") or [b""])[0]
    if not pem:
        return ""
    cert = x509.load_pem_x509_certificate(pem)
    unit = _attribute(cert, NameOID.ORGANIZATIONAL_UNIT_NAME)
    name = _attribute(cert, NameOID.COMMON_NAME)
    if unit != NODE_UNIT:
        return f"the client certificate of {name!r} is not a node certificate"
    if name != node:
        return f"the client certificate is for node {name!r}, not for node {node!r}"
    return ""
