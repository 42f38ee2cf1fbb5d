"""`agent-gateway policy ...`: argv to command functions."""

from __future__ import annotations

import argparse

from gateway.policy_commands import policy_check, policy_explain, policy_test


def dispatch_policy(args: argparse.Namespace) -> int:
    action: str = args.policy_command
    if action == "check":
        return policy_check(args.paths)
    if action == "explain":
        return policy_explain(args.policy, args.input)
    return policy_test(args.paths)
