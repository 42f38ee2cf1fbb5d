"""`agent-gateway settings`: print the Claude Code settings that wire a session to a gateway."""

from __future__ import annotations

import argparse
import json
import sys

from gateway.claude_settings import (
    command_hook_settings,
    gateway_settings,
    managed_settings,
    static_denies,
)
from gateway.errors import GatewayError


def settings_command(args: argparse.Namespace) -> int:
    denies: list[str] = []
    if args.policy:
        from gateway.policy import load_policy

        try:
            denies = static_denies(load_policy(args.policy))
        except GatewayError as exc:
            print(f"agent-gateway settings: error: {exc}", file=sys.stderr)
            return exc.exit_code
    if args.command_hook:
        settings = command_hook_settings(args.url, static_denies=denies)
    elif args.managed:
        settings = managed_settings(args.url, static_denies=denies)
    else:
        settings = gateway_settings(args.url, static_denies=denies, with_token=not args.no_token)
    print(json.dumps(settings, indent=2))
    return 0
