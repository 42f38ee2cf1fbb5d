"""`agent-gateway run`: its options, and the run itself (gateway.runner.run)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gateway.cli import values
from gateway.cli.parser import Subcommands, csv_list

if TYPE_CHECKING:
    from gateway.runner.run import RunRequest

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")


def add_parser(sub: Subcommands) -> None:
    run = sub.add_parser(
        "run",
        help="run the agent with the gateway attached",
        description="Run the real Claude Code agent loop (the binary claude-agent-sdk "
        "bundles, else `claude` on PATH) with policy, archive and tracing attached. The "
        "environment (ANTHROPIC_*, OTEL_*, CLAUDE_CODE_*) reaches the agent: "
        "ANTHROPIC_BASE_URL points it at another Messages API (`agent-gateway scripted-api` "
        "serves one offline). Text mode prints the answer on stdout and the session id, each "
        "tool call's decision, retries and the cost on stderr.",
    )
    _options(run)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", help="the prompt for the agent")
    _agent_options(p)
    _gateway_options(p)
    _output_options(p)


def _agent_options(p: argparse.ArgumentParser) -> None:
    """What Claude Code is started with: directory, model, limits, permissions, session."""
    p.add_argument("--cwd", help="working directory of the agent (default: current directory)")
    p.add_argument("--model", help="model name or alias, e.g. claude-opus-5-5")
    p.add_argument(
        "--max-turns", type=values.positive_int, metavar="N",
        help="stop after N turns (error_max_turns); at least 1",
    )
    p.add_argument(
        "--max-budget-usd",
        type=values.positive_float,
        metavar="USD",
        help="stop when the run's cost reaches USD (error_max_budget_usd); above 0",
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


def _gateway_options(p: argparse.ArgumentParser) -> None:
    """What the gateway attaches: the policy, and when the session compacts."""
    p.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project (lower layers only tighten); "
        "default: AGENT_GATEWAY_POLICY",
    )
    p.add_argument(
        "--autocompact",
        type=autocompact_window,
        metavar="auto|TOKENS",
        help="auto-compact window: compact when the context passes TOKENS (at least 100000; "
        "500k and 1m work too)",
    )


def _output_options(p: argparse.ArgumentParser) -> None:
    """What is printed, and where."""
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
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="text mode: print only the answer (no session id, tool calls, retries or cost "
        "on stderr)",
    )


AUTOCOMPACT_MIN_TOKENS = 100_000
_SUFFIX = {"k": 1_000, "m": 1_000_000}


def autocompact_window(value: str) -> str:
    """Claude Code's own rule for --autocompact (measured on 2.1.332): `auto`, or a window of
    at least 100k tokens, written 200000, 500k, 1.5m, or 100 to 1000 meaning thousands."""
    text = value.strip()
    if text == "auto":
        return text
    scale = _SUFFIX.get(text[-1:].lower(), 1)
    try:
        number = float(text[:-1] if scale != 1 else text)
    except ValueError:
        number = -1.0
    if scale == 1 and 100 <= number <= 1000:
        scale = 1_000  # Claude Code reads 200 as 200k
    if not number * scale >= AUTOCOMPACT_MIN_TOKENS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: must be 'auto' or a window of at least 100k tokens "
            "(200000, 500k, 1m; 100 to 1000 mean thousands)"
        )
    return text


def request_from_args(args: argparse.Namespace) -> RunRequest:
    from gateway.runner.options import RunOptions
    from gateway.runner.run import RunRequest

    options = RunOptions(
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
        progress=not args.quiet,
    )


def usage_error(args: argparse.Namespace) -> str | None:
    """What Claude Code would refuse after starting, said before anything starts."""
    import os

    if not args.prompt.strip():
        return "the prompt is empty"
    if args.fork_session and not args.resume:
        return "--fork-session needs --resume SESSION"
    if args.permission_mode == "bypassPermissions" and _is_root():
        return ("--permission-mode bypassPermissions is refused by Claude Code when running as "
                "root; use --allowed-tools or a policy's allow rules")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        return f"--cwd {args.cwd}: no such directory"
    if args.settings is not None:
        return _settings_error(args.settings)
    return None


def _is_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0


def _settings_error(value: str) -> str | None:
    import json
    import os

    if value.lstrip().startswith("{"):
        try:
            if isinstance(json.loads(value), dict):
                return None
        except ValueError as exc:
            return f"--settings: not valid JSON: {exc}"
        return "--settings: the JSON must be an object"
    if not os.path.isfile(value):
        return f"--settings {value}: no such file (give a settings file or a JSON object)"
    return None


def run(args: argparse.Namespace) -> int:
    problem = usage_error(args)
    if problem:
        print(f"agent-gateway run: error: {problem} (see agent-gateway run --help)",
              file=sys.stderr)
        return 2
    import asyncio

    from gateway.env import policy_paths_from_env, tokens_files
    from gateway.errors import GatewayError
    from gateway.runner.account import RunAccount
    from gateway.runner.budget import RunBudget, run_team
    from gateway.runner.private_process import make_private
    from gateway.runner.run import execute

    make_private()  # the agent runs as this user: the key and hook token stay in here
    request = request_from_args(args)
    if not request.policy_paths:
        request.policy_paths = policy_paths_from_env()
    if not request.policy_paths:
        print("agent-gateway run: no policy: every tool call is left to Claude Code and none is "
              "audited; --policy FILE (or AGENT_GATEWAY_POLICY) enforces one", file=sys.stderr)
    try:
        budget = RunBudget.from_env()
        team = budget.team if budget else run_team(next(iter(tokens_files()), None))[0]
        account = RunAccount(team=team, budget=budget)
        return asyncio.run(execute(request, sys.stdout, sys.stderr, None, account))
    except GatewayError as exc:
        print(f"agent-gateway run: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
