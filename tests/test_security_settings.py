"""Security settings of the scheduler: the database password kept off the command line, owner-
only database files, and bad security settings named at start-up."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rota.scheduler.config import load_config

PG = "postgresql+psycopg://rota@db.example.org/rota"


def test_the_database_password_comes_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROTA_DB_PASSWORD", "from-env")
    assert load_config(None, database_url=PG).resolved_database_url() == (
        "postgresql+psycopg://rota:from-env@db.example.org/rota"
    )
    secret = tmp_path / "db-password"
    secret.write_text("s3cret/with@odd:chars\n")
    config = load_config(None, database_url=PG, db_password_file=str(secret))
    url = config.resolved_database_url()
    assert url.startswith("postgresql+psycopg://rota:s3cret%2Fwith%40odd%3Achars@db.example.org")
    missing = load_config(None, database_url=PG, db_password_file=str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="db_password_file: cannot read"):
        missing.resolved_database_url()


def test_the_default_database_is_readable_by_its_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ROTA_DB_PASSWORD", raising=False)
    url = load_config(None).resolved_database_url()
    db = Path(url.removeprefix("sqlite:///"))
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"allowed_mounts": ["/"]}, "mounting / is never allowed"),
        ({"allowed_mounts": ["/etc/"]}, "never allowed"),
        ({"allowed_mounts": ["data"]}, "absolute path"),
        ({"max_array_size": 0}, "max_array_size"),
        ({"max_array_size": 10**9}, "at most"),
        ({"tls_cert": "cert.pem"}, "tls_cert and tls_key"),
        ({"tls_client_ca": "ca.pem"}, "needs tls_cert"),
    ],
)
def test_bad_security_settings_are_named(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(None, **values)
