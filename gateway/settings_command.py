"""`agent-gateway settings`: print the Claude Code settings that wire a session to a gateway."""

from __future__ import annotations

import argparse
import json
import sys

from gateway.claude_settings import (
    TOKEN_ENV,
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
    if "apiKeyHelper" in settings:
        print(
            f"agent-gateway settings: sessions need `export {TOKEN_ENV}=<this gateway's token>`; "
            "hooks send it as a header and apiKeyHelper sends it to the Messages API proxy, "
            "beside the session's own ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN",
            file=sys.stderr,
        )
    return 0
