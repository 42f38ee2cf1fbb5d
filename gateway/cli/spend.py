"""`agent-gateway spend`: each team's current windows, spend, budget and what is left."""

from __future__ import annotations

import argparse
import sys

from gateway.cli import values
from gateway.cli.parser import Subcommands

PROG = "agent-gateway spend"


def add_parser(sub: Subcommands) -> None:
    spend = sub.add_parser(
        "spend",
        help="team budgets: the current windows, spend, budget and what is left",
        description="Each team's budget counters for the current UTC day, week or month. "
        "With --redis-url (or AGENT_GATEWAY_REDIS_URL): the counters every `serve` replica "
        "shares, for the teams of the tokens file. Without: what `agent-gateway run` spent "
        "on this machine (its chats and compactions), from the local span file under "
        "AGENT_GATEWAY_HOME; sessions proxied through serve are serve's to count.",
    )
    spend.add_argument(
        "--redis-url", metavar="URL", type=values.redis_url,
        help="the Redis of the serve replicas (default $AGENT_GATEWAY_REDIS_URL)",
    )
    spend.add_argument(
        "--tokens-file", metavar="FILE", type=values.readable_file,
        help="the tokens file with the teams' budgets (default $AGENT_GATEWAY_TOKENS_FILE)",
    )
    spend.add_argument("--team", action="append", default=[], metavar="NAME",
                       help="only this team (repeatable)")
    spend.add_argument("--json", action="store_true", help="one JSON object per counter")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import time

    from gateway.budgets.report import write_json, write_table
    from gateway.errors import GatewayError
    from gateway.runner.budget import spend_source

    try:
        store, budgets = spend_source(args.redis_url, args.tokens_file)
        if args.team:
            unknown = sorted(set(args.team) - set(budgets))
            if unknown:
                print(f"{PROG}: error: no budget for team(s) {', '.join(unknown)} "
                      f"(teams: {', '.join(sorted(budgets)) or 'none'})", file=sys.stderr)
                return 2
            budgets = {team: budgets[team] for team in args.team}
        rows = asyncio.run(store.rows(budgets, time.time()))
    except GatewayError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    (write_json if args.json else write_table)(rows, sys.stdout)
    return 0
