"""The agent's kept terminal output (agent/terminals.py) over a real socket pair standing for
the engine's attach socket: bounded, exact from a client's position, the tail for a client
that knows none, one client at a time."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from rota.agent.runtime.sessions import SessionHandle
from rota.agent.terminals import Terminal

KEEP = 64 * 1024


class Recorder:
    """A client that takes everything at once and remembers it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.first: int | None = None
        self.over = threading.Event()
        self.code: list[int | None] = []
        self.grew = threading.Condition()

    def output(self, offset: int, data: bytes) -> bool:
        with self.grew:
            if self.first is None:
                self.first = offset
            assert offset == self.first + len(self.data), "a gap or a repeat"
            self.data += data
            self.grew.notify_all()
        return True

    def taken_over(self) -> None:
        self.over.set()

    def finish(self, code: int | None) -> None:
        self.code.append(code)

    def wait_for(self, size: int) -> None:
        with self.grew:
            assert self.grew.wait_for(lambda: len(self.data) >= size, 30), bytes(self.data[-80:])


@pytest.fixture
def pair() -> Iterator[tuple[Terminal, socket.socket]]:
    ours, process = socket.socketpair()
    handle = SessionHandle(None, ours, False, "c1", direct=True)
    terminal = Terminal(handle, KEEP, lambda t: None)
    yield terminal, process
    process.close()
    ours.close()


def _pattern(size: int) -> bytes:
    return bytes(i % 251 for i in range(size))


def test_a_client_gets_exactly_the_bytes_after_its_position(
    pair: tuple[Terminal, socket.socket],
) -> None:
    terminal, process = pair
    first = Recorder()
    terminal.join(first, 0)
    written = _pattern(10_000)
    process.sendall(written[:4000])
    first.wait_for(4000)
    terminal.leave(first)  # the client went away; the process writes on
    process.sendall(written[4000:])
    back = Recorder()
    terminal.join(back, 3000)  # it had shown 3000 bytes
    back.wait_for(7000)
    assert back.first == 3000 and bytes(back.data) == written[3000:]


def test_kept_output_is_bounded_and_a_client_without_a_position_gets_its_tail(
    pair: tuple[Terminal, socket.socket],
) -> None:
    terminal, process = pair
    written = _pattern(300_000)
    reader = Recorder()
    terminal.join(reader, 0)
    process.sendall(written)
    reader.wait_for(len(written))
    terminal.leave(reader)
    late = Recorder()
    terminal.join(late, None)
    assert late.first == len(written) - KEEP and bytes(late.data) == written[-KEEP:]
    assert reader.over.is_set() is False
    old = Recorder()  # a position older than what is kept: from the oldest byte kept
    terminal.join(old, 5)
    assert late.over.is_set(), "the client before was not told it was taken over"
    assert old.first == len(written) - KEEP and len(old.data) == KEEP
    process.sendall(b"live")
    old.wait_for(KEEP + 4)
    assert bytes(old.data[-4:]) == b"live" and b"live" not in bytes(late.data)
    process.close()
    for _ in range(100):
        if old.code:
            break
        threading.Event().wait(0.05)
    assert old.code == [0] and terminal.ended


def test_the_scheduler_checks_how_an_attach_replays() -> None:
    from rota.inputs import SpecError
    from rota.scheduler.facade.interactive import ClientOpen, check_open

    check_open(ClientOpen("1", "attach", replay="tail"))
    check_open(ClientOpen("1", "attach", replay="from", resume_from=12))
    with pytest.raises(SpecError, match=r"replay.*'sideways' is not one of"):
        check_open(ClientOpen("1", "attach", replay="sideways"))
    with pytest.raises(SpecError, match=r"replay.*only an attach replays output, not 'exec'"):
        check_open(ClientOpen("1", "exec", replay="tail"))
    with pytest.raises(SpecError, match="resume_from"):
        check_open(ClientOpen("1", "attach", replay="from", resume_from=-1))


def test_grun_escapes_act_at_the_start_of_a_line_only() -> None:
    from rota.cli.session import ESCAPE_HELP, _Escape

    said: list[str] = []
    detached: list[bool] = []
    escape = _Escape(said.append, lambda: detached.append(True))
    assert escape.feed(b"ls ~/x; echo a~.b\r") == b"ls ~/x; echo a~.b\r"  # not at a line start
    assert escape.feed(b"~~home\r~") == b"~home\r"  # ~~ is one ~; a lone ~ waits for the next key
    assert escape.feed(b"x\r") == b"~x\r"
    assert escape.feed(b"~?") == b"" and said == [ESCAPE_HELP]
    assert not detached
    assert escape.feed(b"~.typed after") is None and detached == [True]


def test_grun_attach_refuses_what_only_a_submission_takes() -> None:
    import subprocess
    import sys

    for extra, why in (
        (["--gpus", "2", "-J", "x"], b"--attach submits nothing: --gpus, --job-name do not apply"),
        (["sh"], b"--attach takes a session's job id and no CMD"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "rota.cli.grun", "--attach", "1", *extra],
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 2 and why in done.stderr, done.stderr


class _Slow(Recorder):
    """A client whose ``taken_over`` waits for ``go``: the moment a second attach races in."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    def taken_over(self) -> None:
        self.entered.set()
        assert self.go.wait(10)
        super().taken_over()


def test_two_attaches_at_once_leave_one_client_and_tell_the_other(
    pair: tuple[Terminal, socket.socket],
) -> None:
    """Eighth attack: two attaches at once (two ``grun --attach JOB``) both found the client
    before gone already: the later to set itself was the terminal's client, the other was
    never told it was taken over and never got output again; its grun waited for ever, a
    session slot and a node thread held. Now the one displaced is told."""
    terminal, process = pair
    first = _Slow()
    terminal.join(first, 0)
    a, b = Recorder(), Recorder()
    joining = threading.Thread(target=terminal.join, args=(a, 0))
    joining.start()
    assert first.entered.wait(10)  # a is telling the first client
    terminal.join(b, 0)  # b joins meanwhile
    first.go.set()
    joining.join(10)
    assert first.over.is_set()
    process.sendall(b"after")
    winner, loser = (a, b) if b.over.is_set() else (b, a)
    assert loser.over.is_set(), "neither attach was told it was taken over"
    winner.wait_for(5)
    assert bytes(winner.data) == b"after" and not winner.over.is_set()


def test_a_terminal_whose_descriptor_is_past_1024_is_read() -> None:
    """Eighth attack: the terminal's reader waited for the engine's replay with
    ``select.select``, which cannot take a descriptor past 1023: on an agent holding that many
    (its unit allows 65,536: a user's sessions, log streams and sruns waiting on their FIFOs
    are each one or more), every grun terminal attached next ended at once, its process
    running on unseen. Now it waits with ``poll``."""
    import os
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        ours, process = socket.socketpair()
        assert ours.fileno() >= 1024
        terminal = Terminal(SessionHandle(None, ours, False, "c1", direct=True), KEEP, print)
        client = Recorder()
        process.sendall(b"replayed")
        terminal.join(client, None)  # the kept tail: waits for the replay to settle
        client.wait_for(8)
        process.sendall(b" live")
        client.wait_for(13)
        assert bytes(client.data) == b"replayed live" and not terminal.ended
        process.close()
        ours.close()
    finally:
        for fd in held:
            os.close(fd)
