"""``gadmin user ... --install`` as root: the credentials file is written with the user's own
rights, so it is theirs (0600) and links they plant cannot make root write elsewhere."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota.credentials import install_credentials

NOBODY = 65534

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="writing another user's credentials is root's job"
)


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's tmp_path is root's only)."""
    path = Path(tempfile.mkdtemp(prefix="rota-creds-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def home_of_nobody(base: Path, name: str) -> Path:
    home = base / name
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    return home


def test_root_installs_a_file_the_user_owns_mode_0600(base: Path) -> None:
    home = home_of_nobody(base, "ann")
    path = install_credentials(home / ".config" / "rota" / "credentials", "tok", NOBODY, NOBODY)
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (NOBODY, NOBODY, 0o600)
    assert path.read_text() == "tok\n"
    for directory in (path.parent, path.parent.parent):
        assert directory.stat().st_uid == NOBODY and directory.stat().st_mode & 0o777 == 0o700
    assert os.geteuid() == 0 and os.getegid() == 0, "root's ids are back"


def test_links_the_user_planted_cannot_redirect_roots_write(base: Path) -> None:
    secret = base / "secret"
    secret.write_text("keep\n")
    secret.chmod(0o600)
    linked_dir = home_of_nobody(base, "eve")
    (linked_dir / ".config").symlink_to(base)  # .config -> a directory only root may write
    with pytest.raises(PermissionError):
        install_credentials(linked_dir / ".config" / "rota" / "credentials", "t", NOBODY, NOBODY)
    assert not (base / "rota").exists()
    hard = home_of_nobody(base, "mal") / "credentials"
    os.link(secret, hard)  # a hard link to root's file (as if protected_hardlinks were off)
    with pytest.raises(PermissionError):
        install_credentials(hard, "t", NOBODY, NOBODY)
    assert secret.read_text() == "keep\n" and secret.stat().st_uid == 0
