"""`agent-gateway`: the command tree. Each subcommand lives in its own module (an
`add_parser` and a `run`), imported only when its command is named (or the whole tree is
wanted, for --help), and every module imports what its command needs only when it runs, so
`agent-gateway hook pre-tool-use` pays for no other command's module, the SDK or aiohttp."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import argparse

COMMANDS: dict[str, str] = {
    "run": "run", "demo": "demo", "hook": "hook", "policy": "policy", "audit": "audit",
    "archive": "archive", "serve": "serve", "settings": "settings", "spend": "spend",
    "trace": "trace", "scripted-api": "scripted_api",
}
"""Command name -> its module in gateway.cli."""


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"gateway.cli.{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole tree, or just one subcommand's (the hook runs once per tool call)."""
    from gateway.cli.parser import Parser

    parser = Parser(
        prog="agent-gateway",
        description="Policy, compaction audit and tracing for Claude Code agents.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMANDS:
        if only is None or name == only:
            add: Callable[..., None] = command_module(name).add_parser
            add(sub)
    return parser


def _version() -> str:
    from gateway import __version__

    return f"agent-gateway {__version__}"


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args_in = list(sys.argv[1:] if argv is None else argv)
    name = args_in[0] if args_in else ""
    try:
        ran = _plain_hook(args_in[1:]) if name == "hook" else None
        if ran is None:  # anything but the settings-file form of the hook: argparse reads it
            parser = build_parser("hook" if name == "hook" else None)
            args = parser.parse_args(args_in)  # --help prints here
            command: Callable[[argparse.Namespace], int] = command_module(args.command).run
            ran = getattr(args, "event", ""), command(args)
        event, status = ran
        sys.stdout.flush()
        if name == "hook" and event == "pre-tool-use":
            _end_hook(status)
    except BrokenPipeError:
        # The reader went away (`archive show ID | head`): stop printing, say nothing. A hook
        # whose answer cannot be delivered blocks, as every hook that cannot answer does.
        _silence_stdout()
        status = 0
        if name == "hook":
            sys.stderr.write("agent-gateway: the hook's answer could not be written\n")
            status = 2
    except OSError as exc:
        # What a command does not handle itself, most often its own output (a full disk, a
        # terminal gone): one line, not a traceback; a hook that cannot answer blocks.
        from gateway.errors import one_line

        _silence_stdout()
        sys.stderr.write(f"agent-gateway: {one_line(exc)}\n")
        status = 2 if name == "hook" else 1
    sys.exit(status)


def _plain_hook(argv: Sequence[str]) -> tuple[str, int] | None:
    """(event, exit status) of the hook run as settings files invoke it, without building a
    parser; None, having run nothing, when the arguments are anything else."""
    from gateway.cli.hook import plain_invocation

    plain = plain_invocation(argv)
    if plain is None:
        return None
    import gc

    # Importing the decision's modules allocates many objects and frees none: cyclic garbage
    # collection would only rescan them (a few ms per call).
    gc.disable()
    try:
        if plain.event == "pre-tool-use":  # what its run_hook imports on its first call
            import gateway.handlers.decision  # noqa: F401
        from gateway.handlers.command import run_hook
    finally:
        gc.enable()
    from gateway.cli.hook import build_trace

    return plain.event, run_hook(plain.event, plain.policies, sandbox=plain.sandbox,
                                 build_trace=build_trace)


def _end_hook(status: int) -> NoReturn:
    """End a PreToolUse hook process as sys.exit would, without the interpreter's teardown of
    every loaded module (about a tenth of the hook's time, once per tool call): the answer is
    flushed, the audit record written and the exit handlers run first."""
    import atexit
    import os

    atexit._run_exitfuncs()
    sys.stdout.flush()  # a BrokenPipeError here blocks, in main
    sys.stderr.flush()
    os._exit(status)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's own flush at exit stays quiet."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
