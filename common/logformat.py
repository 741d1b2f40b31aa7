"""How the daemons log: plain text lines, or one JSON object per line (``--log-format json``).

A log call that concerns a job or a node says so with ``extra={"job": "12_3", "node": "gpu01"}``
(``attempt`` too); the JSON line carries those fields. The agent stamps its node on every line.
A flood of one message (the same template from the same logger) is cut to a few lines per
minute, then summed up in one line (``RepeatFilter``).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

LOG_FORMATS = ("text", "json")
CONTEXT_FIELDS = ("job", "attempt", "node")
REPEAT_LIMIT = 100  # lines of one message template per logger and interval
REPEAT_INTERVAL = 60.0  # seconds


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message"}`` plus the record's job/attempt/node, and the
    traceback as ``exception`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in CONTEXT_FIELDS:
            value = getattr(record, key, None)
            if value is not None and value != "":
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class NodeStamp(logging.Filter):
    """Sets ``node`` on records that do not name one (every line of an agent is its node's)."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "node", None) in (None, ""):
            record.node = self.node
        return True


class RepeatFilter(logging.Filter):
    """Lets one message template (``record.msg``, before its arguments are filled in) of one
    logger through at most ``limit`` times per ``interval`` seconds (``clock``); the rest of
    that window are dropped, tracebacks and all. The last line let through says so, and the
    first such line of a later window carries ``[suppressed K similar lines in the previous
    Ns]``."""

    MAX_KEYS = 4096  # templates followed at once; expired windows are forgotten beyond it

    def __init__(
        self,
        limit: int = REPEAT_LIMIT,
        interval: float = REPEAT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.limit = limit
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._windows: dict[tuple[str, str], list[float]] = {}  # key -> [start, passed, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.interval:
                dropped = int(window[2]) if window is not None else 0
                if window is None and len(self._windows) >= self.MAX_KEYS:
                    self._forget_expired(now)
                self._windows[key] = [now, 1, 0]
                if dropped:
                    record.msg = (
                        f"{record.msg} [suppressed {dropped} similar lines in the previous "
                        f"{self.interval:g}s]"
                    )
                return True
            if window[1] < self.limit:
                window[1] += 1
                if window[1] == self.limit:
                    record.msg = f"{record.msg} [similar lines suppressed for {self.interval:g}s]"
                return True
            window[2] += 1
            return False

    def _forget_expired(self, now: float) -> None:
        for key in [k for k, w in self._windows.items() if now - w[0] >= self.interval]:
            del self._windows[key]


def configure_logging(verbose: bool, log_format: str = "text", node: str = "") -> None:
    """Log to stderr at INFO (DEBUG when verbose) in the given format; ``node`` stamps lines."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(RepeatFilter())
    if node:
        handler.addFilter(NodeStamp(node))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    # Alembic says which plugins and dialect it set up on every start; rota.scheduler.store.schema
    # logs each migration it runs instead
    logging.getLogger("alembic").setLevel(logging.DEBUG if verbose else logging.WARNING)
