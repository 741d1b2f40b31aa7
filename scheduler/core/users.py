"""Users, their tokens and the audit log.

A token is 32 random bytes (URL-safe text), shown once; only its SHA-256 is stored. Accepted
tokens are kept in memory (hash -> principal) so ``authenticate`` answers from any thread
without the store; every change goes through this service on the core thread and updates that
map. A token not in the map is looked up in the store once (``load``, core thread), so a user
made by ``rota admin-token`` while the scheduler runs is accepted at once.
"""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Callable, Sequence

from rota.inputs import SpecError, check_account, check_host_id, check_name
from rota.scheduler.cluster.users import AuditEntry, Principal, UserRecord
from rota.scheduler.core.audit import RefusalLimiter
from rota.scheduler.core.errors import AlreadyExists, NotFound, UserError
from rota.scheduler.core.tokens import hash_token, new_token
from rota.scheduler.store.protocols import UserRepository

_SELECTOR = 16  # hex digits of a token's hash that find it in memory


@dataclasses.dataclass(frozen=True)
class UserChange:
    """What ``gadmin user update`` changes; None keeps the user's. ``ids``: (uid, gid), or
    (None, None) to clear them."""

    accounts: tuple[str, ...] | None = None
    default_account: str | None = None
    ids: tuple[int | None, int | None] | None = None
    admin: bool | None = None


MAX_AUDIT = 10_000  # entries one ListAudit answers with at most
PRUNE_EVERY = 3600.0  # seconds between audit retention prunes


class UsersService:
    """Adds, lists and revokes users, issues tokens, authenticates, keeps the audit log."""

    def __init__(
        self,
        store: UserRepository,
        clock: Callable[[], float],
        limiter: RefusalLimiter | None = None,
        audit_retention: float = 0.0,
    ) -> None:
        """``limiter`` thins floods of refusals (None: every entry is kept);
        ``audit_retention``: seconds entries are kept (0: forever, see ``prune_audit``)."""
        self.store = store
        self.clock = clock
        self.limiter = limiter
        self.audit_retention = audit_retention
        self._pruned_at = -PRUNE_EVERY
        # hash prefix -> (full hash, principal): the prefix finds, compare_digest decides
        self._accepted: dict[str, tuple[str, Principal]] = {}
        self._ids: dict[str, tuple[int, int]] = {}  # user -> (uid, gid) set by `gadmin user`
        self._revoked: set[str] = set()  # users revoked (gadmin user revoke), not re-enabled
        self.refresh()

    # ------------------------------------------------------------ authentication

    def authenticate(self, token: str) -> Principal | None:
        """The principal of ``token`` if it is current (any thread; memory only)."""
        return self.authenticate_hash(hash_token(token))

    def authenticate_hash(self, digest: str) -> Principal | None:
        """The principal whose current token hashes to ``digest`` (any thread; memory only)."""
        known = self._accepted.get(digest[:_SELECTOR])
        if known is None or not hmac.compare_digest(known[0], digest):
            return None
        return known[1]

    def refresh(self) -> None:
        """Accept exactly the current tokens of the store (core thread; the engine's tick), so
        a token replaced or revoked by another process (``rota admin-token``) stops working.
        The new maps are built aside and swapped in whole: ``authenticate`` (event loop) sees
        the old map or the new one, never a half-filled one."""
        accepted: dict[str, tuple[str, Principal]] = {}
        ids: dict[str, tuple[int, int]] = {}
        revoked: set[str] = set()
        for user in self.store.users():
            if user.revoked:
                revoked.add(user.name)
            elif user.token_hash:
                _enter(user, accepted, ids)
        self._accepted, self._ids, self._revoked = accepted, ids, revoked

    def revoked(self, name: str) -> bool:
        """Whether user ``name`` is revoked (memory only; any thread): their jobs never start."""
        return name in self._revoked

    def ids_of(self, name: str) -> tuple[int, int] | None:
        """The (uid, gid) a job of user ``name`` runs as, when an admin set them (memory
        only); None lets the node decide (its passwd entry, else its default)."""
        return self._ids.get(name)

    def _accept(self, user: UserRecord) -> None:
        _enter(user, self._accepted, self._ids)

    def _forget(self, user: UserRecord) -> None:
        self._accepted.pop(user.token_hash[:_SELECTOR], None)

    def load(self, token: str) -> Principal | None:
        """``authenticate``, asking the store when memory does not know the token (core
        thread)."""
        return self.load_hash(hash_token(token))

    def load_hash(self, digest: str) -> Principal | None:
        """``authenticate_hash``, asking the store when memory does not know the hash (core
        thread)."""
        found = self.authenticate_hash(digest)
        if found is not None:
            return found
        user = self.store.by_token_hash(digest)
        if user is None or user.revoked:
            return None
        self._accept(user)
        return user.principal()

    # ------------------------------------------------------------ users

    def add(
        self,
        name: str,
        admin: bool = False,
        accounts: Sequence[str] = (),
        default_account: str = "",
        uid: int | None = None,
        gid: int | None = None,
    ) -> tuple[UserRecord, str]:
        """Create a user; returns it and its token (shown once). AlreadyExists when it
        exists."""
        name = name.strip()
        try:
            check_name("name", name)
            for i, account in enumerate(accounts):
                check_account(f"accounts[{i}]", account)
            if default_account:
                check_account("default_account", default_account)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        if not name:
            raise UserError("name: a user name is required")
        if default_account and accounts and default_account not in accounts:
            raise UserError(
                f"default_account: {default_account!r} is not one of the user's accounts "
                f"({', '.join(accounts)})"
            )
        if (uid is None) != (gid is None):
            raise UserError("uid, gid: give both or neither")
        try:
            for field_name, value in (("uid", uid), ("gid", gid)):
                if value is not None:
                    check_host_id(field_name, value)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        if self.store.user(name) is not None:
            raise AlreadyExists(f"user {name} exists; `gadmin user token {name}` gives a new token")
        token = new_token()
        user = UserRecord(
            name=name,
            admin=admin,
            accounts=tuple(dict.fromkeys(accounts)),
            default_account=default_account,
            uid=uid,
            gid=gid,
            token_hash=hash_token(token),
            created=self.clock(),
        )
        self.store.save(user)
        self._accept(user)
        return user, token

    def all(self) -> list[UserRecord]:
        return self.store.users()

    def update(self, name: str, change: UserChange) -> UserRecord:
        """Apply ``change`` to user ``name`` (NotFound for an unknown one) and keep their
        token; UserError names a bad field, or a change that would leave no admin, and
        changes nothing."""
        user = self.get(name)
        accounts = user.accounts if change.accounts is None else change.accounts
        default = user.default_account if change.default_account is None else change.default_account
        uid, gid = (user.uid, user.gid) if change.ids is None else change.ids
        admin = user.admin if change.admin is None else change.admin
        try:
            for i, account in enumerate(accounts):
                check_account(f"accounts[{i}]", account)
            if default:
                check_account("default_account", default)
            for field_name, value in (("uid", uid), ("gid", gid)):
                if value is not None:
                    check_host_id(field_name, value)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        if (uid is None) != (gid is None):
            raise UserError("uid, gid: give both or neither")
        if default and accounts and default not in accounts:
            raise UserError(
                f"default_account: {default!r} is not one of the user's accounts "
                f"({', '.join(accounts)})"
            )
        if user.admin and not admin:
            self._keep_an_admin("admin", user)
        updated = dataclasses.replace(
            user,
            accounts=tuple(dict.fromkeys(accounts)),
            default_account=default,
            uid=uid,
            gid=gid,
            admin=admin,
        )
        self._forget(user)
        self._ids.pop(name, None)
        self.store.save(updated)
        if not updated.revoked:
            self._accept(updated)
        return updated

    def revoke(self, name: str) -> UserRecord:
        """The user's token stops working at once; NotFound for an unknown user, UserError
        for the last admin whose token works."""
        user = self.get(name)
        if user.admin and not user.revoked:
            self._keep_an_admin("name", user)
        self._forget(user)
        revoked = dataclasses.replace(user, revoked=True)
        self.store.save(revoked)
        self._revoked.add(revoked.name)
        return revoked

    def new_token(self, name: str) -> tuple[UserRecord, str]:
        """A new token for ``name`` (un-revoking them); the old token stops working."""
        user = self.get(name)
        token = new_token()
        self._forget(user)
        renewed = dataclasses.replace(user, token_hash=hash_token(token), revoked=False)
        self.store.save(renewed)
        self._revoked.discard(renewed.name)
        self._accept(renewed)
        return renewed, token

    def bootstrap_admin(self, name: str) -> str:
        """Make ``name`` an admin (creating the user if needed) with a new token; returns the
        token. For ``rota admin-token`` and ``rota up`` on the scheduler host."""
        if self.store.user(name) is None:
            return self.add(name, admin=True)[1]
        self.store.save(dataclasses.replace(self.get(name), admin=True))
        return self.new_token(name)[1]

    def _keep_an_admin(self, field_name: str, user: UserRecord) -> None:
        """UserError naming ``field_name`` when ``user`` is the last admin whose token works."""
        if not any(u.admin and not u.revoked and u.name != user.name for u in self.store.users()):
            raise UserError(
                f"{field_name}: {user.name} is the last admin; make another user an admin first"
            )

    def get(self, name: str) -> UserRecord:
        """The stored user; NotFound names an unknown one."""
        user = self.store.user(name.strip())
        if user is None:
            raise NotFound(f"user {name} does not exist (gadmin user list)")
        return user

    # ------------------------------------------------------------ audit

    def record(self, entry: AuditEntry) -> None:
        kept = self.limiter.admit(entry) if self.limiter is not None else entry
        if kept is not None:
            self.store.record(kept)

    def prune_audit(self) -> int:
        """Delete entries older than ``audit_retention`` (at most once per ``PRUNE_EVERY``
        seconds of the clock; never with a retention of 0); returns how many went."""
        now = self.clock()
        if self.audit_retention <= 0 or now - self._pruned_at < PRUNE_EVERY:
            return 0
        self._pruned_at = now
        return self.store.prune_audit(now - self.audit_retention)

    def audit(self, since: float = 0.0, limit: int = 0) -> list[AuditEntry]:
        return self.store.audit(since, min(limit or 1000, MAX_AUDIT))


def _enter(
    user: UserRecord,
    accepted: dict[str, tuple[str, Principal]],
    ids: dict[str, tuple[int, int]],
) -> None:
    """Put ``user``'s token in ``accepted`` and their uid/gid, when set, in ``ids``."""
    accepted[user.token_hash[:_SELECTOR]] = (user.token_hash, user.principal())
    if user.uid is not None and user.gid is not None:
        ids[user.name] = (user.uid, user.gid)
