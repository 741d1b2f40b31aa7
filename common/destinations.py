"""Where the scheduler may send a webhook: public addresses only, unless an admin allows more.

Loopback, link-local, private (RFC 1918, ULA), shared (100.64/10), multicast, unspecified,
broadcast and reserved addresses are refused, so that a job's webhook cannot reach services
beside the scheduler (SSRF) or probe which of their ports answer. An admin lists the networks
webhooks may reach anyway (``webhook_allowed_networks: [10.20.0.0/16]``). An IPv4 address
written as IPv6 (``::ffff:127.0.0.1``) is judged as the IPv4 address it is.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """CIDR networks (``10.0.0.0/8``, ``fd00::/8``; a bare address is one host); ValueError
    names the first one that is not a network."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not a network such as 10.0.0.0/8 or fd00::/8") from None
    return tuple(networks)


def address_refusal(address: str, allowed: Sequence[Network]) -> str:
    """Why a webhook may not go to ``address`` (an IP address); "" when it may."""
    try:
        ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in network for network in allowed if network.version == ip.version):
        return ""
    kind = _kind(ip)
    if not kind:
        return ""
    return (
        f"{ip} is a {kind} address; webhooks go to public addresses only unless the scheduler "
        "setting webhook_allowed_networks lists it"
    )


def _kind(ip: Address) -> str:
    """What makes ``ip`` off limits ("" for a public unicast address)."""
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    )
    for kind, hit in checks:
        if hit:
            return kind
    return "" if ip.is_global else "non-public"


def literal_host(url: str) -> str:
    """The host of ``url`` when it is an IP address written out ("" for a name or a bad URL)."""
    try:
        host = urlsplit(url).hostname or ""
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return ""
    return host


def url_refusal(url: str, allowed: Sequence[Network]) -> str:
    """Why ``url`` may not be a webhook, judged from the URL alone: its host when it is an IP
    address ("" for a host name: that is judged when the webhook is posted)."""
    host = literal_host(url)
    return address_refusal(host, allowed) if host else ""
