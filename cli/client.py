"""The CLI's connection to the scheduler: one method per RPC, and gRPC errors as ``CliError``.

This is the only CLI module that imports generated protobuf code (commands import it lazily, so
``--help`` stays fast). Methods take plain values and return the reply messages, which commands
only read; job states come back as ``JobState`` through ``state_of``. Which scheduler, and
whether a token may go in plaintext: ``target.py``; how an error ends a command: ``errors.py``.
"""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from rota.cli.errors import CliError
from rota.cli.failover import FailoverChannel
from rota.cli.rpc_errors import translate
from rota.cli.target import Target, check_plaintext, resolve_target
from rota.states import JobState
from rota.tls import TLSFileError, channel_credentials
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from rota.jobspec import JobSpec

T = TypeVar("T")
RPC_TIMEOUT = 30.0


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


class _Bearer(  # type: ignore[misc]
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer TOKEN`` to every call."""

    def __init__(self, token: str) -> None:
        self.metadata = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), self.metadata])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


class Client:
    """Stubs over one channel; every call carries the user's token (``rota.credentials``)
    and maps gRPC errors to CliError."""

    rpc_error = grpc.RpcError  # what a failed call raises (``lost`` and ``translate`` read it)

    def __init__(self, target: Target) -> None:
        from rota.credentials import CredentialsError, read_token

        self.target = target
        try:
            self.token = read_token()
        except CredentialsError as exc:
            raise CliError(str(exc), 1) from None
        if self.token and not target.ca:
            check_plaintext(target)
        creds = None
        if target.ca:
            try:
                creds = channel_credentials(target.ca, target.cert, target.key)
            except TLSFileError as exc:
                raise CliError(str(exc), 2) from None
        channels = []
        for address in target.address.split(","):  # a leader and its standbys
            one = (
                grpc.secure_channel(address.strip(), creds)
                if creds
                else grpc.insecure_channel(address.strip())
            )
            channels.append(grpc.intercept_channel(one, _Bearer(self.token)) if self.token else one)
        self.channel = channels[0] if len(channels) == 1 else FailoverChannel(channels)
        self.jobs = pb_grpc.JobServiceStub(self.channel)
        self.nodes = pb_grpc.NodeServiceStub(self.channel)
        self.admin = pb_grpc.AdminServiceStub(self.channel)
        self.gpus = pb_grpc.GpuServiceStub(self.channel)
        self.reservations = pb_grpc.ReservationServiceStub(self.channel)
        self.users = pb_grpc.UserServiceStub(self.channel)
        self.accounting = pb_grpc.AccountingServiceStub(self.channel)
        self.interactive = pb_grpc.InteractiveServiceStub(self.channel)
        self.partition_admin = pb_grpc.PartitionServiceStub(self.channel)
        self._me = ""  # whoami(), once asked

    def job_dicts(self, ids: list[str]) -> list[dict[str, Any]]:
        """The ``gqueue --json`` objects of these jobs, whatever their state (an array id
        gives all its tasks)."""
        from rota.cli.render import job_json
        from rota.v1 import rota_pb2 as pb

        reply = self.call(self.jobs.ListJobs, pb.ListJobsRequest(ids=ids, all_states=True))
        return [job_json(j, state_of(j)) for j in reply.jobs]

    def close(self) -> None:
        self.channel.close()

    def call(self, method: Callable[..., T], request: Any, timeout: float = RPC_TIMEOUT) -> T:
        with self.errors():
            return method(request, timeout=timeout)

    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except grpc.RpcError as exc:
            raise self.translate(exc) from None

    def translate(self, exc: grpc.RpcError) -> CliError:
        """The one-line error a failed call is shown as (``rpc_errors.translate``)."""
        return translate(self.target, exc)

    # ------------------------------------------------------------ jobs

    def submit(
        self, specs: Iterable[tuple[str, str, JobSpec]], user: str, test_only: bool = False
    ) -> Any:
        """Submit (client request id, source name, spec) triples in one all-or-nothing request;
        the SubmitJobsResponse.

        Retried with the same request ids when the scheduler is unreachable or slow: it returns
        the stored ids, never duplicates.
        """
        from rota.wire import spec_fields  # only gsub needs it: other commands start faster

        items = [
            pb.SubmitItem(client_request_id=request_id, spec=spec_fields(spec), source=name)
            for request_id, name, spec in specs
        ]
        request = pb.SubmitJobsRequest(items=items, user=user, test_only=test_only)
        attempt = 0
        while True:
            try:
                return self.jobs.SubmitJobs(request, timeout=RPC_TIMEOUT)
            except grpc.RpcError as exc:
                retryable = exc.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                )
                if not retryable or attempt == 4:
                    raise self.translate(exc) from None
            time.sleep(0.2 * 2**attempt)
            attempt += 1

    def list_jobs(
        self,
        ids: list[str],
        users: list[str],
        accounts: list[str],
        states: Iterable[JobState] = (),
        all_states: bool = False,
        with_priority: bool = False,
    ) -> list[Any]:
        """Jobs (``rota.v1.Job``) matching every filter given; active ones unless ``states`` or
        ``all_states`` say otherwise; pending ones with their ``priority`` when asked."""
        request = pb.ListJobsRequest(
            ids=ids,
            users=users,
            accounts=accounts,
            states=[pb.JobState.Value(s.value) for s in states],
            all_states=all_states,
            with_priority=with_priority,
        )
        jobs: list[Any] = []
        while True:  # the scheduler answers in pages
            page = self.call(self.jobs.ListJobs, request)
            jobs += page.jobs
            if not page.next_page_token:
                return jobs
            request.page_token = page.next_page_token

    def list_steps(
        self, ids: list[str], users: list[str], accounts: list[str]
    ) -> tuple[list[Any], list[Any]]:
        """The pending and active jobs (``rota.v1.Job``) matching the filters, and their
        running srun steps (``rota.v1.RunningStep``)."""
        request = pb.ListJobsRequest(ids=ids, users=users, accounts=accounts, with_steps=True)
        jobs: list[Any] = []
        steps: list[Any] = []
        while True:
            page = self.call(self.jobs.ListJobs, request)
            jobs += page.jobs
            steps += page.steps
            if not page.next_page_token:
                return jobs, steps
            request.page_token = page.next_page_token

    def get_job(self, job_id: str) -> Any:
        """One job with its event history (``rota.v1.Job``)."""
        return self.call(self.jobs.GetJob, pb.GetJobRequest(id=job_id))

    def explain_job(self, job_id: str) -> Any:
        """Why a job waits (``rota.v1.ExplainJobResponse``)."""
        return self.call(self.jobs.ExplainJob, pb.ExplainJobRequest(id=job_id))

    def cancel_jobs(self, ids: list[str], user: str) -> list[Any]:
        """One result (id, ok, message) per id."""
        reply = self.call(self.jobs.CancelJobs, pb.CancelJobsRequest(ids=ids, user=user))
        return list(reply.results)

    def control_jobs(self, action: str, ids: list[str], user: str) -> list[Any]:
        """``action`` is hold, release or requeue; one result (id, ok, message) per id."""
        request = pb.ControlJobsRequest(
            action=pb.ControlAction.Value(action.upper()), ids=ids, user=user
        )
        return list(self.call(self.jobs.ControlJobs, request).results)

    def stream_logs(self, job_id: str, attempt: int, follow: bool, node: str) -> Iterator[bytes]:
        """An attempt's output in pieces; with ``follow``, until the attempt ends. A stream
        refused as unavailable before its first piece (a standby, a scheduler down) is asked
        of the next scheduler given, as a call with one reply is."""
        request = pb.StreamLogsRequest(id=job_id, attempt=attempt, follow=follow, node=node)
        tries = len(self.target.address.split(","))
        for tried in range(1, tries + 1):
            started = False
            try:
                for chunk in self.jobs.StreamLogs(request, timeout=None if follow else 60):
                    started = True
                    yield chunk.data
                return
            except grpc.RpcError as exc:
                if started or tried == tries or not self.lost(exc):
                    raise self.translate(exc) from None
                self.next_scheduler()

    def interact(self, requests: Iterator[Any]) -> Any:
        """An interactive session (``rota.v1.InteractRequest`` in, ``InteractReply`` out): the
        call, iterable and cancellable; iterate it inside ``errors()``."""
        return self.interactive.Interact(requests, timeout=None)

    @staticmethod
    def lost(exc: grpc.RpcError) -> bool:
        """Whether a call failed because the scheduler went away or cannot be reached (a
        restart: calling again may work), not because it refused."""
        code = exc.code() if hasattr(exc, "code") else None
        return code is grpc.StatusCode.UNAVAILABLE

    def next_scheduler(self) -> None:
        """After a stream lost its scheduler: with several addresses (a leader and its
        standbys), the next call starts at the next one."""
        if isinstance(self.channel, FailoverChannel):
            self.channel.skip()

    @staticmethod
    def interact_request(**fields: Any) -> Any:
        """One ``rota.v1.InteractRequest`` (the opening, input, its end or a resize)."""
        return pb.InteractRequest(**fields)

    # ------------------------------------------------------------ nodes and GPUs

    def list_nodes(self, states: Sequence[str] = ()) -> list[Any]:
        """Every node (``rota.v1.Node``), or those in ``states``, page after page, in name
        order."""
        nodes: list[Any] = []
        token = ""
        while True:
            request = pb.ListNodesRequest(page_token=token, states=list(states))
            page = self.call(self.nodes.ListNodes, request)
            nodes.extend(page.nodes)
            token = page.next_page_token
            if not token:
                return nodes

    def partitions(self) -> list[Any]:
        """The lab's partitions (``rota.v1.PartitionInfo``), in settings order."""
        request = pb.ListNodesRequest(summary_only=True)
        return list(self.call(self.nodes.ListNodes, request).partitions)

    def node_summary(self) -> Any:
        """Counts over every node (``rota.v1.NodeSummary``), without the nodes."""
        request = pb.ListNodesRequest(summary_only=True)
        return self.call(self.nodes.ListNodes, request).summary

    def get_node(self, name: str) -> Any:
        return self.call(self.nodes.GetNode, pb.GetNodeRequest(name=name))

    def add_node(self, name: str, labels: Mapping[str, str], user: str, rotate_token: bool) -> Any:
        """Register a node (or give it a new join token); the reply has ``name`` and ``token``."""
        request = pb.AddNodeRequest(
            name=name, labels=dict(labels), user=user, rotate_token=rotate_token
        )
        return self.call(self.admin.AddNode, request)

    def drain_node(self, name: str, reason: str, user: str) -> Any:
        request = pb.DrainNodeRequest(name=name, reason=reason, user=user)
        return self.call(self.admin.DrainNode, request)

    def resume_node(self, name: str, user: str) -> Any:
        return self.call(self.admin.ResumeNode, pb.ResumeNodeRequest(name=name, user=user))

    def remove_node(self, name: str, force: bool, user: str) -> Any:
        """The reply lists the jobs ``requeued`` and those that ``failed``."""
        request = pb.RemoveNodeRequest(name=name, force=force, user=user)
        return self.call(self.admin.RemoveNode, request)

    def gpu_action(self, op: str, node: str, index: int, user: str, reason: str = "") -> str:
        """``op`` is drain or resume; the scheduler's one-line answer."""
        request = pb.GpuActionRequest(node=node, index=index, user=user, reason=reason)
        method = self.gpus.ResumeGpu if op == "resume" else self.gpus.DrainGpu
        return str(self.call(method, request).message)

    def list_partitions(self) -> list[Any]:
        """Every partition (``rota.v1.PartitionRecord``): the settings file's, then admins'."""
        request = pb.ListPartitionsRequest()
        return list(self.call(self.partition_admin.ListPartitions, request).partitions)

    def set_partition(self, op: str, name: str, values: Mapping[str, Any]) -> Any:
        """``op`` add or update partition ``name`` with ``values`` (PartitionSpec fields; on
        update only those change)."""
        spec = pb.PartitionSpec(**values)
        request = pb.PartitionRequest(name=name, spec=spec, fields=list(values))
        stub = self.partition_admin
        return self.call(stub.AddPartition if op == "add" else stub.UpdatePartition, request)

    def remove_partition(self, name: str) -> str:
        request = pb.RemovePartitionRequest(name=name)
        return str(self.call(self.partition_admin.RemovePartition, request).message)

    # ------------------------------------------------------------ users and audit

    def add_user(
        self, name: str, admin: bool, accounts: list[str], default_account: str, uid: int, gid: int
    ) -> Any:
        """Create a user (uid/gid -1: unset); the reply has ``user`` and ``token``."""
        request = pb.AddUserRequest(
            name=name,
            admin=admin,
            accounts=accounts,
            default_account=default_account,
            uid=uid,
            gid=gid,
        )
        return self.call(self.users.AddUser, request)

    def update_user(self, name: str, **changes: Any) -> Any:
        """Change a user (``UpdateUserRequest``'s fields: set_accounts and accounts ...)."""
        return self.call(self.users.UpdateUser, pb.UpdateUserRequest(name=name, **changes))

    def list_users(self) -> list[Any]:
        return list(self.call(self.users.ListUsers, pb.ListUsersRequest()).users)

    def revoke_user(self, name: str) -> Any:
        return self.call(self.users.RevokeUser, pb.UserNameRequest(name=name))

    def new_token(self, name: str) -> Any:
        """A new token for ``name``; the reply has ``user`` and ``token``."""
        return self.call(self.users.NewToken, pb.UserNameRequest(name=name))

    def whoami(self) -> str:
        """The name of the user this client's token belongs to (asked once per client)."""
        if not self._me:
            self._me = str(self.call(self.users.WhoAmI, pb.WhoAmIRequest()).name)
        return self._me

    def list_audit(self, since: float, limit: int) -> list[Any]:
        request = pb.ListAuditRequest(since=since, limit=limit)
        return list(self.call(self.users.ListAudit, request).entries)

    # ------------------------------------------------------------ reservations

    def create_reservation(self, **fields: Any) -> Any:
        """Create a reservation (``rota.v1.CreateReservationRequest`` fields) as the token's
        user."""
        request = pb.CreateReservationRequest(**fields)
        return self.call(self.reservations.CreateReservation, request)

    def list_reservations(self) -> list[Any]:
        """Open and upcoming reservations (``rota.v1.Reservation``), earliest first."""
        request = pb.ListReservationsRequest()
        return list(self.call(self.reservations.ListReservations, request).reservations)

    def get_reservation(self, name: str) -> Any:
        request = pb.GetReservationRequest(name=name)
        return self.call(self.reservations.GetReservation, request)

    def update_reservation(self, name: str, given: list[str], **fields: Any) -> Any:
        """Change the fields named in ``given`` (``rota.v1.CreateReservationRequest`` names)."""
        request = pb.UpdateReservationRequest(
            name=name, changes=pb.CreateReservationRequest(**fields), fields=given
        )
        return self.call(self.reservations.UpdateReservation, request)

    def import_reservations(self, rows: list[dict[str, Any]], dry_run: bool, skip_bad: bool) -> Any:
        """Create bookings in order (``rota.v1.ImportReservationsResponse``)."""
        request = pb.ImportReservationsRequest(
            rows=[pb.CreateReservationRequest(**row) for row in rows],
            dry_run=dry_run,
            skip_bad=skip_bad,
        )
        return self.call(self.reservations.ImportReservations, request)

    def delete_reservation(self, name: str) -> Any:
        request = pb.DeleteReservationRequest(name=name)
        return self.call(self.reservations.DeleteReservation, request)

    # ------------------------------------------------------------ accounting

    def list_finished(self, query: AccountingFilter) -> list[Any]:
        """Finished jobs (``rota.v1.FinishedJob``), most recent end first."""
        return list(self.call(self.accounting.ListFinished, self._accounting(query)).jobs)

    def usage_summary(self, query: AccountingFilter) -> Any:
        """Totals per user and per account (``rota.v1.SummaryResponse``)."""
        return self.call(self.accounting.Summary, self._accounting(query))

    def _accounting(self, query: AccountingFilter) -> Any:
        users = (self.whoami(),) if query.mine else query.users
        return pb.AccountingFilter(
            ids=query.ids,
            users=users,
            accounts=query.accounts,
            states=[pb.JobState.Value(s.value) for s in query.states],
            start=query.start,
            end=query.end,
            limit=query.limit,
        )


@dataclass(frozen=True)
class AccountingFilter:
    """Which finished jobs ``gacct`` asks for; empty filters match everything; ``mine``: only
    the caller's (the user of the token; the scheduler shows non-admins nothing else)."""

    mine: bool = False
    ids: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    states: tuple[JobState, ...] = ()
    start: float = 0.0
    end: float = 0.0
    limit: int = 0


def state_of(job: Any) -> JobState:
    """A ``rota.v1.Job``'s state."""
    return JobState(pb.JobState.Name(job.state))


def as_dict(message: Any) -> dict[str, Any]:
    """A reply message as JSON-ready data, with the field names of ``rota.proto``."""
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message, preserving_proto_field_name=True)


@contextmanager
def connect(flag: str | None, ca: str | None = None) -> Iterator[Client]:
    client = Client(resolve_target(flag, ca))
    try:
        yield client
    finally:
        client.close()
