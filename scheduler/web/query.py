"""The API's query parameters: whole numbers, numbers, times and accounting periods, each
read from a request's query or refused with a UserError (400) naming the parameter."""

from __future__ import annotations

from datetime import UTC, datetime

from rota.scheduler.cluster.accounting import AccountingQuery
from rota.scheduler.core.errors import UserError
from rota.when import parse_when


def query_int(
    query: dict[str, str], name: str, default: int, minimum: int, maximum: int = 2**31 - 1
) -> int:
    """The whole number ``name`` of the query, from ``minimum`` to ``maximum``; UserError
    (400) naming it otherwise."""
    text = query.get(name, "")
    if not text:
        return default
    try:
        value = int(text) if len(text) <= 20 else maximum + 1
    except ValueError:
        raise UserError(f"{name}: {text[:40]!r} is not a whole number") from None
    if not minimum <= value <= maximum:
        raise UserError(f"{name}: must be from {minimum} to {maximum}")
    return value


def query_float(query: dict[str, str], name: str, default: float) -> float:
    """The number ``name`` of the query; UserError (400) naming it when it is none."""
    text = query.get(name, "")
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{name}: {text!r} is not a number") from None


def query_time(query: dict[str, str], name: str) -> float:
    """``name`` of the query as ``parse_time`` reads it, or 0 when absent."""
    text = query.get(name, "").strip()
    return parse_time(text, name) if text else 0.0


def parse_time(text: str, name: str) -> float:
    """``text`` in ``rota.when``'s grammar (ISO 8601, ``now-2h``, ``tomorrow 09:00``...; UTC
    unless it names a zone) in Unix seconds; UserError naming ``name`` and the forms."""
    try:
        return parse_when(text, datetime.now(UTC), name)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def query_period(query: dict[str, str]) -> AccountingQuery:
    """The period ``start``..``end`` of the query (0: open); UserError when it ends first."""
    start, end = query_time(query, "start"), query_time(query, "end")
    if start and end and end < start:
        raise UserError("end: must not be before start")
    return AccountingQuery(start=start, end=end)
