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
