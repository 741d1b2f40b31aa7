"""How a command fails: one line on stderr and an exit code (CONVENTIONS.md): 1 runtime
(unreachable, unknown id), 2 invalid input. Imports nothing heavy, so any command may use it
before it connects."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn


class CliError(Exception):
    """An error to print as one line, with the exit code to use."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def die(message: str, code: int) -> NoReturn:
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "rota"
    for line in message.splitlines() or [""]:  # several problems: one line each
        print(f"{prog}: error: {line}", file=sys.stderr)
    raise SystemExit(code)


def exit_without_teardown(main: Callable[[], int]) -> NoReturn:
    """End a console script after ``main``: flush standard output and error, then leave with
    its exit code without tearing the interpreter down (freeing every module would cost a
    short command such as ``gsub`` about a tenth of its instructions). ``main`` must hold no
    state that needs a clean-up at exit (atexit handlers, unflushed files). A ``SystemExit``
    with a message, or a failing flush, ends the way Python's own exit does."""
    try:
        code = main()
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise
        code = exc.code or 0
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        raise SystemExit(code) from None  # Python reports the failed flush, as before
    os._exit(code)


def run_main(body: Callable[[], int]) -> int:
    """Run a command body, turning CliError and Ctrl-C into one line and an exit code."""
    try:
        return body()
    except CliError as exc:
        die(str(exc), exc.code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
