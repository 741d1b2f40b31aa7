"""Output a byte at a time holds few messages in flight (seventh attack): a session's and a
log request's windows counted bytes only, so a process writing one byte per write (each a
frame of the engine's stream, each a message) had up to ``window`` messages, four million,
sent and unacknowledged: 4 MiB of output held as that many objects in the scheduler for a
client that reads nothing (a shell loop's writes arrived 32 bytes a message on average: about
130,000 messages in a 4 MiB window, each an object of the scheduler's; 64 sessions a user). Now each message counts at least
``MESSAGE_COST`` bytes against the window, and each acknowledgement gives as much back. The
agent's session and output-request code with a real socket pair as the engine's stream."""

from __future__ import annotations

import socket
import struct
import threading

from rota.agent.log_flow import LogFlow
from rota.agent.runtime.sessions import SessionHandle
from rota.agent.sessions import Sessions
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
    wait_for(lambda: len(sent) >= WINDOW // MESSAGE_COST, 10, what="the window's messages")
    session = sessions._sessions[5]
    wait_for(lambda: session._unacked == WINDOW, 10, what="the window full")
    assert len(sent) == WINDOW // MESSAGE_COST  # 64 messages in flight, not 5,000
    sessions.order(SessionInput(5, ack=1))  # the client took one
    wait_for(lambda: len(sent) == WINDOW // MESSAGE_COST + 1, 10, what="one more message")
    sessions.close_all()
    process.close()


def test_an_output_request_counts_each_chunk_at_least_the_message_cost() -> None:
    flow = LogFlow(WINDOW)
    for _ in range(WINDOW // MESSAGE_COST):
        assert flow.send(1)  # a follow of output written a byte at a time
    blocked = threading.Thread(target=flow.send, args=(1,))
    blocked.start()
    flow.acked(1)  # the reader took one chunk: room for one more
    blocked.join(10)
    assert not blocked.is_alive()
    assert flow._unacked == WINDOW
    flow.stop()
