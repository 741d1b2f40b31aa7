"""Issue 22, input: every value is normalised before it is authorised, so the value checked is
the value stored; admin RPCs are validated like users'; oversized numbers are refused, not
crashed on. Each test is an attack from a live cluster, against the real grpc.aio servers (the
daemon's interceptor chain, and the services alone, which the web API also reaches)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.agent.runtime.policy import ContainerPolicy
from rota.allowlists import DEFAULT_REGISTRIES, image_registry
from rota.cli import gsub
from rota.jobspec import SpecError, parse_job_file
from rota.messages import LaunchOrder
from rota.scheduler.api.validation import ValidationInterceptor
from rota.scheduler.config import SchedulerConfig, input_rules
from rota.scheduler.core.authz import ADMIN_FLAGS
from rota.scheduler.http import HttpServer
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import channel
from tests.test_auth import refused, with_node
from tests.test_reservation_auth import booking
from tests.test_web_api import Browserless

INVALID = grpc.StatusCode.INVALID_ARGUMENT
DENIED = grpc.StatusCode.PERMISSION_DENIED
PADDED_ADMIN_FLAGS = [" MAINT", "IGNORE_JOBS "]


class DaemonChain(InProcessScheduler):
    """The in-process scheduler with the daemon's validating interceptor after auth."""

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [*super().interceptors(), ValidationInterceptor(input_rules(self.config))]


Harness = type[InProcessScheduler]
CHAINS = pytest.mark.parametrize(
    "harness", [DaemonChain, InProcessScheduler], ids=["daemon", "core"]
)


def run(
    harness: Harness, root: Path, test: Callable[[InProcessScheduler], Coroutine[Any, Any, None]]
) -> None:
    async def main() -> None:
        async with harness(root) as sched:
            await asyncio.wait_for(test(sched), 120)

    asyncio.run(main())


async def stored(sched: InProcessScheduler) -> list[pb.Reservation]:
    stub = pb_grpc.ReservationServiceStub(sched.channel)
    return list((await stub.ListReservations(pb.ListReservationsRequest())).reservations)


# ---------------------------------------------------------------- reservation flags (High)


@CHAINS
def test_padded_admin_flags_never_reach_a_users_booking(harness: Harness, tmp_path: Path) -> None:
    """The attack: a normal user sends ``[" MAINT", "IGNORE_JOBS "]`` in a raw
    CreateReservation, UpdateReservation and ImportReservations; each is PERMISSION_DENIED
    naming the flags and nothing is stored. An admin's padded flags are stored normalised."""

    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        bob = pb_grpc.ReservationServiceStub(sched.user_channel("bob"))

        code, details = await refused(
            bob.CreateReservation(booking("maint", flags=PADDED_ADMIN_FLAGS))
        )
        assert code is DENIED and "flags: IGNORE_JOBS, MAINT is for admins only" in details
        assert await stored(sched) == []

        code, details = await refused(
            bob.ImportReservations(
                pb.ImportReservationsRequest(rows=[booking("row", flags=PADDED_ADMIN_FLAGS)])
            )
        )
        assert code is DENIED and "is for admins only" in details
        assert await stored(sched) == []

        await bob.CreateReservation(booking("mine"))
        code, details = await refused(
            bob.UpdateReservation(
                pb.UpdateReservationRequest(
                    name="mine",
                    changes=pb.CreateReservationRequest(flags=["maint\u00a0"]),
                    fields=["flags"],
                )
            )
        )
        assert code is DENIED and "MAINT is for admins only" in details
        assert [(r.name, list(r.flags)) for r in await stored(sched)] == [("mine", [])]

        admin = pb_grpc.ReservationServiceStub(sched.channel)
        made = await admin.CreateReservation(
            booking("window", after=5, flags=[" maint", "IGNORE_JOBS "])
        )
        assert list(made.flags) == ["MAINT", "IGNORE_JOBS"]

    run(harness, tmp_path, test)


def _variant(word: str) -> st.SearchStrategy[str]:
    """``word`` with any letter's case changed (and dotless i for I), padded with spaces."""
    letters = [
        st.sampled_from(sorted({c, c.lower(), c.upper()} | ({"\u0131"} if c in "Ii" else set())))
        for c in word
    ]
    pad = st.sampled_from(["", " ", "  ", "\u00a0", "\u2003", "\u3000", "\t", "\n", "\u200b"])
    return st.tuples(pad, st.tuples(*letters).map("".join), pad).map("".join)


ADMIN_ONLY = {
    "flag": _variant("MAINT") | _variant("IGNORE_JOBS"),
    "qos": _variant("high"),
    "account": _variant("physics"),
    "user": _variant("ann"),
}


def test_no_padding_or_case_gets_an_admin_only_value_stored(tmp_path: Path) -> None:
    """Hypothesis sends a normal user's every RPC that carries an admin-only value (reservation
    flags, users and accounts of a booking, a job's qos and account) in padded and re-cased
    forms; whatever is answered, nothing admin-only is ever stored for that user."""
    count = itertools.count()
    sent: list[str] = []

    def fresh(**fields: object) -> pb.CreateReservationRequest:
        """A booking of its own half hour, so that only the value at test can refuse it."""
        i = next(count)
        return booking(f"b{i}", hours=0.5, after=1 + i, **fields)

    def attack(sched: InProcessScheduler, token: str) -> None:
        stubs = channel(sched.address, token)
        reservations = pb_grpc.ReservationServiceStub(stubs)
        jobs = pb_grpc.JobServiceStub(stubs)
        calls: dict[str, Callable[[str], Any]] = {
            "create flags": lambda v: reservations.CreateReservation(fresh(flags=[v])),
            "update flags": lambda v: reservations.UpdateReservation(
                pb.UpdateReservationRequest(
                    name="mine", changes=pb.CreateReservationRequest(flags=[v]), fields=["flags"]
                )
            ),
            "import flags": lambda v: reservations.ImportReservations(
                pb.ImportReservationsRequest(rows=[fresh(flags=[v])], skip_bad=True)
            ),
            "create users": lambda v: reservations.CreateReservation(fresh(users=[v])),
            "create accounts": lambda v: reservations.CreateReservation(
                fresh(users=[], accounts=[v])
            ),
            "submit qos": lambda v: jobs.SubmitJobs(_submit(qos=v)),
            "submit account": lambda v: jobs.SubmitJobs(_submit(account=v)),
        }
        kinds = {
            "create flags": "flag",
            "update flags": "flag",
            "import flags": "flag",
            "create users": "user",
            "create accounts": "account",
            "submit qos": "qos",
            "submit account": "account",
        }

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(st.data())
        def send(data: st.DataObject) -> None:
            rpc = data.draw(st.sampled_from(sorted(calls)))
            value = data.draw(ADMIN_ONLY[kinds[rpc]])
            sent.append(rpc)
            try:
                calls[rpc](value)
            except grpc.RpcError as exc:
                assert exc.code() in (INVALID, DENIED), (exc.code(), exc.details())
                assert exc.details()

        try:
            reservations.CreateReservation(booking("mine", hours=0.5, after=0.25))
            send()
        finally:
            stubs.close()

    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        token = sched.services.users.add("bob", False, accounts=("lab",))[1]
        await asyncio.to_thread(attack, sched, token)
        assert set(sent) >= {"create flags", "update flags", "import flags", "submit qos"}

        for r in await stored(sched):
            if r.created_by == "bob":
                assert not set(r.flags) & ADMIN_FLAGS, r
                assert set(r.users) <= {"bob"} and set(r.accounts) <= {"lab"}, r
        listed = await sched.jobs.ListJobs(pb.ListJobsRequest(all_states=True))
        for job in listed.jobs:
            assert job.spec.qos in ("", "low", "normal"), job.spec.qos
            assert job.spec.account in ("", "lab"), job.spec.account

    run(DaemonChain, tmp_path, test)


def _submit(**spec: str) -> pb.SubmitJobsRequest:
    job = pb.JobSpec(image="img", command=["true"], **spec)  # type: ignore[arg-type]
    return pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=job)])


# ---------------------------------------------------------------- admin RPCs (Low)


@CHAINS
def test_admin_rpcs_refuse_path_node_names_and_uids_past_32_bits(
    harness: Harness, tmp_path: Path
) -> None:
    """An admin's ``gadmin node add ../../etc/passwd`` and ``gadmin user add --uid 2**32``
    (which broke that node's stream in a loop) are INVALID_ARGUMENT naming the field and the
    rule; nothing is stored."""

    async def test(sched: InProcessScheduler) -> None:
        code, details = await refused(
            sched.admin.AddNode(pb.AddNodeRequest(name="../../etc/passwd"))
        )
        assert code is INVALID and "name: '../../etc/passwd' is not a node name" in details
        assert "letters, digits and . _ -" in details
        code, details = await refused(
            sched.admin.AddNode(pb.AddNodeRequest(name="n2", labels={"../x": "y"}))
        )
        assert code is INVALID and "labels key" in details
        nodes = await sched.nodes.ListNodes(pb.ListNodesRequest())
        assert [n.name for n in nodes.nodes] == []

        users = pb_grpc.UserServiceStub(sched.channel)
        for uid, gid, field in ((2**32, 100, "uid"), (100, 2**40, "gid")):
            code, details = await refused(
                users.AddUser(pb.AddUserRequest(name="eve", uid=uid, gid=gid))
            )
            assert code is INVALID and f"{field}: must be a uid/gid from 0 to 4294967295" in details
        listed = await users.ListUsers(pb.ListUsersRequest())
        assert "eve" not in [u.name for u in listed.users]
        made = await users.AddUser(pb.AddUserRequest(name="eve", uid=2**32 - 1, gid=0))
        assert made.user.uid == 2**32 - 1

    run(harness, tmp_path, test)


def test_admin_node_rpcs_are_validated_at_the_door(tmp_path: Path) -> None:
    """Drain, resume, remove and the GPU actions name nodes by the registration rule too."""

    async def test(sched: InProcessScheduler) -> None:
        calls: list[Awaitable[Any]] = [
            sched.admin.DrainNode(pb.DrainNodeRequest(name="../n1", reason="x")),
            sched.admin.ResumeNode(pb.ResumeNodeRequest(name="a/b")),
            sched.admin.RemoveNode(pb.RemoveNodeRequest(name="..")),
            sched.gpus.DrainGpu(pb.GpuActionRequest(node="/etc", index=0, reason="x")),
        ]
        for call in calls:
            code, details = await refused(call)
            assert code is INVALID and "is not a node name" in details, details

    run(DaemonChain, tmp_path, test)


# ---------------------------------------------------------------- job specs, at every door


BAD_SPECS = {
    "b.yaml: mounts[0].source: mounting /etc is never allowed (it is or holds /etc)": pb.JobSpec(
        image="img",
        command=["true"],
        mounts=[pb.Mount(source="/etc", target="/e")],
        priority=5,  # also not bob's to ask: the spec's check comes first
    ),
    "b.yaml: array: names 10001 tasks; at most 10000 are allowed": pb.JobSpec(
        image="img", command=["true"], array="0-10000"
    ),
    "b.yaml: env.CUDA_VISIBLE_DEVICES: is set by rota": pb.JobSpec(
        image="img", command=["true"], env={"CUDA_VISIBLE_DEVICES": "0"}
    ),
    "b.yaml: image: images from evil.example are not allowed here": pb.JobSpec(
        image="evil.example/x", command=["true"]
    ),
}


@CHAINS
def test_a_bad_spec_is_refused_alike_with_or_without_the_interceptor(
    harness: Harness, tmp_path: Path
) -> None:
    """The spec of a SubmitJobs item is checked once, behind every door: the daemon's chain and
    the services alone (as the web API reaches them) refuse it with the same words, naming the
    item's source and field, before anything is authorised, and store nothing."""

    async def test(sched: InProcessScheduler) -> None:
        bob = pb_grpc.JobServiceStub(sched.user_channel("bob"))
        for expected, spec in BAD_SPECS.items():
            item = pb.SubmitItem(spec=spec, source="b.yaml")
            request = pb.SubmitJobsRequest(items=[item])
            code, details = await refused(bob.SubmitJobs(request))
            assert code is INVALID and details.startswith(expected), details
        too_many = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=BAD_SPECS[expected])] * 1001)
        code, details = await refused(bob.SubmitJobs(too_many))
        assert code is INVALID and details.startswith("items: 1001 jobs in one request"), details
        assert not (await sched.jobs.ListJobs(pb.ListJobsRequest(all_states=True))).jobs

    run(harness, tmp_path, test)


# ---------------------------------------------------------------- huge numbers (Low)


@CHAINS
def test_a_page_token_past_64_bits_is_invalid_argument(harness: Harness, tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        code, details = await refused(
            sched.jobs.ListJobs(pb.ListJobsRequest(page_token="999999999999999999999"))
        )
        assert code is INVALID and "page_token" in details and "18 digits" in details

    run(harness, tmp_path, test)


def test_web_api_answers_400_for_job_ids_past_64_bits(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        tokens = EngineTokens(sched.engine)
        http = HttpServer(dashboard_routes(sched.engine, tokens, secure=False))
        port = await http.start("127.0.0.1:0")
        try:
            web = Browserless(port)
            await web.login(sched.admin_token)
            for path in (
                "/api/v1/jobs/999999999999999999999",
                "/api/v1/jobs/1_99999999999999999999",
                "/api/v1/jobs/999999999999999999999/log",
            ):
                reply = await web.call("GET", path)
                assert reply.status == 400, (path, reply.status, reply.body)
                assert "is not a job id like 123 or 123_4" in reply.json()["error"]
        finally:
            await http.stop()

    run(InProcessScheduler, tmp_path, test)


# ---------------------------------------------------------------- shm_size (Low)


def test_shm_size_is_bounded_by_memory_or_64_gib(tmp_path: Path) -> None:
    """``shm_size: 1Pi`` is refused by the job file parser (gsub), by SubmitJobs and by the
    agent before a launch; with ``resources.memory`` the bound is that memory."""
    base = {"image": "img", "command": ["true"]}
    with pytest.raises(SpecError, match=r"shm_size: .* more than 64 GiB"):
        parse_job_file({**base, "shm_size": "1Pi"})
    with pytest.raises(SpecError, match=r"shm_size: .* more than the job's resources.memory"):
        parse_job_file({**base, "shm_size": "8Gi", "resources": {"memory": "4Gi"}})
    assert parse_job_file({**base, "shm_size": "64Gi"}).shm_size == 64 * 2**30
    big = parse_job_file({**base, "shm_size": "100Gi", "resources": {"memory": "200Gi"}})
    assert big.shm_size == 100 * 2**30
    small = parse_job_file({**base, "resources": {"memory": "1Gi"}})  # the 2 GiB default
    assert small.shm_size == 2 * 2**30

    huge = dataclasses.replace(parse_job_file(base), shm_size=2**50)  # a scheduler's order
    order = LaunchOrder(1, 1, "1", huge, (), (), {}, 0.0)
    with pytest.raises(SpecError, match=r"shm_size: .* more than 64 GiB"):
        ContainerPolicy().admit(order)

    async def test(sched: InProcessScheduler) -> None:
        spec = pb.JobSpec(image="img", command=["true"], shm_size=2**50)
        code, details = await refused(
            sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))
        )
        assert code is INVALID and "shm_size" in details and "64 GiB" in details

    run(DaemonChain, tmp_path, test)


# ---------------------------------------------------------------- YAML alias bomb (Low)


def _alias_bomb(levels: int = 9) -> str:
    """A job file whose one environment value is ``levels`` lists, each of 9 aliases of the
    list before it (9**levels strings); its error message alone once took 1.6 GB to write."""
    lists = ['&a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lists.append(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return f"image: img\ncommand: [true]\nenv:\n  X: [{', '.join(lists)}]\n"


def test_gsub_refuses_a_yaml_alias_bomb_fast_and_small(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job file of 1 KiB whose aliases expand to 9**10 values took 1.6 GB in gsub; it is
    refused naming the file, in well under a second, allocating a few MiB at most."""
    job = tmp_path / "bomb.yaml"
    job.write_text(_alias_bomb())
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(SystemExit) as exited:
            gsub.main(["--dry-run", str(job)])
        took = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"{job}: invalid YAML: its aliases (*name) expand it to more than 100,000 values" in err
    assert took < 3, took
    assert peak < 20 * 2**20, peak

    loop = tmp_path / "loop.yaml"
    loop.write_text("image: img\ncommand: &c [true, *c]\n")
    with pytest.raises(SystemExit):
        gsub.main(["--dry-run", str(loop)])
    assert f"{loop}: invalid YAML: an alias (*name) refers to a value that contains it" in (
        capsys.readouterr().err
    )


# ---------------------------------------------------------------- image registries (Low)


def test_images_come_from_known_registries_by_default(tmp_path: Path) -> None:
    """An image from a registry nobody approved (``evil.example/miner``) is refused by
    SubmitJobs and by the agent before a launch; Docker Hub, NGC and GHCR pass by default, and
    ``allowed_registries: ["*"]`` lets any through."""
    for image, registry in (
        ("busybox", "docker.io"),
        ("pytorch/pytorch:2.5.1", "docker.io"),
        ("index.docker.io/library/busybox", "docker.io"),
        ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io"),
        ("localhost:5000/team/train", "localhost:5000"),
        ("Registry.Lab/team/train", "registry.lab"),
    ):
        assert image_registry(image) == registry
    rules = dataclasses.replace(input_rules(SchedulerConfig()), allowed_mounts=None)
    for image in ("busybox", "nvcr.io/nvidia/pytorch:24.01-py3", "ghcr.io/lab/x:1"):
        assert parse_job_file({"image": image, "command": ["true"]}, rules).image == image
    any_rules = dataclasses.replace(rules, allowed_registries=("*",))
    assert parse_job_file({"image": "evil.example/miner", "command": ["true"]}, any_rules).image

    evil = parse_job_file({"image": "evil.example/miner", "command": ["true"]})
    order = LaunchOrder(1, 1, "1", evil, (), (), {}, 0.0)
    with pytest.raises(SpecError, match=r"images from evil\.example are not allowed here"):
        ContainerPolicy(allowed_registries=DEFAULT_REGISTRIES).admit(order)

    async def test(sched: InProcessScheduler) -> None:
        spec = pb.JobSpec(image="evil.example/miner", command=["true"])
        request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
        code, details = await refused(sched.jobs.SubmitJobs(request))
        assert code is INVALID and "image: images from evil.example are not allowed" in details
        assert "allowed_registries: docker.io, nvcr.io, ghcr.io" in details
        listed = await sched.jobs.ListJobs(pb.ListJobsRequest())
        assert not listed.jobs

    run(DaemonChain, tmp_path, test)
