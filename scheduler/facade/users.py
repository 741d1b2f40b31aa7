"""UserService: users, their tokens, the audit log (admins: ``authz``), and authentication."""

from __future__ import annotations

from collections.abc import Sequence

from rota.scheduler.cluster.users import AuditEntry, Principal, UserRecord
from rota.scheduler.core import authz
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core.users import UserChange
from rota.scheduler.core_thread import Executor
from rota.scheduler.store.protocols import WebSessionRepository


class UsersFacade:
    """Tokens to principals, and managing users (admins only)."""

    def __init__(self, services: Services, core: Executor, steps: CoreSteps) -> None:
        self.services = services
        self.core = core
        self.steps = steps

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a current token, from memory (no thread hop)."""
        return self.services.users.authenticate(token)

    async def load_principal(self, token: str) -> Principal | None:
        """The principal of a current token the memory does not know yet (store lookup)."""
        return await self.core.call(self.services.users.load, token)

    def authenticate_hash(self, token_hash: str) -> Principal | None:
        """The principal whose current token hashes to ``token_hash``, from memory."""
        return self.services.users.authenticate_hash(token_hash)

    async def load_principal_hash(self, token_hash: str) -> Principal | None:
        """``authenticate_hash`` for a hash the memory does not know yet (store lookup)."""
        return await self.core.call(self.services.users.load_hash, token_hash)

    @property
    def web_sessions(self) -> WebSessionRepository:
        """The stored dashboard logins; blocking: call them off the event loop."""
        return self.services.web_sessions

    async def add_user(
        self,
        name: str,
        admin: bool,
        accounts: Sequence[str],
        default_account: str,
        uid: int | None,
        gid: int | None,
        who: Principal,
    ) -> tuple[UserRecord, str]:
        authz.require("users.manage", who)
        users = self.services.users
        return await self.core.call(users.add, name, admin, accounts, default_account, uid, gid)

    async def update_user(self, name: str, change: UserChange, who: Principal) -> UserRecord:
        authz.require("users.manage", who)
        return await self.core.call(self.services.users.update, name, change)

    async def list_users(self, who: Principal) -> list[UserRecord]:
        authz.require("users.manage", who)
        return await self.core.call(self.services.users.all)

    async def revoke_user(self, name: str, who: Principal) -> UserRecord:
        """Revoke the user's token and hold their pending jobs (UserRevoked)."""
        authz.require("users.manage", who)
        return await self.core.call(self.steps.revoke, name)

    async def new_token(self, name: str, who: Principal) -> tuple[UserRecord, str]:
        authz.require("users.manage", who)
        return await self.core.call(self.services.users.new_token, name)

    async def who_am_i(self, who: Principal) -> UserRecord:
        """The caller's own user: the one its token names."""
        return await self.core.call(self.services.users.get, who.user)

    async def record(self, entry: AuditEntry) -> None:
        """Append to the audit log."""
        await self.core.call(self.services.users.record, entry)

    async def audit(self, since: float, limit: int, who: Principal) -> list[AuditEntry]:
        authz.require("users.manage", who)
        return await self.core.call(self.services.users.audit, since, limit)
