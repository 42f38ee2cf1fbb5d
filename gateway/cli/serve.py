"""`agent-gateway serve`: validate the configuration, build the app, run it until SIGTERM.

aiohttp's run_app turns SIGINT/SIGTERM into a graceful exit: the listener closes, in-flight
hook calls and proxied streams get `shutdown_timeout` seconds to finish, then the span sink
is flushed.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.cli import values
from gateway.cli.parser import Subcommands
from gateway.env import METRICS_TOKEN_ENV, TOKEN_ENV, TOKENS_FILE_ENV, gateway_token
from gateway.env import tokens_file as env_tokens_file
from gateway.errors import GatewayError, one_line

if TYPE_CHECKING:
    from aiohttp import web

    from gateway.budgets.limits import Limit
    from gateway.server.app import ServeConfig
    from gateway.server.budget_gate import BudgetGate
    from gateway.server.owners import SessionOwners
    from gateway.server.tracing import ServerTracer
    from gateway.telemetry.export import SpanSink
    from gateway.telemetry.metrics import GatewayMetrics
    from gateway.telemetry.pricing import PriceTable
    from gateway.tenancy.tokens import TokenTable

DRAIN_SECONDS = 30.0
IDLE_TIMEOUT_S = 75.0
"""A connection with no complete request head this long after it opened or after its last
answer is closed: idle keep-alive, or headers sent a byte at a time. Longer than a load
balancer's usual 60 s idle timeout, so the balancer closes first."""


@dataclass(frozen=True)
class ServeArgs:
    policy: Sequence[str]
    host: str
    port: int
    upstream: str
    drain_seconds: float = DRAIN_SECONDS
    runs_roots: Sequence[str] = field(default_factory=tuple)
    decision_budget_s: float = 2.0
    redis_url: str | None = None
    budget_fail_open: bool = False
    redis_timeout_s: float = 2.0
    reserve_output_tokens: int | None = None
    budget_lease_s: float = 30.0
    max_stream_s: float = 3600.0
    trace_idle_timeout_s: float = 1800.0
    idle_timeout_s: float = IDLE_TIMEOUT_S


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_command(args: ServeArgs) -> int:
    prog = "agent-gateway serve"
    token, tokens_file = gateway_token(), env_tokens_file()
    problem = _usage_problem(args, authenticated=bool(token or tokens_file))
    if problem:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        return 2
    from gateway.integrity.keys import keys_from_env
    from gateway.policy import load_policy
    from gateway.tenancy.tokens import load_tokens

    try:
        load_policy(args.policy)  # what the service loads again: a bad file stops it here
        tokens = load_tokens(token, tokens_file)
        keys_from_env()  # a bad key file stops the service now, not at its first decision
    except GatewayError as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    # Bound before anything starts (workers, stores, telemetry): a port in use, or an
    # address this host does not have, is one line and nothing else happened.
    try:
        sockets = bind(args.host, args.port)
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else one_line(exc)
        print(f"{prog}: error: cannot listen on {args.host}:{args.port}: {reason}",
              file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        return _serve(args, tokens, sockets)
    except GatewayError as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"{prog}: error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        for sock in sockets:
            sock.close()


def _usage_problem(args: ServeArgs, *, authenticated: bool) -> str:
    """What makes these arguments unusable ('' when nothing does)."""
    if not is_loopback(args.host) and not authenticated:
        return (f"refusing to listen on {args.host} without authentication "
                f"(set {TOKEN_ENV} or {TOKENS_FILE_ENV}, or use 127.0.0.1)")
    if not args.policy:
        return "at least one --policy PATH is needed"
    # The parser refuses these already; a ServeArgs built in code is checked the same way.
    positive = {"--decision-budget": args.decision_budget_s,
                "--redis-timeout": args.redis_timeout_s, "--budget-lease": args.budget_lease_s,
                "--max-stream-seconds": args.max_stream_s,
                "--trace-idle-timeout": args.trace_idle_timeout_s,
                "--idle-timeout": args.idle_timeout_s}
    for option, value in positive.items():
        if not value > 0:
            return f"{option} must be a positive number"
    if args.reserve_output_tokens is not None and args.reserve_output_tokens < 1:
        return "--reserve-output-tokens must be at least 1"
    for root in args.runs_roots:
        if not os.path.isdir(root):
            return f"--runs-root {root} is not a directory"
    from gateway.env import REDIS_URL_ENV, redis_url

    if args.redis_url is None and (shared := redis_url()) is not None:
        try:
            values.redis_url(shared)
        except argparse.ArgumentTypeError as exc:
            return f"{REDIS_URL_ENV}: {exc}"
    return ""


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for every address `host` names (as aiohttp would bind them)."""
    sockets: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(128)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _serve(args: ServeArgs, tokens: TokenTable, sockets: list[socket.socket]) -> int:
    from gateway.env import metrics_token, otel_env, redis_url, snapshot
    from gateway.handlers.trail import audit_export_from_env
    from gateway.runner.agent_env import remote_agent_env, without_secrets
    from gateway.runner.private_process import make_private
    from gateway.server.app import ServeConfig, create_app
    from gateway.server.exchange_metrics import both, exchange_metrics
    from gateway.server.service import WORKER_PRELOAD, GatewayService
    from gateway.server.workers import start_forkserver
    from gateway.telemetry import load_price_table, span_sink_from_env
    from gateway.telemetry.metrics import metric_settings, open_metrics

    make_private()  # remote runs' agents run as this user: its environment stays its own
    shared_redis = args.redis_url or redis_url()
    config = ServeConfig(
        policy_paths=list(args.policy),
        host=args.host,
        port=args.port,
        upstream=args.upstream,
        tokens=tokens,
        metrics_token=metrics_token(),
        max_stream_s=args.max_stream_s,
    )
    secrets = _secrets(tokens, config, shared_redis)
    # While this process has one thread: the decision workers' forkserver and multiprocessing's
    # resource tracker start with an environment free of the service's secrets (a process of
    # the same user, a remote run's agent, can read theirs in /proc).
    start_forkserver(without_secrets(snapshot(), secrets), WORKER_PRELOAD)
    prices = load_price_table()
    metrics = open_metrics(metric_settings(otel_env()), known_models=prices.models)
    sink = span_sink_from_env()
    tracer = _tracer(args, sink, shared_redis, prices)
    config.content_cap = tracer.content_cap
    gate = _budget_gate(args, tokens.budgets(), shared_redis, prices, metrics)
    export = audit_export_from_env()
    service = GatewayService(
        config.policy_paths,
        tracer,
        owners=_session_owners(args, tokens, shared_redis),
        runs_roots=[os.path.abspath(r) for r in args.runs_roots],
        decision_budget_s=args.decision_budget_s,
        audit_export=export,
        gate=gate,
        metrics=metrics,
        agent_env=remote_agent_env(snapshot(), secrets),
    )
    app = create_app(config, service, both(tracer.on_exchange, exchange_metrics(metrics, prices)))

    async def flush(_app: web.Application) -> None:
        tracer.close()
        sink.shutdown()
        metrics.shutdown()
        if export is not None:
            export.shutdown()

    app.on_cleanup.append(flush)
    _run_until_signalled(app, sockets, args, _banner(args, tokens, config, gate, metrics))
    return 0


def _tracer(
    args: ServeArgs, sink: SpanSink, shared_redis: str | None, prices: PriceTable
) -> ServerTracer:
    """The proxy's and the hooks' spans, to the exporter the OTEL_* variables name; a
    session's trace state shared through Redis when the replicas share one."""
    from gateway.server.trace_state import RedisTraceState
    from gateway.server.tracing import ServerTracer
    from gateway.telemetry import ContentPolicy
    from gateway.telemetry.fact_state import MemoryTraceState

    return ServerTracer(
        sink,
        prices,
        content=ContentPolicy(capture=bool(sink.settings and sink.settings.capture_content)),
        state=(
            RedisTraceState(shared_redis, timeout_s=args.redis_timeout_s)
            if shared_redis
            else MemoryTraceState()
        ),
        idle_timeout_s=args.trace_idle_timeout_s,
    )


def _session_owners(
    args: ServeArgs, tokens: TokenTable, shared_redis: str | None
) -> SessionOwners | None:
    """With authentication on, sessions belong to tenants. Replicas must share the owners:
    through Redis, or through AGENT_GATEWAY_HOME when they all run on one host."""
    if not tokens.enabled:
        return None
    from gateway.env import gateway_home
    from gateway.server.owners import LocalSessionOwners, RedisSessionOwners

    if shared_redis:
        return RedisSessionOwners(shared_redis, timeout_s=args.redis_timeout_s)
    return LocalSessionOwners(gateway_home() / "sessions")


def _banner(args: ServeArgs, tokens: TokenTable, config: ServeConfig, gate: BudgetGate | None,
            metrics: GatewayMetrics) -> list[str]:
    """What serve says once it listens: where, what is on, where budgets are counted."""
    lines = [
        f"listening on http://{args.host}:{args.port} "
        f"(upstream {args.upstream}, auth {'on' if tokens.enabled else 'off'}, "
        f"remote runs {'in ' + ', '.join(args.runs_roots) if args.runs_roots else 'off'})"
    ]
    if gate is not None:
        where = (
            f"counted in {gate.ledger.location}, shared by every replica"
            if gate.ledger.shared
            else "counted in this process: budgets are per replica (--redis-url shares them)"
        )
        failure = "fail_open" if args.budget_fail_open else "fail_closed"
        lines.append(
            f"team budgets for {', '.join(sorted(gate.budgets))}, {where}"
            f"{'; if the store is down: ' + failure if gate.ledger.shared else ''}"
        )
    if metrics.registry is not None:
        if tokens.enabled and not config.metrics_token:
            lines.append(f"Prometheus metrics at GET /metrics need {METRICS_TOKEN_ENV} (with "
                         "authentication on and none set, /metrics answers 401)")
        elif tokens.enabled:
            lines.append(f"Prometheus metrics at GET /metrics (Bearer {METRICS_TOKEN_ENV})")
        else:
            lines.append("Prometheus metrics at GET /metrics")
    return lines


def _run_until_signalled(
    app: web.Application, sockets: list[socket.socket], args: ServeArgs, banner: list[str]
) -> None:
    from aiohttp import web

    def listening(_aiohttp_banner: str) -> None:
        # run_app calls this once every socket listens: only then is the service there.
        for line in banner:
            print(f"agent-gateway serve: {line}", file=sys.stderr, flush=True)

    web.run_app(
        app,
        sock=sockets,
        shutdown_timeout=args.drain_seconds,
        print=listening,
        access_log=None,
        handle_signals=True,
        # aiohttp's keep-alive timer runs from the connection's opening and from each
        # answer until the next request head is complete: it is the head timeout too.
        keepalive_timeout=args.idle_timeout_s,
    )


def _secrets(tokens: TokenTable, config: ServeConfig, redis: str | None) -> list[str]:
    """Values no remote run's environment may carry, whatever the variable's name."""
    import contextlib
    from urllib.parse import urlsplit

    found = [*tokens.callers, config.metrics_token]
    if redis:
        found.append(redis)
        with contextlib.suppress(ValueError):  # not a URL: the whole value is withheld
            found.append(urlsplit(redis).password or "")
    return [s for s in found if s]


def _budget_gate(
    args: ServeArgs,
    budgets: Mapping[str, tuple[Limit, ...]],
    shared_redis: str | None,
    prices: PriceTable,
    metrics: GatewayMetrics,
) -> BudgetGate | None:
    if not budgets:
        return None
    from gateway.budgets.ledger import Ledger, MemoryLedger
    from gateway.budgets.redis_ledger import RedisLedger
    from gateway.server.budget_gate import BudgetGate

    ledger: Ledger = (
        RedisLedger(shared_redis, timeout_s=args.redis_timeout_s)
        if shared_redis
        else MemoryLedger()
    )
    return BudgetGate(
        ledger,
        prices,
        budgets,
        fail_open=args.budget_fail_open,
        reserve_output_tokens=args.reserve_output_tokens,
        lease_s=args.budget_lease_s,
        metrics=metrics,
    )


def add_parser(sub: Subcommands) -> None:
    serve = sub.add_parser(
        "serve",
        help="HTTP hooks, the Messages API proxy and remote runs for any Claude Code session",
        description="Serve POST /hooks/{Event}, /v1/messages (proxied to --upstream), "
        "/v1/runs, /healthz and /readyz. With AGENT_GATEWAY_TOKEN or "
        "AGENT_GATEWAY_TOKENS_FILE set, every endpoint but the health checks needs "
        "'Authorization: Bearer TOKEN'; a non-loopback --host is refused without one.",
    )
    _what_and_where(serve)
    _shared_state(serve)
    _budgets(serve)
    _time_limits(serve)


def _what_and_where(serve: argparse.ArgumentParser) -> None:
    """The policies, the address, the upstream and where remote runs may work."""
    serve.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="PATH",
        help="policy file; repeat in order org, team, project",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=values.port, default=8787, help="port (default 8787)")
    serve.add_argument(
        "--upstream",
        type=values.http_url,
        default="https://api.anthropic.com",
        metavar="URL",
        help="the Messages API to proxy to (default https://api.anthropic.com)",
    )
    serve.add_argument(
        "--runs-root",
        dest="runs_roots",
        type=values.directory,
        action="append",
        default=[],
        metavar="DIR",
        help="POST /v1/runs may use a cwd inside DIR (repeatable; symlinks are resolved). "
        "Without one, remote runs are refused; a tokens-file entry's runs_roots replace these "
        "for its token",
    )


def _shared_state(serve: argparse.ArgumentParser) -> None:
    """What the replicas share (Redis)."""
    serve.add_argument(
        "--redis-url",
        type=values.redis_url,
        metavar="URL",
        help="Redis the replicas share (redis://host:6379/0; default $AGENT_GATEWAY_REDIS_URL): "
        "which tenant owns each session, the team budget counters, and what links a session's "
        "spans (which response asked for a tool, which call started a subagent). Without it, "
        "replicas share owners through AGENT_GATEWAY_HOME/sessions (one host only), each "
        "counts budgets on its own and links only the spans it saw",
    )
    serve.add_argument(
        "--redis-timeout",
        type=values.positive_float,
        default=2.0,
        metavar="SECONDS",
        help="how long a Redis command may take before the store counts as unreachable "
        "(default 2; a command that times out is retried once)",
    )


def _budgets(serve: argparse.ArgumentParser) -> None:
    """How team budgets are enforced (docs/metrics.md)."""
    serve.add_argument(
        "--budget-failure",
        choices=("fail_closed", "fail_open"),
        default="fail_closed",
        help="when the budget store (Redis) does not answer: refuse the model calls of teams "
        "with a budget (fail_closed, the default), or forward them unchecked and count them "
        "once it is back, with a log line and the agent_gateway.budget.unenforced metric",
    )
    serve.add_argument(
        "--reserve-output-tokens",
        type=values.positive_int,
        default=None,
        metavar="N",
        help="opt-in overshoot: hold min(max_tokens, N) output tokens per model call against "
        "its team's budget instead of all of max_tokens (the default, which no call can "
        "overshoot); the output of calls in flight beyond N is what a budget can then be "
        "overshot by",
    )
    serve.add_argument(
        "--budget-lease",
        type=values.positive_float,
        default=30.0,
        metavar="SECONDS",
        help="a call's budget hold is renewed by this replica every third of SECONDS; a hold "
        "not renewed for SECONDS (its replica died) is charged at the amount held by the "
        "surviving replicas (default 30)",
    )


def _time_limits(serve: argparse.ArgumentParser) -> None:
    """How long calls, traces, connections, decisions and the drain may take."""
    serve.add_argument(
        "--max-stream-seconds",
        type=values.positive_float,
        default=3600.0,
        metavar="SECONDS",
        help="the longest a proxied model call may run, request to last byte: past it the "
        "call is cut (and charged as a cut stream: its input and all of max_tokens; "
        "default 3600)",
    )
    serve.add_argument(
        "--trace-idle-timeout",
        dest="trace_idle_timeout",
        type=values.positive_float,
        default=1800.0,
        metavar="SECONDS",
        help="close a session's root span, marked incomplete, after SECONDS without any of its "
        "events (a killed `claude -p` never sends SessionEnd; default 1800)",
    )
    serve.add_argument(
        "--idle-timeout",
        dest="idle_timeout",
        type=values.positive_float,
        default=IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help="close a connection that has not sent a whole request head within SECONDS of "
        "opening or of its last answer: idle keep-alive, or headers sent a byte at a time "
        f"(default {IDLE_TIMEOUT_S:g}; keep it above a load balancer's idle timeout). Bodies "
        "must arrive whole within 10 s (hooks, runs) or 120 s (/v1/messages)",
    )
    serve.add_argument(
        "--decision-budget",
        dest="decision_budget",
        type=values.positive_float,
        default=2.0,
        metavar="SECONDS",
        help="a PreToolUse decision not made within SECONDS is a deny (default 2)",
    )
    serve.add_argument(
        "--drain-seconds",
        type=values.positive_float,
        default=30.0,
        metavar="S",
        help="on SIGTERM, how long in-flight requests get to finish (default 30)",
    )


def run(args: argparse.Namespace) -> int:
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
            budget_fail_open=args.budget_failure == "fail_open",
            reserve_output_tokens=args.reserve_output_tokens,
            budget_lease_s=args.budget_lease,
            max_stream_s=args.max_stream_seconds,
            redis_timeout_s=args.redis_timeout,
            trace_idle_timeout_s=args.trace_idle_timeout,
            idle_timeout_s=args.idle_timeout,
        )
    )
