"""`agent-gateway hook EVENT`: Claude Code's command hook (gateway.hooks.command)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from gateway.cli.parser import Subcommands

HOOK_EVENTS = ("pre-tool-use", "pre-compact")


def add_parser(sub: Subcommands) -> None:
    hook = sub.add_parser(
        "hook", help="Claude Code command hook: hook JSON on stdin, decision on stdout",
        description="The command hook Claude Code runs: the hook input JSON on stdin, the "
        "answer on stdout, exit 0; exit 2 with one line on stderr (a block) whenever it cannot "
        "decide. Policy files come from --policy, else AGENT_GATEWAY_POLICY.",
    )
    hook.add_argument(
        "event", choices=HOOK_EVENTS,
        help="pre-tool-use: decide a tool call; pre-compact: archive the transcript first",
    )
    hook.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project (default: AGENT_GATEWAY_POLICY)",
    )
    hook.add_argument(
        "--remote",
        metavar="URL",
        help="ask the gateway at URL instead (exit 2, blocking, if it cannot answer)",
    )
    hook.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --remote: how long to wait for the gateway",
    )


def run(args: argparse.Namespace) -> int:
    from gateway.hooks.command import run_hook

    return run_hook(args.event, args.policy, args.remote, args.timeout)


def plain_invocation(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """(event, policy paths) of `EVENT [--policy PATH]...`, the form settings files use, read
    without argparse (building a parser is a few ms of every tool call); None for anything
    else, which the parser reads (and rejects, or explains with --help)."""
    if not argv or argv[0] not in HOOK_EVENTS or len(argv) % 2 == 0:
        return None
    policies = []
    for flag, value in zip(argv[1::2], argv[2::2], strict=True):
        if flag != "--policy" or not value or value.startswith("-"):
            return None
        policies.append(value)
    return argv[0], policies
