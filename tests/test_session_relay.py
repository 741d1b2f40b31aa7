"""The session relay's bounds (issue 25): output beyond the window a node may send
unacknowledged ends the session instead of filling the scheduler's memory, the client's input
is read only while the node has room for it, each chunk the client took is acknowledged, and
output from another node is refused and recorded. The hub and relay as the daemon builds
them, on an event loop, with the node's stream as its outbox."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from rota.messages import SessionInput, SessionOpen, SessionOutput
from rota.scheduler.agent_hub import AgentHub
from rota.scheduler.cluster.users import AuditEntry
from rota.scheduler.session_relay import SessionRelay

WINDOW = 1000


async def drained(queue: asyncio.Queue[object]) -> list[object]:
    await asyncio.sleep(0)  # let the relay's tasks run
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


def test_windows_bound_both_directions_and_foreign_output_is_refused() -> None:
    async def main() -> None:
        refusals: list[AuditEntry] = []

        async def record(entry: AuditEntry) -> None:
            refusals.append(entry)

        hub = AgentHub(record)
        node, other = hub.new_session("n1"), hub.new_session("n2")
        hub.attach(node)
        hub.attach(other)
        relay = SessionRelay(hub, window=WINDOW)
        typed: asyncio.Queue[SessionInput | None] = asyncio.Queue()

        async def inputs() -> AsyncIterator[SessionInput]:
            while (item := await typed.get()) is not None:
                yield item

        session = relay.run("n1", SessionOpen(0, 7, 1, "exec"), inputs())
        first = asyncio.ensure_future(anext(session))
        (opened,) = await drained(node.outbox)  # type: ignore[arg-type]
        assert isinstance(opened, SessionOpen) and opened.window == WINDOW
        rid = opened.request_id

        for _ in range(3):  # 1,800 bytes of input: the node has room for 1,000 in flight
            typed.put_nowait(SessionInput(0, b"x" * 600))
        sent = await drained(node.outbox)  # type: ignore[arg-type]
        assert [len(s.data) for s in sent] == [600, 600]  # type: ignore[attr-defined]
        relay.deliver(node, SessionOutput(rid, ack=600))  # the node wrote 600 bytes
        relay.deliver(node, SessionOutput(rid, data=b"o" * 400))
        assert (await first).data == b"o" * 400
        following = asyncio.ensure_future(anext(session))  # the client asks for more
        out = await drained(node.outbox)  # type: ignore[arg-type]
        assert SessionInput(rid, ack=400) in out  # it took the 400 bytes: acknowledged
        assert [len(s.data) for s in out if s.data] == [600]  # type: ignore[attr-defined]

        relay.deliver(other, SessionOutput(rid, data=b"forged"))  # n2 answers n1's session
        await hub.drain()
        assert [r.user for r in refusals] == ["node:n2"]
        assert "n2 sent output for a request made of node n1" in refusals[0].detail
        for _ in range(5):  # a client that reads nothing: 2,000 bytes queue, then the limit
            relay.deliver(node, SessionOutput(rid, data=b"p" * 500))
        got = [await following] + [await anext(session) for _ in range(4)]
        assert [o.data for o in got[:4]] == [b"p" * 500] * 4
        assert "more than the session window" in got[4].error
        await session.aclose()
        assert len(relay) == 0  # the session is closed

    asyncio.run(asyncio.wait_for(main(), 10))


def test_a_forward_is_dialled_only_by_agents_that_dial_back() -> None:
    """An agent that said it dials forwards back gets the ticket, and an answer comes as soon
    as it has its data connection or says it cannot make one; an older agent is not asked
    (it would open a session of the usual kind and leave the client waiting)."""

    async def main() -> None:
        async def record(entry: AuditEntry) -> None:
            pass

        hub = AgentHub(record)
        old, new = hub.new_session("n1"), hub.new_session("n2", dials=True)
        hub.attach(old)
        hub.attach(new)
        relay = SessionRelay(hub, window=WINDOW)
        order = SessionOpen(0, 7, 1, "forward", port=80, dial_ticket="t", dial_port=9)
        connected: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        answer = await relay.dial("n1", order, connected, 5.0)
        assert answer is not None and "dials no data connections" in answer.dial_error
        assert await drained(old.outbox) == []  # type: ignore[arg-type]

        asked = asyncio.ensure_future(relay.dial("n2", order, connected, 5.0))
        (sent,) = await drained(new.outbox)  # type: ignore[arg-type]
        assert isinstance(sent, SessionOpen) and sent.dial_ticket == "t"
        connected.set_result(object())
        assert await asked is None
        assert len(relay) == 0

        refused = asyncio.ensure_future(relay.dial("n2", order, asyncio.Future(), 5.0))
        (sent,) = await drained(new.outbox)  # type: ignore[arg-type]
        relay.deliver(new, SessionOutput(sent.request_id, dial_error="no route"))  # type: ignore[attr-defined]
        answer = await refused
        assert answer is not None and answer.dial_error == "no route"

    asyncio.run(main())


def test_a_terminal_s_input_is_read_no_further_than_the_relay_takes_it() -> None:
    """grun's terminal input outlives a relay (``Resumable``, for a node that comes back): while
    the node has no room for more, the scheduler reads one message of the client's beyond
    what it sent, not a queue of them (each may be 4 MiB: five were 20 MiB per session, 64
    sessions a user), and what it read is handed on whole to the next relay."""
    from rota.scheduler.session_relay import Resumable

    async def main() -> None:
        hub = AgentHub(lambda entry: asyncio.sleep(0))
        node = hub.new_session("n1")
        hub.attach(node)
        relay = SessionRelay(hub, window=WINDOW)
        pulled: list[int] = []

        async def inputs() -> AsyncIterator[SessionInput]:
            for i in range(20):
                pulled.append(i)
                yield SessionInput(0, bytes([65 + i]) * 600)

        kept = Resumable(inputs(), 24, 80)
        session = relay.run("n1", SessionOpen(0, 7, 1, "attach", tty=True), kept)
        first = asyncio.ensure_future(anext(session))
        for _ in range(20):
            await asyncio.sleep(0)
        sent = await drained(node.outbox)  # type: ignore[arg-type]
        data = [s.data for s in sent if isinstance(s, SessionInput)]
        assert [len(d) for d in data] == [600, 600]  # 1,200 in flight: no room for the third
        assert len(pulled) == 3  # the third waits for room, nothing more is read
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        await session.aclose()  # the node went away: the relay ends
        later = [(await anext(kept)).data for _ in range(3)]
        assert later == [b"C" * 600, b"D" * 600, b"E" * 600]  # nothing lost, nothing skipped
        assert len(pulled) == 5
        kept.close()

    asyncio.run(main())


def test_tiny_inputs_and_resizes_are_bounded_in_messages() -> None:
    """Seventh attack: the node's room for input was counted in bytes only, so a client's
    one-byte messages (a gattach of a process that reads nothing, or the web terminal's
    keystrokes) could have four million in flight, each a message on the node's stream and an
    object in the agent's queue; resizes were handed on as fast as the client sent them, each
    a call to the node's container engine (200,000 of them: the agent grew by 21 MB and
    dockerd was asked for minutes). Now at most ``MAX_INPUTS`` messages are in flight, resizes
    are handed on at most one each ``RESIZE_EVERY`` seconds, and input that carries nothing, or
    comes after the client's end of input, is dropped."""
    from rota.scheduler.session_relay import MAX_INPUTS

    async def main() -> None:
        hub = AgentHub(lambda entry: asyncio.sleep(0))
        node = hub.new_session("n1")
        hub.attach(node)
        relay = SessionRelay(hub, window=1 << 20)
        typed: asyncio.Queue[SessionInput | None] = asyncio.Queue()

        async def inputs() -> AsyncIterator[SessionInput]:
            while (item := await typed.get()) is not None:
                yield item

        session = relay.run("n1", SessionOpen(0, 7, 1, "exec", tty=True), inputs())
        first = asyncio.ensure_future(anext(session))
        (opened,) = await drained(node.outbox)  # type: ignore[arg-type]
        rid = opened.request_id  # type: ignore[attr-defined]
        for _ in range(2 * MAX_INPUTS + 1):
            typed.put_nowait(SessionInput(0, b"x"))
        for _ in range(100):
            await asyncio.sleep(0)
        sent = await drained(node.outbox)
        assert len(sent) == MAX_INPUTS  # 1,024 bytes in flight: no more messages
        relay.deliver(node, SessionOutput(rid, ack=1))  # the node wrote one
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(await drained(node.outbox)) == 1
        for _ in range(MAX_INPUTS):
            relay.deliver(node, SessionOutput(rid, ack=1))
        for _ in range(100):
            await asyncio.sleep(0)
        assert len(await drained(node.outbox)) == MAX_INPUTS  # room for as many again

        typed.put_nowait(SessionInput(0, eof=True))
        for i in range(200):  # resizes, and messages that carry nothing (after the end)
            typed.put_nowait(SessionInput(0, rows=10 + i, cols=80))
            typed.put_nowait(SessionInput(0))
            typed.put_nowait(SessionInput(0, b"late", eof=True))
        for _ in range(100):
            await asyncio.sleep(0)
        resizes = await drained(node.outbox)
        ends = [SessionInput(rid, eof=True), SessionInput(rid, rows=10, cols=80)]
        assert resizes == ends  # one end; the next resizes wait their turn
        await asyncio.sleep(0.2)
        later = await drained(node.outbox)
        assert 1 <= len(later) <= 5 and all(r.rows for r in later)  # type: ignore[attr-defined]
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        await session.aclose()

    asyncio.run(asyncio.wait_for(main(), 10))
