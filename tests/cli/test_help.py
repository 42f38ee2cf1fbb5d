"""Every subcommand and every option of `agent-gateway` says what it does in --help."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from gateway.cli.main import COMMANDS, build_parser


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", argparse.Action([], name, help=helps.get(name))
                yield from _walk(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_subcommand_and_option_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, action in _walk(build_parser(), "agent-gateway")
        if not (action.help or "").strip() or action.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_every_command_is_in_the_tree() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS)
