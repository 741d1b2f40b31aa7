"""A terminal's resize reaches a session before the keys typed after it, also when Python has
not yet run the SIGWINCH handler (it runs on the main thread when that next gets to it, while
grun's input thread forwards keys at once): the input thread sends the new size first."""

from __future__ import annotations

import fcntl
import os
import struct
import termios
from typing import Any

from rota.cli.client import Client
from rota.cli.session import _Outbox, _read_input, _Size


def _resize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def test_keys_typed_after_a_resize_follow_the_new_size() -> None:
    master, slave = os.openpty()
    try:
        _resize(slave, 24, 80)
        outbox = _Outbox(8)
        sent = outbox.stream(None)  # what the session's call is given, after its opening
        next(sent)
        client: Any = Client  # interact_request is all these use of it
        size = _Size(slave, outbox, client, 24, 80)
        _read_input(slave, outbox, client, False, before_keys=size.tell)
        os.write(master, b"before\r")
        assert next(sent).data == b"before\n"  # the size did not change: no resize sent
        _resize(slave, 40, 132)  # no SIGWINCH handler here: only the input thread tells
        os.write(master, b"stty size\r")
        resized = next(sent)
        assert (resized.rows, resized.cols, resized.data) == (40, 132, b"")
        assert next(sent).data == b"stty size\n"
        size.tell()  # the handler, run late: the size was sent already
        os.write(master, b"after\r")
        assert next(sent).data == b"after\n"
    finally:
        outbox.close()
        os.close(master)
        os.close(slave)
