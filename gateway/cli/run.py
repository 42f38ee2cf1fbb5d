"""`agent-gateway run`: its options, and the run itself (gateway.sdk.run)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gateway.cli.parser import Subcommands, csv_list

if TYPE_CHECKING:
    from gateway.sdk.run import RunRequest

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")


def add_parser(sub: Subcommands) -> None:
    run = sub.add_parser(
        "run",
        help="run the agent with the gateway attached",
        description="Run the real Claude Code agent loop through claude-agent-sdk "
        "with policy, archive and tracing attached. The environment "
        "(ANTHROPIC_*, OTEL_*, CLAUDE_CODE_*) reaches the agent.",
    )
    _options(run)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", help="the prompt for the agent")
    p.add_argument("--cwd", help="working directory of the agent (default: current directory)")
    p.add_argument("--model", help="model name or alias, e.g. claude-opus-5-5")
    p.add_argument(
        "--max-turns", type=int, metavar="N", help="stop after N turns (error_max_turns)"
    )
    p.add_argument(
        "--max-budget-usd",
        type=float,
        metavar="USD",
        help="stop when the run's cost reaches USD (error_max_budget_usd)",
    )
    p.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="Claude Code permission mode (bypassPermissions is refused as root)",
    )
    p.add_argument(
        "--allowed-tools",
        "--allowedTools",
        dest="allowed_tools",
        action="append",
        type=csv_list,
        default=[],
        metavar="TOOLS",
        help="permission rules allowed without asking, comma-separated; repeatable",
    )
    p.add_argument(
        "--disallowed-tools",
        "--disallowedTools",
        dest="disallowed_tools",
        action="append",
        type=csv_list,
        default=[],
        metavar="TOOLS",
        help="permission rules always denied, comma-separated; repeatable",
    )
    p.add_argument("--effort", choices=EFFORT_LEVELS, help="reasoning effort")
    p.add_argument("--resume", metavar="SESSION", help="resume the session with this id")
    p.add_argument(
        "--fork-session",
        action="store_true",
        help="with --resume: continue in a new session id, leaving the original intact",
    )
    p.add_argument("--settings", metavar="FILE_OR_JSON", help="Claude Code settings file or JSON")
    p.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project (lower layers only tighten)",
    )
    p.add_argument(
        "--autocompact",
        metavar="auto|TOKENS",
        help="auto-compact window: compact when the context passes TOKENS (at least 100000)",
    )
    p.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="text: the final answer; json: the result object; "
        "stream-json: every message, one JSON object per line",
    )
    p.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="with stream-json: also print stream_event lines (the partial stream)",
    )


def request_from_args(args: argparse.Namespace) -> RunRequest:
    from claude_agent_sdk import ClaudeAgentOptions

    from gateway.sdk.run import RunRequest

    options = ClaudeAgentOptions(
        cwd=args.cwd,
        model=args.model,
        max_turns=args.max_turns,
        max_budget_usd=args.max_budget_usd,
        permission_mode=args.permission_mode,
        allowed_tools=[t for group in args.allowed_tools for t in group],
        disallowed_tools=[t for group in args.disallowed_tools for t in group],
        effort=args.effort,
        resume=args.resume,
        fork_session=args.fork_session,
        settings=args.settings,
        include_partial_messages=args.include_partial_messages,
        extra_args={"autocompact": args.autocompact} if args.autocompact else {},
    )
    return RunRequest(
        prompt=args.prompt,
        options=options,
        policy_paths=list(args.policy),
        output_format=args.output_format,
    )


def run(args: argparse.Namespace) -> int:
    if args.fork_session and not args.resume:
        print("agent-gateway run: error: --fork-session needs --resume SESSION", file=sys.stderr)
        return 2
    if args.max_turns is not None and args.max_turns < 1:
        print("agent-gateway run: error: --max-turns must be at least 1", file=sys.stderr)
        return 2
    import asyncio

    from gateway.env import tokens_files
    from gateway.errors import GatewayError
    from gateway.sdk.account import RunAccount
    from gateway.sdk.budget import RunBudget, run_team
    from gateway.sdk.run import execute

    try:
        budget = RunBudget.from_env()
        team = budget.team if budget else run_team(next(iter(tokens_files()), None))[0]
        account = RunAccount(team=team, budget=budget)
        return asyncio.run(execute(request_from_args(args), sys.stdout, sys.stderr, None, account))
    except GatewayError as exc:
        print(f"agent-gateway run: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
