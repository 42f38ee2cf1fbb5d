"""`agent-gateway hook EVENT`: Claude Code's command hook (gateway.handlers.command)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import argparse

    from gateway.cli.parser import Subcommands

from gateway.hookio.events import COMMAND_EVENTS

HOOK_EVENTS = tuple(COMMAND_EVENTS)


def add_parser(sub: Subcommands) -> None:
    from gateway.cli import values

    hook = sub.add_parser(
        "hook", help="Claude Code command hook: hook JSON on stdin, decision on stdout",
        description="The command hook Claude Code runs: the hook input JSON on stdin, the "
        "answer on stdout, exit 0; exit 2 with one line on stderr (a block) whenever it cannot "
        "decide. Policy files come from --policy, else AGENT_GATEWAY_POLICY.",
    )
    hook.add_argument(
        "event", choices=HOOK_EVENTS,
        help="pre-tool-use: decide a tool call; pre-compact: archive the transcript first; "
        "the others are observed (the trace, and at stop Claude Code's own refusals "
        "recorded), never blocking",
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
        type=values.http_url,
        metavar="URL",
        help="ask the gateway at URL instead (for pre-tool-use and pre-compact exit 2, "
        "blocking, if it cannot answer; for the others exit 1)",
    )
    hook.add_argument(
        "--sandbox",
        default="",
        metavar="FINGERPRINT",
        help="the session runs under the OS sandbox compiled from the policy (written by "
        "`agent-gateway settings`): file rules it holds are left to it where the hook cannot "
        "tell; ignored unless it matches the policy in force",
    )
    hook.add_argument(
        "--timeout",
        type=values.positive_float,
        default=10.0,
        metavar="SECONDS",
        help="with --remote: how long to wait for the gateway",
    )


def run(args: argparse.Namespace) -> int:
    from gateway.handlers.command import run_hook

    return run_hook(args.event, args.policy, args.remote, args.timeout, args.sandbox,
                    build_trace=build_trace)


def build_trace(home: Path, body: dict[str, Any], projects_root: Path | None) -> object:
    """The trace of a session wired with local command hooks, at a turn's end."""
    from gateway.server.local_trace import build

    return build(home, body, projects_root=projects_root)


class PlainHook(NamedTuple):
    event: str
    policies: list[str]
    sandbox: str = ""


def plain_invocation(argv: Sequence[str]) -> PlainHook | None:
    """(event, policy paths, sandbox fingerprint) of `EVENT [--policy PATH]... [--sandbox
    FINGERPRINT]`, the form settings files use, read without argparse (building a parser is a
    few ms of every tool call); None for anything else, which the parser reads (and rejects,
    or explains with --help)."""
    if not argv or argv[0] not in HOOK_EVENTS or len(argv) % 2 == 0:
        return None
    policies = []
    sandbox = ""
    for flag, value in zip(argv[1::2], argv[2::2], strict=True):
        if not value or value.startswith("-"):
            return None
        if flag == "--policy":
            policies.append(value)
        elif flag == "--sandbox" and not sandbox:
            sandbox = value
        else:
            return None
    return PlainHook(argv[0], policies, sandbox)
