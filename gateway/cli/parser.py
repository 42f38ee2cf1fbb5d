"""The argument parser every subcommand shares: errors as one line, pointing at --help."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn, TypeAlias


class Parser(argparse.ArgumentParser):
    """Errors as one line, pointing at --help, instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


if TYPE_CHECKING:
    Subcommands: TypeAlias = argparse._SubParsersAction[Parser]
else:  # not subscriptable at run time
    Subcommands = argparse._SubParsersAction


def csv_list(value: str) -> list[str]:
    return [part for chunk in value.split(",") for part in chunk.split() if part]


