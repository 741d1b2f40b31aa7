"""How much of a flood of refused requests the audit log keeps.

Every refused request is an audit entry, and anyone who can reach a port can make refusals
(no token at all is enough): unchecked, one peer fills the database at hundreds of rows a
second. ``RefusalLimiter`` keeps at most ``per_minute`` unauthenticated refusals (no user
token, or an agent's refused hello) per peer host and minute, then one summary entry saying
the rest of that minute is not recorded. Admin actions, and refusals of a known user or node
(who can be found and revoked), are always kept.
"""

from __future__ import annotations

import dataclasses
import logging

from rota.scheduler.cluster.users import AuditEntry

WINDOW = 60.0  # seconds
AGENT_HELLO = "AgentService/Connect hello"  # the action of a node's hello (its token checked)
log = logging.getLogger("rota.scheduler")
MAX_PEERS = 10_000  # peers followed at once; those whose minute is over are forgotten beyond it


def peer_host(peer: str) -> str:
    """The address of a peer in gRPC's form without its port (``ipv4:10.0.0.5:4711`` ->
    ``ipv4:10.0.0.5``, ``ipv6:[::1]:80`` -> ``ipv6:[::1]``); other forms unchanged."""
    kind, sep, rest = peer.partition(":")
    if sep and kind in ("ipv4", "ipv6") and ":" in rest:
        return f"{kind}:{rest.rsplit(':', 1)[0]}"
    return peer


class RefusalLimiter:
    """Decides which audit entries are written (see the module doc); the caller's clock dates
    the entries, so windows follow it."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._windows: dict[str, list[float]] = {}  # peer host -> [window start, refusals]

    def admit(self, entry: AuditEntry) -> AuditEntry | None:
        """The entry to write for ``entry``: itself, the summary of a peer over its cap, or
        None (not recorded)."""
        if entry.allowed or (entry.user and entry.action != AGENT_HELLO):
            return entry
        host = peer_host(entry.peer)
        window = self._windows.get(host)
        if window is None or entry.time - window[0] >= WINDOW:
            if window is None and len(self._windows) >= MAX_PEERS:
                self._forget(entry.time)
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

    def _forget(self, now: float) -> None:
        for host in [h for h, w in self._windows.items() if now - w[0] >= WINDOW]:
            del self._windows[host]


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
