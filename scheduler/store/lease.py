"""Leadership of schedulers sharing one PostgreSQL database: a lease row with an epoch, and the
fence that refuses a deposed leader's writes.

The ``leader`` table holds one row: the current leader's ``epoch``, its advertised address and
when it last renewed, on the database's clock (no two hosts' clocks are compared). A scheduler
becomes leader by raising the epoch, which it may do when the lease has not been renewed for
``lease`` seconds, or at once when it gets the advisory lock ``LOCK_KEY`` that the row says
the leader holds: the leader holds that lock on its lease connection (``locked``), so it is
free only when the leader's connection is gone (its process was killed: take-over need not
wait for the lease to lapse). A leader that took over by the lease while its stopped
predecessor still held the lock records ``locked`` false until a renewal gets the lock, and
meanwhile standbys leave the lock alone and wait for the lease: a live leader is never
replaced.

Fencing: a new leader ends the deposed leader's database sessions (their open transactions
roll back), and every transaction the leader commits first reads the lease row ``FOR SHARE``
with its epoch (``Fence``, a commit hook on the store's engine). A take-over's epoch change waits for
those locks, and a commit after it finds another epoch and is rolled back: nothing a deposed
leader does after another took over is ever committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError

log = logging.getLogger(__name__)

LOCK_KEY = 0x726F74616C656164  # "rotalead"
IDLE_IN_TRANSACTION_MS = 10_000  # the server ends a leader's transaction left open this long
_NOW = "extract(epoch from clock_timestamp())"
_TAKE = text(
    f"UPDATE leader SET epoch = epoch + 1, holder = :holder, renewed_at = {_NOW}, "
    f"locked = :free WHERE id = 1 AND ((:free AND locked) OR renewed_at < {_NOW} - :lease) "
    "RETURNING epoch"
)
_RENEW = text(
    f"UPDATE leader SET renewed_at = {_NOW}, locked = :locked WHERE id = 1 AND epoch = :epoch"
)
_LEADER = text("SELECT holder, epoch FROM leader WHERE id = 1")
_CLAIMED = text("SELECT locked FROM leader WHERE id = 1")
_FENCE = "SELECT 1 FROM leader WHERE id = 1 AND epoch = %s FOR SHARE"
_APP = "rota-leader-"  # application_name of a leader's store connections, then its epoch
_CUT = text(
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND application_name LIKE :deposed "
    "AND application_name <> :mine"
)


class Fenced(RuntimeError):
    """A write of a scheduler that is no longer the leader: it was rolled back."""


def leader_engine_options(epoch: int) -> dict[str, Any]:
    """``create_engine`` keywords for the store of the leader at ``epoch`` on PostgreSQL: its
    connections are named for the epoch, so the next leader can end them (``Lease.take``),
    and a transaction it leaves open (its process stopped mid-write) is ended by the server in
    any case, so its row locks cannot hold the next leader up for long."""
    return {
        "connect_args": {
            "application_name": f"{_APP}{epoch}",
            "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}",
        }
    }


class Lease:
    """One scheduler's side of the election, on a connection of its own (autocommit).

    ``holder``: the address clients and standbys are told to use; ``lease``: seconds without
    a renewal after which a standby takes over."""

    def __init__(self, url: str, holder: str, lease: float) -> None:
        self.holder = holder
        self.lease = lease
        self.epoch = 0  # ours once ``take`` succeeded; 0: not leader
        self._engine = create_engine(url, pool_size=1, max_overflow=0, pool_pre_ping=True)
        self._conn: Connection | None = None
        self._locked = False

    def take(self) -> int:
        """Become leader if the lease lapsed or no leader's connection is alive; the new epoch,
        or 0 (another scheduler leads)."""
        conn = self._connection()
        # only a lock the leader claims to hold says anything: one it has not taken yet is
        # left to it (its renewal takes it), not hoarded by a standby
        free = bool(conn.execute(_CLAIMED).scalar()) and self._lock(conn)
        row = conn.execute(
            _TAKE, {"holder": self.holder, "free": free, "lease": self.lease}
        ).first()
        if row is None:
            return 0
        self.epoch = int(row[0])
        if not free:
            self.renew()  # takes the lock now if it is free, and records that we hold it
        # a deposed leader that is alive but stopped may hold row locks in open transactions
        try:
            cut = conn.execute(
                _CUT, {"deposed": f"{_APP}%", "mine": f"{_APP}{self.epoch}"}
            ).scalar()
        except DBAPIError as exc:  # another role's sessions: they end when idle too long
            log.warning(
                "cannot end the deposed leader's database sessions (%s); the server ends its "
                "open transactions after %ds idle",
                str(exc.orig).strip(),
                IDLE_IN_TRANSACTION_MS // 1000,
            )
            cut = 0
        log.info(
            "leading at epoch %d (lease %gs)%s",
            self.epoch,
            self.lease,
            f"; ended {cut} database session(s) of the deposed leader" if cut else "",
        )
        return self.epoch

    def renew(self) -> bool:
        """Renew our lease; False when another scheduler took over (we are deposed)."""
        conn = self._connection()
        locked = self._lock(conn)
        return conn.execute(_RENEW, {"epoch": self.epoch, "locked": locked}).rowcount == 1

    def leader(self) -> tuple[str, int]:
        """The current leader's address ("" before any) and epoch."""
        row = self._connection().execute(_LEADER).one()
        return str(row[0]), int(row[1])

    def fence(self, on_fenced: Callable[[int], None]) -> Fence:
        """The fence of our epoch; ``on_fenced`` gets the epoch that deposed us."""
        return Fence(self.epoch, on_fenced)

    def close(self) -> None:
        """Close the lease connection (the advisory lock goes with it)."""
        if self._conn is not None:
            self._conn.close()
        self._engine.dispose()

    def _connection(self) -> Connection:
        """The lease connection, opened again (without the lock) after it broke."""
        if self._conn is not None and self._conn.invalidated:
            self._conn.close()
            self._conn, self._locked = None, False
        if self._conn is None:
            conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            # a take-over waits this long at most for a stopped leader's lock on the row
            conn.execute(text(f"SET lock_timeout = {int(self.lease * 1000)}"))
            self._conn = conn
        return self._conn

    def _lock(self, conn: Connection) -> bool:
        """Hold the advisory lock from now on if it is free; whether we hold it."""
        if not self._locked:
            query = text("SELECT pg_try_advisory_lock(:k)")
            self._locked = bool(conn.execute(query, {"k": LOCK_KEY}).scalar())
        return self._locked


class Fence:
    """The commit hook of a leader's store: each commit first checks, holding the lease row
    ``FOR SHARE``, that the epoch is still ours; otherwise ``Fenced`` is raised (the
    transaction is rolled back) and ``on_fenced`` is called."""

    def __init__(self, epoch: int, on_fenced: Callable[[int], None]) -> None:
        self.epoch = epoch
        self._on_fenced = on_fenced

    def attach(self, engine: Engine) -> None:
        event.listen(engine, "commit", self._check)

    def _check(self, conn: Connection) -> None:
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # a connection in a transaction is checked out
        cursor = dbapi.cursor()
        try:
            cursor.execute(_FENCE, (self.epoch,))
            if cursor.fetchone() is not None:
                return
            cursor.execute("SELECT epoch FROM leader WHERE id = 1")
            found = cursor.fetchone()
        finally:
            cursor.close()
        now = int(found[0]) if found else 0
        self._on_fenced(now)
        raise Fenced(f"this scheduler led at epoch {self.epoch}; epoch {now} leads now")
