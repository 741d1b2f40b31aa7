"""gsub's command line read as sbatch reads its own: options first (gsub's, and any sbatch
option, which applies to the batch script), then files; the first batch script ends the options
and every word after it is an argument to that script (``gsub -J x run.sh 5``). Job files (YAML)
before it keep today's behaviour: several may be given, with gsub's options anywhere among them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from rota.cli.errors import CliError
from rota.sbatch_options import long_name, takes_value

# gsub's own options (argparse reads them), with whether each takes a value.
OWN = {
    "--parsable": False,
    "--hold": False,
    "-H": False,
    "--test-only": False,
    "--dry-run": False,
    "--wait": False,
    "-W": False,
    "--strict": False,
    "-h": False,
    "--help": False,
    "-d": True,
    "--dependency": True,
    "--reservation": True,
    "-p": True,
    "--partition": True,
    "-o": True,
    "--output": True,
    "-e": True,
    "--error": True,
    "--notify": True,
    "--notify-on": True,
    "--scheduler": True,
    "--ca": True,
    "--wrap": True,
}


class CommandLine:
    """``own``: words for gsub's parser; ``sbatch``: sbatch option words for the script;
    ``files``: job files, then the script; ``args``: the script's arguments. (Plain classes
    here, not dataclasses: making one costs gsub ~3.6 M instructions at start.)"""

    __slots__ = ("args", "files", "own", "sbatch")

    def __init__(self) -> None:
        self.own: list[str] = []
        self.sbatch: list[str] = []
        self.files: list[str] = []
        self.args: list[str] = []


def split_argv(argv: list[str], is_script: Callable[[str], bool]) -> CommandLine:
    """Sort gsub's words; ``is_script(name)`` says whether a file is a batch script. Words that
    are neither gsub's nor sbatch's options go to ``sbatch`` too, which names them as unknown."""
    line = CommandLine()
    i = 0
    only_files = False
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--" and not only_files:
            only_files = True
        elif word.startswith("-") and word != "-" and not only_files:
            key = word.split("=", 1)[0] if word.startswith("--") else word[:2]
            attached = "=" in word if word.startswith("--") else len(word) > 2
            if key in OWN:
                take = OWN[key] and not attached
                bucket = line.own
            else:
                name = long_name(word)
                take = name is not None and takes_value(name) and not attached
                bucket = line.sbatch
            bucket.append(word)
            if take and i < len(argv):
                bucket.append(argv[i])
                i += 1
        else:
            line.files.append(word)
            if is_script(word):
                line.args = argv[i:]
                break
    return line


class Sources:
    """Reads each input once (``-`` is standard input), for sorting the words and loading."""

    __slots__ = ("texts",)

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def read(self, name: str) -> str:
        if name not in self.texts:
            try:
                self.texts[name] = sys.stdin.read() if name == "-" else Path(name).read_text()
            except OSError as exc:
                raise CliError(f"{name}: cannot read: {exc.strerror}", 2) from None
        return self.texts[name]
