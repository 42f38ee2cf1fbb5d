"""`agent-gateway scripted-api`: the scripted Messages API (gateway.scripted) on a loopback
port, until interrupted, so `agent-gateway run` and plain `claude` can be tried offline."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gateway.cli import values
from gateway.cli.parser import Subcommands

if TYPE_CHECKING:
    from gateway.scripted import RecordedRequest

API_KEY = "scripted-api-key"
"""Claude Code needs some API key; the scripted API accepts any."""


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "scripted-api",
        help="serve a scripted Messages API on loopback (try run offline, no API key)",
        description="Serve POST /v1/messages from a scenario file on 127.0.0.1 until "
        "interrupted. Prints the variables that point Claude Code (and agent-gateway run) "
        "at it; examples/scenarios/ holds two scenarios.",
    )
    p.add_argument(
        "--scenario", required=True, type=values.readable_file, metavar="FILE",
        help="scenario YAML: scripted responses"
    )
    p.add_argument(
        "--port", type=values.any_port, default=0, metavar="N",
        help="port to listen on (default: any free)"
    )


def environment(url: str) -> dict[str, str]:
    """What a shell exports to send Claude Code's model requests to the scripted API."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from gateway.errors import GatewayError
    from gateway.scripted import ScriptedServer

    if not 0 <= args.port <= 65535:
        print(f"agent-gateway scripted-api: error: --port {args.port} is not a port",
              file=sys.stderr)
        return 2
    try:
        server = ScriptedServer(args.scenario, port=args.port, on_request=_log_request)
    except GatewayError as exc:
        print(f"agent-gateway scripted-api: error: {exc}", file=sys.stderr)
        return exc.exit_code
    try:
        server.start()
    except OSError as exc:
        server.stop()
        print(f"agent-gateway scripted-api: error: cannot listen on 127.0.0.1:{args.port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        print(f"# scripted Messages API on {server.url} ({args.scenario}); Ctrl-C stops it.")
        print("# In another shell, point Claude Code or agent-gateway run at it:")
        for name, value in environment(server.url).items():
            print(f"export {name}={value}")
        print("# Or put the gateway service in front of it (sessions wired by "
              "`agent-gateway settings` send their model requests to serve):")
        print(f"#   agent-gateway serve --policy POLICY --upstream {server.url}")
        sys.stdout.flush()
        stop.wait()
    finally:
        server.stop()
    return 0


def _log_request(request: RecordedRequest) -> None:
    answer = (
        f"response {request.response_index + 1}" if request.response_index >= 0
        else "the default response" if request.response_index == -1
        else "nothing scripted (500)"
    )
    sys.stderr.write(f"scripted-api: {request.kind} request -> {answer}\n")
    sys.stderr.flush()
