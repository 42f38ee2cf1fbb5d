"""`agent-gateway trace show`: the local span file drawn as a tree."""

from __future__ import annotations

import argparse

from gateway.cli.parser import Parser, Subcommands


def add_parser(sub: Subcommands) -> None:
    trace = sub.add_parser("trace", help="traces kept locally when no exporter is configured")
    tsub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=Parser)
    tsub.required = True
    show = tsub.add_parser(
        "show", help="draw a run's trace as a tree: durations, tokens, cost, decisions"
    )
    show.add_argument("session", nargs="?", help="session id (default: the latest trace)")


def run(args: argparse.Namespace) -> int:
    from gateway.telemetry.show import trace_show

    return trace_show(args.session)
