"""A job attempt's step spool: the directory srun (a shell script in the container) talks to
the agent through, and the agent's careful reading of what srun leaves there.

On the node the spool is ``<data_dir>/steps/<job>-<attempt>/``, mounted read-write at
``/.rota/spool`` in the job's container; the commands in ``tools/`` are mounted read-only at
``/.rota/bin``, first on the container's ``PATH``. The spool itself belongs to the agent
(root, 0755) and holds ``ctl``, a FIFO the job's user may write, and ``steps/``, the job's
user's own directory. srun makes a request directory ``steps/s.XXXXXXXX`` with its arguments
(``a.0`` ...), its exported environment (``env``), its options (``opts``) and working
directory (``cwd``) and three FIFOs (``out``, ``err``, ``end``), then writes
``start s.XXXXXXXX`` to ``ctl``.

Everything under ``steps/`` is the job's to change, so the agent opens it one component at a
time from a descriptor of the spool, never following a link, reads only regular files of a
bounded size and writes only to FIFOs; a request that breaks these rules is refused.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from rota.messages import StepLayout

CONTAINER_SPOOL = "/.rota/spool"
CONTAINER_TOOLS = "/.rota/bin"
TOOLS = Path(__file__).resolve().parent / "tools"
HOLD = f"{CONTAINER_TOOLS}/rota-hold"  # the command of a batch job's other nodes
MAX_ARGS = 4096
MAX_REQUEST = 512 * 1024  # bytes of arguments, and separately of environment, per request
MAX_PATH = 4096
MAX_NODELIST = 2048  # characters of srun -w's host list
PIPE_WAIT = 5.0  # seconds srun has to open its FIFOs once it asked
_NAME = re.compile(r"^s\.[A-Za-z0-9]{1,32}$")
_LAYOUT = (
    "nodes",
    "ntasks",
    "ntasks_per_node",
    "gpus_per_task",
    "label",
    "kill_on_bad_exit",
    "wait",
)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SpoolError(Exception):
    """A request the agent will not act on; the text is for srun's stderr."""


@dataclass(frozen=True, slots=True)
class SrunRequest:
    """What one srun asked for."""

    name: str
    layout: StepLayout
    argv: tuple[str, ...]
    environment: bytes
    cwd: str


class JobSpool:
    """The spool of one attempt, for a container running as ``uid``:``gid``."""

    def __init__(self, root: Path, uid: int, gid: int) -> None:
        self.root = root
        self.uid = uid
        self.gid = gid

    @property
    def ctl(self) -> Path:
        return self.root / "ctl"

    def create(self) -> None:
        """Make the spool afresh: the agent's directory, the user's ``steps/`` and ``ctl``."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, mode=0o755)
        self.root.chmod(0o755)
        steps = self.root / "steps"
        steps.mkdir(mode=0o700)
        os.mkfifo(self.ctl, 0o600)
        for path in (steps, self.ctl):
            try:
                os.chown(path, self.uid, self.gid)
            except PermissionError:  # an agent that is not root runs jobs as itself
                path.chmod(0o1777 if path == steps else 0o666)

    def note_spec(self, features: str) -> None:
        """Write ``spec``: what of the job's request scontrol shows (its ``constraint``). Kept
        for the attempt: an agent that adopts the container finds it again."""
        text = f"features={features.replace(chr(10), ' ')}\n"
        temporary = self.root / ".spec"
        temporary.write_text(text)
        temporary.chmod(0o644)
        temporary.replace(self.root / "spec")

    def describe(self, start: float, deadline: float) -> None:
        """Write ``job``: when the attempt started and ends, for squeue and scontrol."""
        limit = deadline - start if deadline and start else 0
        text = f"start={int(start)}\nend={int(deadline)}\nlimit={int(limit)}\n"
        temporary = self.root / ".job"
        temporary.write_text(text)
        temporary.chmod(0o644)
        temporary.replace(self.root / "job")

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def open_ctl(self) -> int:
        """``ctl`` for reading; opened read-write so that it never reads an end of file."""
        return os.open(self.ctl, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)

    def read(self, name: str) -> SrunRequest:
        """The request ``steps/<name>``; SpoolError when it is not one srun could have made."""
        with self._request_dir(name) as fd:
            argv: list[str] = []
            total = 0
            while len(argv) <= MAX_ARGS:
                data = _read_file(fd, f"a.{len(argv)}", MAX_REQUEST - total)
                if data is None:
                    break
                total += len(data)
                argv.append(data.decode("utf-8", "surrogateescape"))
            if not argv or len(argv) > MAX_ARGS:
                raise SpoolError(f"a step needs 1 to {MAX_ARGS} arguments")
            environment = _read_file(fd, "env", MAX_REQUEST) or b""
            opts = (_read_file(fd, "opts", 4096) or b"").decode("ascii", "replace")
            cwd = (_read_file(fd, "cwd", MAX_PATH) or b"").decode("utf-8", "surrogateescape")
        return SrunRequest(name, _layout(opts), tuple(argv), environment, cwd.strip("\n"))

    def requests(self) -> list[str]:
        """The names of the request directories in ``steps/``."""
        try:
            spool = os.open(self.root, _DIR)
        except OSError:
            return []
        try:
            with _Fd(os.open("steps", _DIR, dir_fd=spool)) as steps:
                return [n for n in os.listdir(steps) if _NAME.match(n)]
        except OSError:
            return []
        finally:
            os.close(spool)

    def open_fifo(self, name: str, fifo: str, wait: float = PIPE_WAIT) -> int:
        """A write descriptor of the request's FIFO ``fifo``, once srun reads it (waits up to
        ``wait`` seconds); SpoolError when it is not a FIFO or nobody opens it."""
        deadline = time.monotonic() + wait
        with self._request_dir(name) as fd:
            while True:
                try:
                    out = os.open(
                        fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                    )
                except OSError as exc:
                    if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                        raise SpoolError(f"cannot open the step's {fifo}: {exc.strerror}") from None
                    time.sleep(0.005)
                    continue
                if not stat.S_ISFIFO(os.fstat(out).st_mode):
                    os.close(out)
                    raise SpoolError(f"the step's {fifo} is not a FIFO")
                os.set_blocking(out, True)
                return out

    def _request_dir(self, name: str) -> _Fd:
        if not _NAME.match(name):
            raise SpoolError(f"bad step request name {name[:40]!r}")
        try:
            spool = os.open(self.root, _DIR)
        except OSError as exc:
            raise SpoolError(f"the step spool is gone: {exc.strerror}") from None
        try:
            steps = os.open("steps", _DIR, dir_fd=spool)
            try:
                return _Fd(os.open(name, _DIR, dir_fd=steps))
            finally:
                os.close(steps)
        except OSError as exc:
            raise SpoolError(f"cannot open step request {name}: {exc.strerror}") from None
        finally:
            os.close(spool)


class _Fd:
    """A descriptor closed at the end of a ``with`` block."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _read_file(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The regular file ``name`` in ``dir_fd`` (None when absent); SpoolError when it is
    anything else or longer than ``limit``."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SpoolError(f"cannot read the step's {name}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SpoolError(f"the step's {name} is not a regular file")
        if info.st_size > limit:
            raise SpoolError(f"the step's request is too large (at most {MAX_REQUEST} bytes)")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise SpoolError(f"the step's request is too large (at most {MAX_REQUEST} bytes)")
        return data
    finally:
        os.close(fd)


def _layout(opts: str) -> StepLayout:
    values: dict[str, int] = {}
    nodelist = ""
    for line in opts.splitlines():
        key, _, value = line.partition("=")
        if key == "nodelist":
            nodelist = value[:MAX_NODELIST]  # the scheduler checks the names
        elif key in _LAYOUT and value:
            if not value.isdigit() or len(value) > 9:
                raise SpoolError(f"--{key.replace('_', '-')} needs a positive number")
            values[key] = int(value)
    label = bool(values.pop("label", 0))
    kill = bool(values.pop("kill_on_bad_exit", 0))
    return StepLayout(**values, label=label, nodelist=nodelist, kill_on_bad_exit=kill)
