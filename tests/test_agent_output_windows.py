"""Output a byte at a time holds few messages in flight (seventh attack): a session's and a
log request's windows counted bytes only, so a process writing one byte per write (each a
frame of the engine's stream, each a message) had up to ``window`` messages, four million,
sent and unacknowledged: 4 MiB of output held as that many objects in the scheduler for a
client that reads nothing (a shell loop's writes arrived 32 bytes a message on average: about
130,000 messages in a 4 MiB window, each an object of the scheduler's; 64 sessions a user). Now each message counts at least
``MESSAGE_COST`` bytes against the window, and each acknowledgement gives as much back. The
agent's session and output-request code with a real socket pair as the engine's stream."""

from __future__ import annotations

import os
import socket
import struct
import threading
from pathlib import Path

from rota.agent.log_flow import LogFlow
from rota.agent.runtime.sessions import SessionHandle
from rota.agent.sessions import Sessions
from rota.agent.steps.spool import JobSpool
from rota.agent.steps.srun import OutputBudget, Srun
from rota.messages import MESSAGE_COST, SessionInput, SessionOpen, SessionOutput
from tests.cluster import wait_for

WINDOW = 64 * MESSAGE_COST


def test_a_session_writing_a_byte_at_a_time_holds_window_over_cost_messages() -> None:
    engine, process = socket.socketpair()
    sent: list[SessionOutput] = []
    lock = threading.Lock()

    def send(out: SessionOutput) -> None:
        with lock:
            sent.append(out)

    sessions = Sessions(lambda order: SessionHandle(None, engine, True, "c1"), send)
    sessions.order(SessionOpen(5, 7, 1, "exec", ("sh",), window=WINDOW))
    frames = b"".join(struct.pack(">BxxxL", 1, 1) + b"x" for _ in range(5000))
    process.sendall(frames)  # 5,000 one-byte writes of the process, nothing acknowledged
    wait_for(lambda: len(sent) >= WINDOW // MESSAGE_COST, 30, what="the window's messages")
    session = sessions._sessions[5]
    wait_for(lambda: session._unacked == WINDOW, 30, what="the window full")
    assert len(sent) == WINDOW // MESSAGE_COST  # 64 messages in flight, not 5,000
    sessions.order(SessionInput(5, ack=1))  # the client took one
    wait_for(lambda: len(sent) == WINDOW // MESSAGE_COST + 1, 30, what="one more message")
    sessions.close_all()
    process.close()


def test_an_output_request_counts_each_chunk_at_least_the_message_cost() -> None:
    flow = LogFlow(WINDOW)
    for _ in range(WINDOW // MESSAGE_COST):
        assert flow.send(1)  # a follow of output written a byte at a time
    blocked = threading.Thread(target=flow.send, args=(1,))
    blocked.start()
    flow.acked(1)  # the reader took one chunk: room for one more
    blocked.join(30)
    assert not blocked.is_alive()
    assert flow._unacked == WINDOW
    flow.stop()


def test_an_sruns_unread_output_counts_each_message_at_least_the_message_cost(
    tmp_path: Path,
) -> None:
    """The output an srun of the job has not read was kept up to 64 MiB of bytes per attempt,
    so a step writing a byte at a time could queue 64 million messages in the agent of the
    node srun runs on while srun (the job's own process) read nothing. Now each counts at
    least ``MESSAGE_COST``: beyond the budget, output is dropped and srun says so."""
    spool = JobSpool(tmp_path / "spool", os.getuid(), os.getgid())
    spool.create()
    request = spool.root / "steps" / "s.test"
    request.mkdir()
    for name in ("out", "err", "end"):
        os.mkfifo(request / name)
    readers = [os.open(request / n, os.O_RDONLY | os.O_NONBLOCK) for n in ("out", "err", "end")]
    out = spool.open_fifo("s.test", "out")
    err = spool.open_fifo("s.test", "err")
    done = threading.Event()
    budget = OutputBudget(limit=2 << 20)
    srun = Srun((7, 1), spool, "s.test", out, err, lambda _: done.set(), budget)
    srun.write(b"a" * (1 << 20))  # more than the pipe holds: srun's FIFO is full
    for _ in range(5000):
        srun.write(b"x")  # 5,000 bytes, 5,000 messages: 4.9 MB at 1 KiB each
    srun.finish(0)
    printed = bytearray()
    os.set_blocking(readers[0], True)
    while chunk := os.read(readers[0], 1 << 20):  # srun reads at last, to the end
        printed += chunk
    assert done.wait(10)
    errors = os.read(readers[1], 1 << 16)
    assert b"output dropped" in errors
    assert len(printed) < (1 << 20) + 5000  # the bytes beyond the budget were dropped
    for fd in readers:
        os.close(fd)
