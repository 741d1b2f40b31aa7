"""The self-fence's timings kept on disk, so that an agent restarted while cut off from the
scheduler still stops the containers it adopts in time."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from rota.agent.fence import SelfFence

log = logging.getLogger("rota.agent")

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This boot's id ("" when unknown): monotonic times are comparable within one boot."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


class FenceRecord:
    """``path`` holds the scheduler's ``node_grace`` and ``node_timeout`` and the last confirmed
    contact (monotonic seconds, the same clock for every process of one boot, ``boot``).

    ``save`` after each contact writes at most once a second of contact (an older contact on
    disk only makes a restarted agent fence earlier); ``restore`` gives a fence that was never
    welcomed the saved timings when they are of this boot.
    """

    def __init__(self, path: Path, boot: Callable[[], str] = boot_id) -> None:
        self.path = path
        self._boot = boot
        self._saved: tuple[float, float, float] | None = None
        self._failed = False

    def save(self, fence: SelfFence) -> None:
        if fence.contact is None:
            return
        now = (fence.node_grace, fence.node_timeout, fence.contact)
        last = self._saved
        if last is not None and last[:2] == now[:2] and now[2] - last[2] < 1.0:
            return
        record = {"boot": self._boot(), "node_grace": now[0], "node_timeout": now[1]}
        record["contact"] = now[2]
        tmp = self.path.with_suffix(".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(record))
            os.replace(tmp, self.path)
        except OSError as exc:
            if not self._failed:
                log.warning("cannot keep the fence's timings in %s: %s", self.path, exc)
            self._failed = True
            return
        self._saved = now

    def restore(self, fence: SelfFence) -> bool:
        """Give ``fence`` the saved timings; False when there are none of this boot."""
        try:
            record = json.loads(self.path.read_text())
            boot, grace = record["boot"], float(record["node_grace"])
            timeout, contact = float(record["node_timeout"]), float(record["contact"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if not boot or boot != self._boot() or fence.contact is not None:
            return False
        fence.restore(grace, timeout, contact)
        return True
