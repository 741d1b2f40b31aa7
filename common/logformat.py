"""How the daemons log: plain text lines, or one JSON object per line (``--log-format json``).

A log call that concerns a job or a node says so with ``extra={"job": "12_3", "node": "gpu01"}``
(``attempt`` too); the JSON line carries those fields. The agent stamps its node on every line.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

LOG_FORMATS = ("text", "json")
CONTEXT_FIELDS = ("job", "attempt", "node")


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


def configure_logging(verbose: bool, log_format: str = "text", node: str = "") -> None:
    """Log to stderr at INFO (DEBUG when verbose) in the given format; ``node`` stamps lines."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    if node:
        handler.addFilter(NodeStamp(node))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
