"""Subcommand parsers that name their choices when one is missing."""

from __future__ import annotations

import argparse


def name_subcommands(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every subcommand group of ``parser`` (nested ones too) its choices as metavar, so
    a missing one reads "required: {add,list,revoke,token}", not the internal "required: op".
    Returns ``parser``; call it once all subcommands are added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if action.metavar is None:
                action.metavar = "{" + ",".join(action.choices) + "}"
            for sub in action.choices.values():
                name_subcommands(sub)
    return parser
