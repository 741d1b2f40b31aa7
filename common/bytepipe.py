"""Raw byte relays for forwarded ports, in blocking threads (never on an event loop).

A direction is copied with ``os.splice`` (source -> pipe -> destination: the bytes never enter
Python) where both ends are plain descriptors, else with large ``recv_into``/``sendall``
copies (a TLS socket, a terminal). When a direction's source ends, its destination is
half-closed (``shutdown(SHUT_WR)``) and the other direction goes on; when a direction breaks (a
reset, a write to a closed peer), both ends are shut down both ways so that the other direction
ends too. A TLS socket cannot be half-closed alone (Python's ``ssl`` drops the whole session):
the end of the bytes towards one ends the relay both ways. A TLS socket's two directions are
copied by two threads, each only reading or only writing.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import ssl
import threading

CHUNK = 1 << 20  # bytes moved at once
F_SETPIPE_SZ = 1031  # fcntl: a pipe's capacity (Linux)

Stream = socket.socket | int  # a socket, or a file descriptor (stdin, stdout)


def relay(a: socket.socket, b: socket.socket, from_a: bytes = b"", from_b: bytes = b"") -> None:
    """Copy ``a`` <-> ``b`` until both directions ended or one broke, then close both. Blocks
    (one direction in a thread of its own). ``from_a``/``from_b``: bytes already read from
    ``a``/``b``, written to the other first."""

    for sock in (a, b):  # a relay passes on what came at once: no Nagle delay on top
        nodelay(sock)

    def back() -> None:
        if not pump(b, a, from_b):
            abort(a, b)

    thread = threading.Thread(target=back, name="relay", daemon=True)
    thread.start()
    if not pump(a, b, from_a):
        abort(a, b)
    thread.join()
    for sock in (a, b):
        with contextlib.suppress(OSError):
            sock.close()


def pump(src: Stream, dst: Stream, first: bytes = b"") -> bool:
    """Copy ``src`` to ``dst`` (``first`` before) until ``src`` ends: True, ``dst`` half-closed.
    False when either broke (an OSError), or when ``dst`` is a TLS socket (no half-close)."""
    try:
        if first:
            _write(dst, first)
        if not _splice(src, dst):
            _copy(src, dst)
    except OSError:
        return False
    if isinstance(dst, ssl.SSLSocket):
        return False
    if isinstance(dst, socket.socket):
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
    return True


def nodelay(sock: socket.socket) -> None:
    """Send small writes at once (TCP_NODELAY), on a TCP socket."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def abort(*ends: Stream) -> None:
    """Shut the sockets among ``ends`` down both ways (their blocked reads return)."""
    for end in ends:
        if isinstance(end, socket.socket):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def _splice(src: Stream, dst: Stream) -> bool:
    """Move ``src`` to ``dst`` through a pipe until ``src`` ends (True); False, with every
    byte read so far written, when these descriptors cannot be spliced (go on copying)."""
    if not hasattr(os, "splice") or isinstance(src, ssl.SSLSocket):
        return False
    if isinstance(dst, ssl.SSLSocket):
        return False
    src_fd = src.fileno() if isinstance(src, socket.socket) else src
    dst_fd = dst.fileno() if isinstance(dst, socket.socket) else dst
    out, into = os.pipe()
    try:
        with contextlib.suppress(OSError):  # above the system's pipe-max-size: keep 64 KiB
            fcntl.fcntl(into, F_SETPIPE_SZ, CHUNK)
        while True:
            try:
                size = os.splice(src_fd, into, CHUNK)
            except OSError as exc:
                if exc.errno == errno.EINVAL:  # the pipe is empty here
                    return False
                raise
            if size == 0:
                return True
            while size:
                try:
                    size -= os.splice(out, dst_fd, size)
                except OSError as exc:
                    if exc.errno != errno.EINVAL:
                        raise
                    while size:  # what the pipe holds, written the plain way
                        data = os.read(out, size)
                        _write(dst, data)
                        size -= len(data)
                    return False
    finally:
        os.close(out)
        os.close(into)


def _copy(src: Stream, dst: Stream) -> None:
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    while True:
        size = src.recv_into(buffer) if isinstance(src, socket.socket) else os.readv(src, [buffer])
        if size == 0:
            return
        _write(dst, view[:size])


def _write(dst: Stream, data: bytes | memoryview) -> None:
    if isinstance(dst, socket.socket):
        dst.sendall(data)
        return
    view = memoryview(data)
    while view:
        view = view[os.write(dst, view) :]
