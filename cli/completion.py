"""Shell completion scripts for bash and zsh (``rota completion bash|zsh``).

The scripts are generated from the commands' own argument parsers: subcommands, options, the
choices of an option, and job ids (the caller's own, from ``gqueue --me``) where a command takes
them. Files complete wherever nothing else does (``gsub`` takes files).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import import_module

SHELLS = ("bash", "zsh")
COMMANDS = (
    "rota",
    "gsub",
    "gqueue",
    "gcancel",
    "glogs",
    "ginfo",
    "gcontrol",
    "gadmin",
    "grun",
    "gattach",
)
MODULES = {"rota": "rota_main"}
JOB_ID_LIST = "gqueue --me --noheader -o %i 2>/dev/null | sed 's/_\\[.*//' | sort -u"


@dataclass
class Words:
    """What completes where: ``cmd:sub path`` -> words; ``cmd:path:--opt`` -> its choices;
    the ``cmd:path`` places whose arguments are job ids."""

    words: dict[str, list[str]] = field(default_factory=dict)
    choices: dict[str, list[str]] = field(default_factory=dict)
    job_ids: set[str] = field(default_factory=set)


def _walk(parser: argparse.ArgumentParser, key: str, out: Words) -> None:
    words: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words.append(name)
                _walk(sub, f"{key}{' ' if not key.endswith(':') else ''}{name}", out)
        elif action.option_strings:
            words += action.option_strings
            if action.choices:
                for option in action.option_strings:
                    out.choices[f"{key}:{option}"] = [str(c) for c in action.choices]
        elif action.metavar == "JOBID":
            out.job_ids.add(key)
        elif action.choices:
            words += [str(c) for c in action.choices]
    out.words[key] = words


def parser_of(command: str) -> argparse.ArgumentParser:
    module = import_module(f"rota.cli.{MODULES.get(command, command)}")
    build: Callable[[], argparse.ArgumentParser] = module.build_parser
    return build()


def collect() -> Words:
    out = Words()
    for command in COMMANDS:
        _walk(parser_of(command), f"{command}:", out)
    return out


def _assoc(shell: str, name: str, table: dict[str, list[str]]) -> Iterator[str]:
    """An associative array; bash wants ``[key]=value`` pairs, zsh ``key value``."""
    yield f"typeset -gA {name}"
    yield f"{name}=("
    for key, values in sorted(table.items()):
        value = _quote(" ".join(values))
        yield f"  [{_quote(key)}]={value}" if shell == "bash" else f"  {_quote(key)} {value}"
    yield ")"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _tables(shell: str, words: Words) -> list[str]:
    return [
        *_assoc(shell, "_rota_words", words.words),
        *_assoc(shell, "_rota_choices", words.choices),
        *_assoc(shell, "_rota_jobids", {k: ["1"] for k in words.job_ids}),
    ]


BASH = r"""
_rota_complete() {
    local cmd=${COMP_WORDS[0]##*/} path="" cur=${COMP_WORDS[COMP_CWORD]} w i next
    local prev=${COMP_WORDS[COMP_CWORD-1]}
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        next=${path:+$path }$w
        if [[ $w != -* && -n ${_rota_words[$cmd:$next]+set} ]]; then
            path=$next
        fi
    done
    local choices=${_rota_choices[$cmd:$path:$prev]}
    if [[ -n $choices ]]; then
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    elif [[ $cur != -* && -n ${_rota_jobids[$cmd:$path]} ]]; then
        COMPREPLY=($(compgen -W "$(JOB_IDS)" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "${_rota_words[$cmd:$path]}" -- "$cur"))
    fi
}
complete -o default -F _rota_complete COMMANDS
"""

ZSH = r"""
_rota_complete() {
    local cmd=${words[1]:t} path="" w i next
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        next=${path:+$path }$w
        if [[ $w != -* ]] && (( ${+_rota_words[$cmd:$next]} )); then
            path=$next
        fi
    done
    local choices=${_rota_choices[$cmd:$path:$prev]}
    if [[ -n $choices ]]; then
        compadd -- ${=choices}
    elif [[ $cur != -* && -n ${_rota_jobids[$cmd:$path]} ]]; then
        compadd -- ${(f)"$(JOB_IDS)"}
    else
        compadd -- ${=_rota_words[$cmd:$path]}
        [[ $cur == -* ]] || _files
    fi
}
compdef _rota_complete COMMANDS
"""


def script(shell: str) -> str:
    """The completion script for ``shell`` (bash or zsh)."""
    if shell not in SHELLS:
        raise ValueError(f"unknown shell {shell!r}; supported: {', '.join(SHELLS)}")
    setup = {
        "bash": '# rota completion for bash: add  eval "$(rota completion bash)"  to ~/.bashrc',
        "zsh": '# rota completion for zsh: add  eval "$(rota completion zsh)"  to ~/.zshrc '
        "(after compinit)",
    }[shell]
    body = (BASH if shell == "bash" else ZSH).replace("JOB_IDS", JOB_ID_LIST)
    body = body.replace("COMMANDS", " ".join(COMMANDS))
    return "\n".join([setup, *_tables(shell, collect())]) + body
