"""How much of a flood of refused requests the audit log keeps.

Every refused request is an audit entry, and anyone who can reach a port can make refusals
(no token at all is enough): unchecked, one peer fills the database at hundreds of rows a
second. ``RefusalLimiter`` keeps at most ``per_minute`` unauthenticated refusals (no user
token, or an agent's refused hello) per peer host and minute, then one summary entry saying
the rest of that minute is not recorded. A host is what one machine can send from whatever
address it picks (``peer_host``): every loopback address is one, and so is each IPv6 /64.
Admin actions, and refusals of a known user or node (who can be found and revoked), are
always kept.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
from urllib.parse import unquote

from rota.scheduler.cluster.users import AuditEntry

WINDOW = 60.0  # seconds
AGENT_HELLO = "AgentService/Connect hello"  # the action of a node's hello (its token checked)
log = logging.getLogger("rota.scheduler")
MAX_PEERS = 10_000  # peers followed at once; beyond, the one whose minute began first goes
LOOPBACK = "ipv4:127.0.0.0/8"  # the host of every loopback address (this machine's own)


def peer_host(peer: str) -> str:
    """The host a peer in gRPC's form sends from, without its port: ``ipv4:10.0.0.5:4711`` ->
    ``ipv4:10.0.0.5``; any loopback address (``127.0.0.9``, ``::1``, ``::ffff:127.0.0.1``) ->
    ``LOOPBACK``, as every address of 127.0.0.0/8 is this machine's; an IPv6 address -> its
    /64 (``ipv6:[2001:db8:1:2::]/64``), as a host picks its own addresses in its network's;
    other forms unchanged."""
    kind, sep, rest = peer.partition(":")
    if not (sep and kind in ("ipv4", "ipv6") and ":" in rest):
        return peer
    address = rest.rsplit(":", 1)[0]
    try:
        ip = ipaddress.ip_address(unquote(address).strip("[]"))
    except ValueError:
        return f"{kind}:{address}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return LOOPBACK
    if isinstance(ip, ipaddress.IPv6Address):
        return f"ipv6:[{ipaddress.IPv6Network((ip, 64), strict=False).network_address}]/64"
    return f"ipv4:{ip}"


class RefusalLimiter:
    """Decides which audit entries are written (see the module doc); the caller's clock dates
    the entries, so windows follow it."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        # peer host -> [window start, refusals], the earliest start first
        self._windows: dict[str, list[float]] = {}

    def admit(self, entry: AuditEntry) -> AuditEntry | None:
        """The entry to write for ``entry``: itself, the summary of a peer over its cap, or
        None (not recorded)."""
        if entry.allowed or (entry.user and entry.action != AGENT_HELLO):
            return entry
        host = peer_host(entry.peer)
        window = self._windows.get(host)
        if window is None or entry.time - window[0] >= WINDOW:
            self._windows.pop(host, None)
            while len(self._windows) >= MAX_PEERS:  # constant time, however many peers
                del self._windows[next(iter(self._windows))]
            window = self._windows[host] = [entry.time, 0]
        window[1] += 1
        if window[1] <= self.per_minute:
            return entry
        if window[1] == self.per_minute + 1:
            return dataclasses.replace(
                entry,
                user="",
                action="audit",
                target="",
                peer=host,
                detail=(
                    f"over {self.per_minute} refused requests from {host} within a minute: "
                    "the rest of that minute are not recorded (audit_refusals_per_minute)"
                ),
            )
        return None


def agent_refusal(
    node: str, peer: str, what: str, target: str, why: str, when: float
) -> AuditEntry:
    """The audit entry of a refused message (``what``) of ``node``'s agent stream, logged as a
    warning: every agent-stream refusal is made here."""
    log.warning("refused %s of node %s: %s", what, node, why)
    return AuditEntry(
        when,
        f"node:{node}",
        f"AgentService/Connect {what}",
        target,
        peer,
        allowed=False,
        detail=why,
    )
