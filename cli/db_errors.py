"""One line for a database the scheduler's host cannot open (``rota scheduler``, ``rota db``,
``rota admin-token``), instead of SQLAlchemy's traceback and its link to its own docs."""

from __future__ import annotations

PASSWORD_HINT = (
    "; rota reads the password from db_password_file in --config, --db-password-file FILE, "
    "or ROTA_DB_PASSWORD"
)


def database_error(exc: BaseException) -> str | None:
    """``exc``'s one-line text when the database driver raised it (None otherwise): the
    driver's first line, without SQLAlchemy's wrapper, and what to do about a password."""
    from sqlalchemy.exc import DBAPIError

    if not isinstance(exc, DBAPIError):
        return None
    text = str(exc.orig) if exc.orig is not None else str(exc)
    line = next((part.strip() for part in text.splitlines() if part.strip()), type(exc).__name__)
    lowered = line.lower()
    missing = "no password supplied" in lowered or "password authentication failed" in lowered
    return f"cannot open the database: {line}{PASSWORD_HINT if missing else ''}"
