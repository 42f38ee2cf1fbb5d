"""`agent-gateway demo`: a scripted session on the real Claude Code (gateway.cli.demo_session)."""

from __future__ import annotations

import argparse

from gateway.cli.parser import Subcommands


def add_parser(sub: Subcommands) -> None:
    demo = sub.add_parser(
        "demo", help="run a scripted multi-turn session (no API key needed)",
        description="Run the real Claude Code agent loop against a scripted model on loopback, "
        "with a policy that denies one command; show each turn, the file written and the trace. "
        "No API key, no network; state goes to a temporary workspace.",
    )
    demo.add_argument(
        "--keep", action="store_true", help="keep the temp workspace and print its path"
    )


def run(args: argparse.Namespace) -> int:
    from gateway.cli.demo_session import run_demo

    return run_demo(keep=args.keep)
