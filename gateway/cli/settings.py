"""`agent-gateway settings`: print the Claude Code settings that wire a session to a gateway."""

from __future__ import annotations

import argparse
import json
import sys

from gateway.cli.parser import Subcommands
from gateway.errors import GatewayError


def run(args: argparse.Namespace) -> int:
    from gateway.env import TOKEN_ENV
    from gateway.server.claude_settings import (
        command_hook_settings,
        gateway_settings,
        managed_settings,
        static_denies,
    )

    denies: list[str] = []
    policy = None
    if args.policy:
        from gateway.policy import load_policy

        try:
            policy = load_policy(args.policy)
        except GatewayError as exc:
            print(f"agent-gateway settings: error: {exc}", file=sys.stderr)
            return exc.exit_code
        denies = static_denies(policy)
    if args.command_hook:
        settings = command_hook_settings(args.url, static_denies=denies)
    elif args.managed:
        settings = managed_settings(args.url, static_denies=denies)
    else:
        settings = gateway_settings(args.url, static_denies=denies, with_token=not args.no_token)
    if policy is not None and policy.sandbox == "required":
        import os

        from gateway.policy.sandbox import compile_sandbox
        from gateway.server.claude_settings import with_sandbox

        config = compile_sandbox(policy.layers, os.path.expanduser("~"))
        settings = with_sandbox(settings, config, policy.sandbox_fingerprint)
        print("agent-gateway settings: the policy requires Claude Code's OS sandbox (sandbox: "
              "required): sessions need bubblewrap and socat on Linux (apt-get install "
              "bubblewrap socat); Claude Code refuses to start without them",
              file=sys.stderr)
    print(json.dumps(settings, indent=2))
    if "apiKeyHelper" in settings:
        print(
            f"agent-gateway settings: sessions need `export {TOKEN_ENV}=<this gateway's token>`; "
            "hooks send it as a header and apiKeyHelper sends it to the Messages API proxy, "
            "beside the session's own ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN",
            file=sys.stderr,
        )
    return 0


def add_parser(sub: Subcommands) -> None:
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
