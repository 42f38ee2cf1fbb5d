"""`agent-gateway`: the command tree. Each subcommand lives in its own module (an
`add_parser` and a `run`), and every module imports what its command needs only when it runs,
so `agent-gateway hook pre-tool-use` pays for neither the SDK nor aiohttp."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from gateway.cli import archive, audit, demo, hook, policy, run, serve, settings, spend, trace
from gateway.cli.parser import Parser

COMMANDS: dict[str, ModuleType] = {
    "run": run, "demo": demo, "hook": hook, "policy": policy, "audit": audit,
    "archive": archive, "serve": serve, "settings": settings, "spend": spend, "trace": trace,
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole tree, or just one subcommand's (the hook runs once per tool call)."""
    parser = Parser(
        prog="agent-gateway",
        description="Policy, compaction audit and tracing for Claude Code agents.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, module in COMMANDS.items():
        if only is None or name == only:
            add: Callable[..., None] = module.add_parser
            add(sub)
    return parser


def _version() -> str:
    from gateway import __version__

    return f"agent-gateway {__version__}"


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser("hook" if args_in[:1] == ["hook"] else None)
    args = parser.parse_args(args_in)
    command: Callable[[argparse.Namespace], int] = COMMANDS[args.command].run
    sys.exit(command(args))
