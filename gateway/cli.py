"""Argument parsing only. Every command imports what it needs lazily, so the hook paths
start fast: `agent-gateway hook pre-tool-use` must not pay for the SDK or aiohttp."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
HOOK_EVENTS = ("pre-tool-use", "pre-compact")


class _Parser(argparse.ArgumentParser):
    """Errors as one line, pointing at --help, instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _csv(value: str) -> list[str]:
    return [part for chunk in value.split(",") for part in chunk.split() if part]


def _add_run_options(p: argparse.ArgumentParser) -> None:
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
        type=_csv,
        default=[],
        metavar="TOOLS",
        help="permission rules allowed without asking, comma-separated; repeatable",
    )
    p.add_argument(
        "--disallowed-tools",
        "--disallowedTools",
        dest="disallowed_tools",
        action="append",
        type=_csv,
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agent-gateway",
        description="Policy, compaction audit and tracing for Claude Code agents.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    run = sub.add_parser(
        "run",
        help="run the agent with the gateway attached",
        description="Run the real Claude Code agent loop through claude-agent-sdk "
        "with policy, archive and tracing attached. The environment "
        "(ANTHROPIC_*, OTEL_*, CLAUDE_CODE_*) reaches the agent.",
    )
    _add_run_options(run)

    demo = sub.add_parser("demo", help="run a scripted multi-turn session (no API key needed)")
    demo.add_argument(
        "--keep", action="store_true", help="keep the temp workspace and print its path"
    )

    _add_hook_command(sub)
    _add_policy_commands(sub)
    _add_audit_commands(sub)
    _add_archive_commands(sub)
    _add_service_commands(sub)
    _add_trace_commands(sub)
    return parser


def _add_trace_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    trace = sub.add_parser("trace", help="traces kept locally when no exporter is configured")
    tsub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=_Parser)
    tsub.required = True
    show = tsub.add_parser(
        "show", help="draw a run's trace as a tree: durations, tokens, cost, decisions"
    )
    show.add_argument("session", nargs="?", help="session id (default: the latest trace)")


def _add_service_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="HTTP hooks, the Messages API proxy and remote runs for any Claude Code session",
        description="Serve POST /hooks/{Event}, /v1/messages (proxied to --upstream), "
        "/v1/runs, /healthz and /readyz. With AGENT_GATEWAY_TOKEN or "
        "AGENT_GATEWAY_TOKENS_FILE set, every endpoint but the health checks needs "
        "'Authorization: Bearer TOKEN'; a non-loopback --host is refused without one.",
    )
    serve.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8787, help="port (default 8787)")
    serve.add_argument(
        "--upstream",
        default="https://api.anthropic.com",
        metavar="URL",
        help="the Messages API to proxy to (default https://api.anthropic.com)",
    )
    serve.add_argument(
        "--runs-root",
        dest="runs_roots",
        action="append",
        default=[],
        metavar="DIR",
        help="POST /v1/runs may use a cwd inside DIR (repeatable; symlinks are resolved). "
        "Without one, remote runs are refused; a tokens-file entry's runs_roots replace these "
        "for its token",
    )
    serve.add_argument(
        "--redis-url",
        metavar="URL",
        help="Redis the replicas share (redis://host:6379/0): which tenant owns each session. "
        "Without it, replicas share AGENT_GATEWAY_HOME/sessions, which works on one host only",
    )
    serve.add_argument(
        "--decision-budget",
        dest="decision_budget",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="a PreToolUse decision not made within SECONDS is a deny (default 2)",
    )
    serve.add_argument(
        "--drain-seconds",
        type=float,
        default=30.0,
        metavar="S",
        help="on SIGTERM, how long in-flight requests get to finish (default 30)",
    )
    settings = sub.add_parser(
        "settings",
        help="print Claude Code settings JSON that wires a session to a gateway",
        description="Hooks with onFailure block (a gateway that is down, slow or erroring "
        "blocks every tool call), the token through env interpolation, "
        "env.ANTHROPIC_BASE_URL and the policy's static denies in permissions.deny.",
    )
    settings.add_argument("--url", required=True, help="the gateway's base URL")
    settings.add_argument(
        "--managed",
        action="store_true",
        help="a drop-in for /etc/claude-code/managed-settings.d/ (also disables bypass mode)",
    )
    settings.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy files whose permissions.deny rules are mirrored as a static floor",
    )
    settings.add_argument(
        "--command-hook",
        action="store_true",
        help="use `agent-gateway hook pre-tool-use --remote URL` instead of http hooks",
    )
    settings.add_argument(
        "--no-token", action="store_true", help="send no Authorization header (auth off)"
    )


def _add_hook_command(sub: argparse._SubParsersAction[_Parser]) -> None:
    hook = sub.add_parser(
        "hook", help="Claude Code command hook: hook JSON on stdin, decision on stdout"
    )
    hook.add_argument("event", choices=HOOK_EVENTS)
    hook.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project",
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


def _add_policy_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    policy = sub.add_parser("policy", help="check, explain and test policy files")
    psub = policy.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=_Parser)
    psub.required = True
    check = psub.add_parser("check", help="validate policy files (layered in the order given)")
    check.add_argument("paths", nargs="+", metavar="PATH")
    explain = psub.add_parser("explain", help="show which rule decides a hook input, and why")
    explain.add_argument("--policy", action="append", required=True, metavar="PATH")
    explain.add_argument("--input", required=True, metavar="HOOK_INPUT.json")
    test = psub.add_parser("test", help="run the test cases kept beside policy files")
    test.add_argument("paths", nargs="+", metavar="PATH")



def _add_audit_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    audit = sub.add_parser("audit", help="the decision audit log")
    asub = audit.add_subparsers(dest="audit_command", metavar="ACTION", parser_class=_Parser)
    asub.required = True
    lst = asub.add_parser(
        "list",
        help="decisions, oldest first: position, time, decision, tool, rule, session, input",
    )
    lst.add_argument("--session", metavar="SESSION", help="only this session")
    lst.add_argument(
        "--decision", choices=("allow", "deny", "ask", "abstain"), help="only this decision"
    )
    lst.add_argument("--rule", metavar="ID", help="only decisions made by this rule id")
    lst.add_argument(
        "--since", metavar="T", help="only since T: an ISO time (2026-05-01T12:00) or an age (2h)"
    )
    show = asub.add_parser("show", help="one record, whole, by its position (1 is the first)")
    show.add_argument("position", type=_position, metavar="N")
    verify = asub.add_parser(
        "verify",
        help="check the chain, numbering, MACs and checkpoint (and an exported copy)",
    )
    verify.add_argument(
        "--against",
        metavar="FILE",
        help="an exported copy (OTLP JSON lines, e.g. the Collector's file exporter): "
        "report what is missing or different on either side",
    )
    for p in (lst, show):
        p.add_argument("--json", action="store_true", help="records as JSON, one per line")
    for p in (lst, show, verify):
        p.add_argument(
            "--log", metavar="PATH", help="audit log (default AGENT_GATEWAY_HOME/audit.jsonl)"
        )


def _position(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a record number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a record number (1 is the first)")
    return number


def _add_archive_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    archive = sub.add_parser("archive", help="transcripts archived before compaction")
    asub = archive.add_subparsers(dest="archive_command", metavar="ACTION", parser_class=_Parser)
    asub.required = True
    lst = asub.add_parser("list", help="one archive per line, its id first")
    lst.add_argument("--session", metavar="SESSION")
    show = asub.add_parser("show", help="the manifest, then the transcript")
    show.add_argument("id")
    export = asub.add_parser("export", help="write an archive's files into a directory")
    export.add_argument("id")
    export.add_argument("dir")
    asub.add_parser("verify", help="check every object's hash and the whole chain")
    for p in (lst, show, export, *asub.choices.values()):
        if not any(a.dest == "policy" for a in p._actions):
            p.add_argument(
                "--policy",
                action="append",
                default=[],
                metavar="PATH",
                help="policy files whose compaction: section names the store",
            )


def _version() -> str:
    from gateway import __version__

    return f"agent-gateway {__version__}"


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args_in = list(sys.argv[1:] if argv is None else argv)
    # The hook runs once per tool call: skip building the whole command tree for it.
    parser = build_hook_parser() if args_in[:1] == ["hook"] else build_parser()
    args = parser.parse_args(args_in)
    sys.exit(_dispatch(args))


def build_hook_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agent-gateway")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _add_hook_command(sub)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    command: str = args.command
    if command == "hook":
        from gateway.hook_main import run_hook

        return run_hook(args.event, args.policy, args.remote, args.timeout)
    if command == "run":
        from gateway.run_command import run_command

        return run_command(args)
    if command == "demo":
        from gateway.demo import run_demo

        return run_demo(keep=args.keep)
    if command == "policy":
        from gateway.cli_policy import dispatch_policy

        return dispatch_policy(args)
    if command == "audit":
        from gateway.cli_audit import dispatch_audit

        return dispatch_audit(args)
    if command == "trace":
        from gateway.telemetry.show import trace_show

        return trace_show(args.session)
    if command == "archive":
        from gateway.cli_archive import dispatch_archive

        return dispatch_archive(args)
    if command == "serve":
        from gateway.serve_command import ServeArgs, serve_command

        return serve_command(
            ServeArgs(
                args.policy,
                args.host,
                args.port,
                args.upstream,
                args.drain_seconds,
                runs_roots=args.runs_roots,
                decision_budget_s=args.decision_budget,
                redis_url=args.redis_url,
            )
        )
    if command == "settings":
        from gateway.settings_command import settings_command

        return settings_command(args)
    raise AssertionError(f"unhandled command {command}")  # argparse only yields the above
