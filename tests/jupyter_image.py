"""A Docker image holding a real Python and a real JupyterLab, built FROM scratch (no image can
be pulled here, but the package registry can be reached), for ``grun --jupyter``'s end-to-end
test.

The image is this machine's own interpreter (``sys.base_prefix``, at the same paths, so it
finds its standard library and shared libraries where they were built to be), its standard
library less what a lab never imports (tests, IDLE, Tk ...), JupyterLab and its dependencies
``pip install --target``-ed into the interpreter's site-packages (their data files under the
prefix, where Jupyter looks), every shared library ``ldd`` names for the interpreter and for
each ``.so`` in the tree (with the dynamic loader), busybox for ``sh``, an ``/etc/passwd``
and ``/etc/group`` and a world-writable ``/tmp``. It is tagged
``rota-test-jupyter:PYTHON-KEY``, PYTHON naming the interpreter and KEY a hash of this file and
the requirement: when an image with that tag exists nothing is built, so only a suite's first
run pays for it. Builds on one machine are serialised by a file lock; a build removes the same
interpreter's images of older content.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPOSITORY = "rota-test-jupyter"
REQUIREMENT = "jupyterlab>=4,<5"
# standard library parts no lab imports, and the host's own installed packages
STDLIB_LEFT_OUT = (
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
    "config-*",
    "*.opt-1.pyc",
    "*.opt-2.pyc",
)
# installed parts a lab runs without: the kernel debugger, Babel's non-English locales
PRUNED = ("debugpy",)
BABEL_LOCALES_KEPT = re.compile(r"(root|en|en_[A-Z]+)\.dat")
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")


def interpreter_key() -> str:
    """Which interpreter the image holds (images of others are left alone)."""
    made = f"{sys.version} {sys.base_prefix} {platform.machine()}"
    return f"py{sys.version_info.major}{sys.version_info.minor}-" + _hash(made.encode())[:8]


def content_key() -> str:
    """A hash of everything the image is made from."""
    return _hash(Path(__file__).read_bytes() + REQUIREMENT.encode())[:12]


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_jupyter_image() -> str:
    """The image's tag, building it unless an image of the same content key exists."""
    tag = f"{REPOSITORY}:{interpreter_key()}-{content_key()}"
    if _exists(tag):
        return tag
    lock = Path(tempfile.gettempdir()) / f"{REPOSITORY}.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker may be building the same image
        if not _exists(tag):
            with tempfile.TemporaryDirectory(prefix=f"{REPOSITORY}-") as ctx:
                _build(Path(ctx), tag)
            _remove_older(tag)
    return tag


def _exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def _build(ctx: Path, tag: str) -> None:
    root = ctx / "rootfs"
    prefix = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = prefix / "bin" / version
    stdlib = Path(sysconfig.get_path("stdlib"))
    packages = _site_packages(interpreter)
    _copy_file(interpreter, root)
    (root / interpreter.with_name("python3").relative_to("/")).symlink_to(version)
    shutil.copytree(
        stdlib,
        _inside(root, stdlib),
        ignore=shutil.ignore_patterns(*STDLIB_LEFT_OUT),
        ignore_dangling_symlinks=True,
    )
    _install_jupyterlab(root, packages, prefix, interpreter)
    objects = [p for p in root.rglob("*.so*") if p.suffix == ".so" or ".so." in p.name]
    libraries = _shared_libraries(root, [interpreter, *objects])
    for library in libraries:
        _copy_file(library, root)
    _add_busybox(root)
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text(PASSWD)
    (etc / "group").write_text(GROUP)
    (root / "tmp").mkdir(mode=0o1777)
    (root / "tmp").chmod(0o1777)
    search = sorted({str(p.parent) for p in libraries if "ld-linux" not in p.name})
    path = ":".join(dict.fromkeys([str(interpreter.parent), "/usr/local/bin", "/usr/bin", "/bin"]))
    (ctx / "Dockerfile").write_text(
        f"FROM scratch\nCOPY rootfs/ /\nENV PATH={path} LD_LIBRARY_PATH={':'.join(search)}\n"
    )
    subprocess.run(["docker", "build", "-q", "-t", tag, str(ctx)], check=True, capture_output=True)


def _site_packages(interpreter: Path) -> Path:
    """The first site-packages directory ``interpreter`` itself (not a venv) searches."""
    ask = "import site; print(site.getsitepackages()[0])"
    out = subprocess.run([interpreter, "-I", "-c", ask], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _install_jupyterlab(root: Path, packages: Path, prefix: Path, interpreter: Path) -> None:
    """JupyterLab into ``packages``; its data files (``share/``, ``etc/``) under ``prefix``
    and its commands in the interpreter's ``bin/``, started by the interpreter."""
    target = _inside(root, packages)
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--target",
            str(target),
            REQUIREMENT,
        ],
        capture_output=True,
        text=True,
    )
    if pip.returncode:
        raise RuntimeError(f"pip could not install {REQUIREMENT}:\n{pip.stdout}{pip.stderr}")
    for name in PRUNED:
        shutil.rmtree(target / name, ignore_errors=True)
    for dat in (target / "babel" / "locale-data").glob("*.dat"):
        if not BABEL_LOCALES_KEPT.fullmatch(dat.name):
            dat.unlink()
    for data in ("share", "etc"):
        if (target / data).is_dir():
            shutil.copytree(target / data, _inside(root, prefix / data), dirs_exist_ok=True)
            shutil.rmtree(target / data)
    bindir = _inside(root, interpreter.parent)
    for script in sorted((target / "bin").iterdir()):
        lines = script.read_text(errors="surrogateescape").splitlines(keepends=True)
        if lines and lines[0].startswith("#!") and "python" in lines[0]:
            dest = bindir / script.name
            dest.write_text(f"#!{interpreter}\n" + "".join(lines[1:]), errors="surrogateescape")
            dest.chmod(0o755)
    shutil.rmtree(target / "bin")


def _shared_libraries(root: Path, binaries: list[Path]) -> list[Path]:
    """Every shared library (and the loader) ``ldd`` names for ``binaries``, outside ``root``."""
    found: set[Path] = set()
    for chunk in _chunks([str(b) for b in binaries if b.is_file() and not b.is_symlink()], 200):
        out = subprocess.run(["ldd", *chunk], capture_output=True, text=True).stdout
        for match in LDD_LINE.finditer(out):
            path = Path(match.group(1))
            if not path.is_relative_to(root) and path.exists():
                found.add(path)
    return sorted(found)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _add_busybox(root: Path) -> None:
    busybox = shutil.which("busybox")
    if busybox is None:
        raise RuntimeError("busybox-static is needed (apt-get install busybox-static)")
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    shutil.copy(busybox, bin_dir / "busybox")
    names = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for name in names.stdout.split():
        if not (bin_dir / name).exists():
            (bin_dir / name).symlink_to("busybox")


def _inside(root: Path, path: Path) -> Path:
    """``path`` (absolute, on this machine) at the same place in the image's tree."""
    return root / path.relative_to("/")


def _copy_file(path: Path, root: Path) -> None:
    """``path``'s content (links followed) at the same path in the image's tree."""
    dest = _inside(root, path)
    if dest.exists():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath(path), dest)


def _remove_older(tag: str) -> None:
    """Remove the images of the same interpreter and older content (each about 200 MB)."""
    listed = subprocess.run(
        ["docker", "images", REPOSITORY, "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    same = f"{REPOSITORY}:{interpreter_key()}-"
    stale = [t for t in listed if t != tag and t.startswith(same)]
    if stale:
        subprocess.run(["docker", "rmi", *stale], capture_output=True)
