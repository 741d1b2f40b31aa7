"""A job attempt's step spool: the directory srun (a shell script in the container) talks to
the agent through, and the agent's careful reading of what srun leaves there.

On the node the spool is ``<data_dir>/steps/<job>-<attempt>/``, mounted read-write at
``/.rota/spool`` in the job's container; the commands in ``tools/`` are mounted read-only at
``/.rota/bin``, first on the container's ``PATH``. The spool itself belongs to the agent
(root, 0755) and holds ``ctl``, a FIFO the job's user may write, and ``steps/``, the job's
user's own directory. srun makes a request directory ``steps/s.XXXXXXXX`` with its arguments
(``a.0`` ...), its exported environment (``env``), its options (``opts``) and working
directory (``cwd``) and three FIFOs (``out``, ``err``, ``end``), then writes
``start s.XXXXXXXX`` to ``ctl``. ``sbatch`` and ``scancel`` make the same directory with
their arguments, the script sbatch read (``script``, and in ``index`` the argument it came
from), the variables its ``--export`` names bare (``e.0`` ...: ``NAME=value``) and ``cwd``,
then write ``sbatch s.XXXXXXXX`` (``scancel ...``; ``sbatch-wait ...`` while ``sbatch
--wait`` waits) and, once written, make ``sent``: the agent relays them to the scheduler,
which answers with what the command prints and its exit code.

Everything under ``steps/`` is the job's to change, so the agent opens it one component at a
time from a descriptor of the spool, never following a link, reads only regular files of a
bounded size and writes only to FIFOs; a request that breaks these rules is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from rota.inputs import MAX_COMMAND_BYTES
from rota.messages import StepLayout
from rota.sbatch_catalog import ALIASES, KNOWN, SHORT
from rota.sbatch_options import takes_value

CONTAINER_SPOOL = "/.rota/spool"
CONTAINER_TOOLS = "/.rota/bin"
TOOLS = Path(__file__).resolve().parent / "tools"
HOLD = f"{CONTAINER_TOOLS}/rota-hold"  # the command of a batch job's other nodes
MAX_ARGS = 4096
MAX_REQUEST = 512 * 1024  # bytes of arguments, and separately of environment, per request
MAX_PATH = 4096
MAX_SCRIPT = MAX_COMMAND_BYTES  # bytes of a script sbatch sends (gsub's limit of a command)
MAX_VARIABLES = 1024  # variables sbatch sends, of MAX_SCRIPT bytes in all
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


def install_tools(where: Path) -> Path:
    """Copy srun and its fellows to ``where``, the agent's, each 0755 (an installed package
    may have lost their modes), sbatch with its catalogue of options filled in."""
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o755)
    for tool in TOOLS.iterdir():
        target = where / tool.name
        target.write_bytes(tool_text(tool))
        target.chmod(0o755)
    return where


def tool_text(tool: Path) -> bytes:
    """The text of ``tool`` as installed: sbatch's ``@LONG@``, ``@SHORT@`` and ``@FLAGS@``
    replaced by the sbatch options that take a value (the long names, ``|``-separated, and
    the letters) and those that do not, so that it finds its script among its words as the
    scheduler's reading (gsub's) does."""
    text = tool.read_bytes()
    if tool.name != "sbatch":
        return text
    names = {*KNOWN, *ALIASES}
    valued = sorted(n for n in names if takes_value(ALIASES.get(n, n)))
    letters = "".join(sorted(k for k, v in SHORT.items() if takes_value(v)))
    fills = {
        b"@LONG@": "|".join(valued),
        b"@SHORT@": letters,
        b"@FLAGS@": "|".join(sorted(names - set(valued))),
    }
    for mark, value in fills.items():
        text = text.replace(mark, value.encode())
    return text


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


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """What one sbatch or scancel asked for (``script_index``: -1 for none or stdin;
    ``environment``: (name, value) pairs)."""

    argv: tuple[str, ...]
    script: bytes
    script_index: int
    cwd: str
    environment: tuple[tuple[str, str], ...] = ()


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
            argv = _read_argv(fd, "surrogateescape")
            if not argv:
                raise SpoolError(f"a step needs 1 to {MAX_ARGS} arguments")
            environment = _read_file(fd, "env", MAX_REQUEST) or b""
            opts = (_read_file(fd, "opts", 4096) or b"").decode("ascii", "replace")
            cwd = (_read_file(fd, "cwd", MAX_PATH) or b"").decode("utf-8", "surrogateescape")
        return SrunRequest(name, _layout(opts), tuple(argv), environment, cwd.strip("\n"))

    def read_command(self, name: str) -> CommandRequest:
        """The sbatch or scancel request ``steps/<name>``; SpoolError when it is not one
        they could have made (text that is not UTF-8 arrives with replacement characters)."""
        with self._request_dir(name) as fd:
            argv = _read_argv(fd, "replace")
            script = _read_file(fd, "script", MAX_SCRIPT) or b""
            index = (_read_file(fd, "index", 16) or b"-1").decode("ascii", "replace").strip()
            cwd = (_read_file(fd, "cwd", MAX_PATH) or b"").decode("utf-8", "replace")
            variables = _read_words(fd, "e", MAX_VARIABLES, MAX_SCRIPT, "replace")
        if not index.lstrip("-").isdigit() or not -1 <= int(index) < len(argv):
            raise SpoolError(f"bad script index {index[:16]!r}")
        environment = []
        for entry in variables:
            name, eq, value = entry.partition("=")
            if not eq:
                raise SpoolError(f"bad variable {name[:40]!r}: expected NAME=value")
            environment.append((name, value))
        return CommandRequest(tuple(argv), script, int(index), cwd.strip("\n"), tuple(environment))

    def release(self) -> None:
        """Requests that waited on an earlier agent process fail (their answers are lost): each
        is handed exit code 1 when it reads its ``end`` within a second. One whose line
        reached that process (``sent``: sbatch, scancel) first has its ``out`` and ``err``
        closed, as that process may not have opened them. Call before ``ctl`` is opened again:
        a request still waiting to write its line has no ``sent`` yet."""
        for name in self.requests():
            if self._has(name, "sent"):
                for fifo in ("out", "err"):
                    with contextlib.suppress(SpoolError):
                        os.close(self.open_fifo(name, fifo, wait=0.5))
            try:
                end = self.open_fifo(name, "end", wait=1.0)
            except SpoolError:
                continue
            with contextlib.suppress(OSError):
                os.write(end, b"1\n")
            os.close(end)

    def _has(self, name: str, entry: str) -> bool:
        """Whether the request ``name`` holds ``entry`` (not following a link)."""
        try:
            with self._request_dir(name) as fd:
                os.stat(entry, dir_fd=fd, follow_symlinks=False)
        except (SpoolError, OSError):
            return False
        return True

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


def _read_argv(dir_fd: int, errors: str) -> list[str]:
    """The arguments ``a.0`` ... of a request: at most ``MAX_ARGS`` of ``MAX_REQUEST`` bytes in
    all, decoded with ``errors``."""
    return _read_words(dir_fd, "a", MAX_ARGS, MAX_REQUEST, errors)


def _read_words(dir_fd: int, prefix: str, most: int, limit: int, errors: str) -> list[str]:
    """The files ``<prefix>.0`` ... of a request, up to the first missing: at most ``most`` of
    ``limit`` bytes in all, decoded with ``errors``."""
    words: list[str] = []
    total = 0
    while len(words) <= most:
        data = _read_file(dir_fd, f"{prefix}.{len(words)}", limit - total)
        if data is None:
            break
        total += len(data)
        words.append(data.decode("utf-8", errors))
    if len(words) > most:
        what = "arguments" if prefix == "a" else "variables"
        raise SpoolError(f"at most {most} {what} are allowed")
    return words


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
        too_large = f"the request's {name} is too large (at most {limit} bytes)"
        if info.st_size > limit:
            raise SpoolError(too_large)
        data = _read_all(fd, limit + 1)
        if len(data) > limit:
            raise SpoolError(too_large)
        return data
    finally:
        os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes of ``fd``, to its end (one read may return less)."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


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
