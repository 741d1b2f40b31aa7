"""What the owners of a reservation are told when the no-show rule gives its window back
(``core/noshow.py``): the words (the audit log's and the scheduler log's too), who its owners
are (its users, and the members of its accounts), and, when the admin set ``mail_relay``, one
mail per owner, queued with the give-back (``ReservationRepository.save``) and sent as job mail
is (``MailService``, ``rota.scheduler.mailer``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from rota.scheduler.cluster.reservation import RELEASE, Reservation
from rota.scheduler.cluster.users import UserRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.store.protocols import BookingMail


def unused_words(r: Reservation, now: float) -> tuple[str, str]:
    """Why ``r`` was given back at ``now``, and what became of its window."""
    minutes = round((now - r.start) / 60)
    why = f"no job of {', '.join(r.users + r.accounts)} used it for {minutes} min"
    if r.unused == RELEASE:
        return why, "the booking is released"
    return why, "its GPUs are lent to the queue until an owner's job arrives"


def owners(r: Reservation, users: Iterable[UserRecord]) -> list[str]:
    """The users ``r`` is for: its users, and every user (not revoked) who may submit to one
    of its accounts (a user given no accounts submits to their own name's), sorted."""
    found = set(r.users)
    for u in users:
        if not u.revoked and set(u.accounts or (u.name,)) & set(r.accounts):
            found.add(u.name)
    return sorted(found)


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))


class UnusedNotice:
    """The mails that tell a given-back reservation's owners; none without a mail relay."""

    def __init__(
        self,
        config: SchedulerConfig,
        users: Callable[[], Iterable[UserRecord]],
        address: Callable[[str], str],
    ) -> None:
        self.config = config
        self.users = users  # every user as stored (the members of an account booking)
        self.address = address  # a user name as a mail address (``MailService.address``)

    def mails(self, r: Reservation, now: float) -> list[BookingMail]:
        """One mail per owner of ``r`` saying it was given back at ``now``, why, and what
        became of it; none for a MAINT reservation (never given back) or without a relay."""
        if self.config.mail_relay is None or r.maint:
            return []
        why, done = unused_words(r, now)
        released = r.unused == RELEASE
        subject = f"rota Reservation={r.name} unused: {'released' if released else 'lent'}"
        gpus = "; ".join(f"{node} GPUs {','.join(map(str, idx))}" for node, idx in r.gpus.items())
        then = (
            "Its GPUs are free for anyone until this window ends."
            if released
            else f"Submit a job with --reservation {r.name} to take its GPUs back."
        )
        body = (
            f"Reservation {r.name} ({_utc(r.start)} to {_utc(r.end)}, {gpus}) was given back "
            f"at {_utc(now)}: {why}; {done}.\n{then}\nSee `greserve show {r.name}`.\n"
        )
        who = owners(r, self.users())
        return [BookingMail(r.name, self.address(o), subject, body) for o in who]
