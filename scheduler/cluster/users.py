"""Users, the principal a request acts as, and audit entries (domain types, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class UserRecord:
    """A user as stored: ``token_hash`` is the SHA-256 of their current token ("" = none)."""

    name: str
    admin: bool = False
    accounts: tuple[str, ...] = ()
    default_account: str = ""
    uid: int | None = None
    gid: int | None = None
    token_hash: str = ""
    revoked: bool = False
    created: float = 0.0

    def principal(self) -> Principal:
        return Principal(
            self.name, self.admin, self.accounts, self.default_account, self.uid, self.gid
        )


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the user of the token it carried."""

    user: str
    admin: bool = False
    accounts: tuple[str, ...] = ()
    default_account: str = ""
    uid: int | None = None
    gid: int | None = None

    @property
    def allowed_accounts(self) -> tuple[str, ...]:
        """The accounts the user may submit to: those given, else only their own name."""
        return self.accounts or (self.user,)

    @property
    def account(self) -> str:
        """The account of a job that names none: the default account, else the first
        account, else the user's name."""
        return self.default_account or self.allowed_accounts[0]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An admin action or a refused request: who, what, which target, when, from where."""

    time: float
    user: str
    action: str
    target: str = ""
    peer: str = ""
    allowed: bool = True
    detail: str = ""
