"""UserService servicer (grpc.aio): users, their tokens and the audit log (admins only), and
``WhoAmI`` (anyone with a token)."""

from __future__ import annotations

from typing import Any

from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import unary
from rota.scheduler.cluster.users import UserRecord
from rota.scheduler.core.users import UserChange
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


def user_to_pb(user: UserRecord) -> pb.User:
    return pb.User(
        name=user.name,
        admin=user.admin,
        accounts=list(user.accounts),
        default_account=user.default_account,
        uid=-1 if user.uid is None else user.uid,
        gid=-1 if user.gid is None else user.gid,
        revoked=user.revoked,
        created=user.created,
    )


class UserServicer(pb_grpc.UserServiceServicer):
    """``gadmin user add|update|list|revoke|token`` and ``gadmin audit``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def AddUser(self, request: pb.AddUserRequest, context: Any) -> pb.UserTokenResponse:
        user, token = await self.engine.users.add_user(
            request.name,
            request.admin,
            list(request.accounts),
            request.default_account,
            None if request.uid < 0 else request.uid,
            None if request.gid < 0 else request.gid,
            caller(),
        )
        return pb.UserTokenResponse(user=user_to_pb(user), token=token)

    @unary
    async def UpdateUser(self, request: pb.UpdateUserRequest, context: Any) -> pb.User:
        ids = (
            (None if request.uid < 0 else request.uid, None if request.gid < 0 else request.gid)
            if request.set_ids
            else None
        )
        change = UserChange(
            accounts=tuple(request.accounts) if request.set_accounts else None,
            default_account=request.default_account if request.set_default_account else None,
            ids=ids,
            admin=request.admin if request.set_admin else None,
        )
        return user_to_pb(await self.engine.users.update_user(request.name, change, caller()))

    @unary
    async def ListUsers(self, request: pb.ListUsersRequest, context: Any) -> pb.ListUsersResponse:
        return pb.ListUsersResponse(
            users=[user_to_pb(u) for u in await self.engine.users.list_users(caller())]
        )

    @unary
    async def RevokeUser(self, request: pb.UserNameRequest, context: Any) -> pb.User:
        return user_to_pb(await self.engine.users.revoke_user(request.name, caller()))

    @unary
    async def NewToken(self, request: pb.UserNameRequest, context: Any) -> pb.UserTokenResponse:
        user, token = await self.engine.users.new_token(request.name, caller())
        return pb.UserTokenResponse(user=user_to_pb(user), token=token)

    @unary
    async def WhoAmI(self, request: pb.WhoAmIRequest, context: Any) -> pb.User:
        """The caller's own user: the one its token names."""
        return user_to_pb(await self.engine.users.who_am_i(caller()))

    @unary
    async def ListAudit(self, request: pb.ListAuditRequest, context: Any) -> pb.ListAuditResponse:
        entries = await self.engine.users.audit(request.since, request.limit, caller())
        return pb.ListAuditResponse(
            entries=[
                pb.AuditEntry(
                    time=e.time,
                    user=e.user,
                    action=e.action,
                    target=e.target,
                    peer=e.peer,
                    allowed=e.allowed,
                    detail=e.detail,
                )
                for e in entries
            ]
        )
