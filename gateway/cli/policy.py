"""`agent-gateway policy check|explain|test` (functions in gateway.policy.commands)."""

from __future__ import annotations

import argparse

from gateway.cli.parser import Parser, Subcommands


def add_parser(sub: Subcommands) -> None:
    policy = sub.add_parser("policy", help="check, explain and test policy files")
    psub = policy.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=Parser)
    psub.required = True
    check = psub.add_parser("check", help="validate policy files (layered in the order given)")
    check.add_argument("paths", nargs="+", metavar="PATH")
    explain = psub.add_parser("explain", help="show which rule decides a hook input, and why")
    explain.add_argument("--policy", action="append", required=True, metavar="PATH")
    explain.add_argument("--input", required=True, metavar="HOOK_INPUT.json")
    test = psub.add_parser("test", help="run the test cases kept beside policy files")
    test.add_argument("paths", nargs="+", metavar="PATH")


def run(args: argparse.Namespace) -> int:
    from gateway.policy.commands import policy_check, policy_explain, policy_test

    action: str = args.policy_command
    if action == "check":
        return policy_check(args.paths)
    if action == "explain":
        return policy_explain(args.policy, args.input)
    return policy_test(args.paths)
