"""The argument parser every subcommand shares: errors as one line, pointing at --help."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, TypeAlias


class Parser(argparse.ArgumentParser):
    """Errors as one line, pointing at --help, instead of the usage block; an unknown option
    is named with the nearest one of the subcommand that was given it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._unrecognized(parsed, extras)
        return parsed

    def _unrecognized(self, parsed: argparse.Namespace, extras: list[str]) -> NoReturn:
        """The innermost subcommand given says what it did not recognize (argparse leaves
        that to the top parser, which names neither the subcommand nor its options)."""
        import difflib

        owner = self._innermost(parsed)
        option = next((e.split("=", 1)[0] for e in extras if e.startswith("-") and e != "-"),
                      None)
        if option is None:
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        known = sorted(s for action in owner._actions for s in action.option_strings
                       if s.startswith("--"))
        close = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        owner.error(f"unrecognized option {option}{hint}")

    def _innermost(self, parsed: argparse.Namespace) -> Parser:
        parser: Parser = self
        while True:
            step = None
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction) and action.dest:
                    chosen = getattr(parsed, action.dest, None)
                    step = action.choices.get(chosen) if chosen else None
            if not isinstance(step, Parser):
                return parser
            parser = step


if TYPE_CHECKING:
    Subcommands: TypeAlias = argparse._SubParsersAction[Parser]
else:  # not subscriptable at run time
    Subcommands = argparse._SubParsersAction


def csv_list(value: str) -> list[str]:
    return [part for chunk in value.split(",") for part in chunk.split() if part]
