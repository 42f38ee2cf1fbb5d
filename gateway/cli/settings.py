"""`agent-gateway settings`: print the Claude Code settings that wire a session to a gateway."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from gateway.cli import values
from gateway.cli.parser import Subcommands
from gateway.errors import GatewayError

if TYPE_CHECKING:
    from gateway.server.claude_settings import ClaudeSettings

PROG = "agent-gateway settings"
ASK_TIMEOUT_S = 2.0


def run(args: argparse.Namespace) -> int:
    from gateway.env import TOKEN_ENV
    from gateway.policy.floor import Floor, mirrored_floor
    from gateway.policy.withheld_env import is_pattern, withheld_names
    from gateway.server.claude_settings import (
        command_hook_settings,
        gateway_settings,
        managed_settings,
    )

    floor = Floor([], [])
    policy = None
    # Absolute: the settings go to another project, and the policy is named where this runs.
    paths = [os.path.abspath(os.path.expanduser(p)) for p in args.policy]
    if paths:
        from gateway.policy import load_policy

        try:
            policy = load_policy(paths)
        except GatewayError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return exc.exit_code
        floor = mirrored_floor(policy)
    if args.url is None and not (args.command_hook and paths):
        print(f"{PROG}: error: --url is required (without a gateway to ask: --command-hook "
              "--policy PATH, for hooks that decide, archive and trace on this machine)",
              file=sys.stderr)
        return 2
    with_token, asked = _with_token(args) if args.url is not None else (False, "")
    if args.command_hook:
        settings = command_hook_settings(args.url, static_denies=floor.denies,
                                         with_token=with_token, policy_paths=paths)
        if args.url is None:
            _export_settings_for_hooks(settings)
    elif args.managed:
        settings = managed_settings(args.url, static_denies=floor.denies, with_token=with_token)
    else:
        settings = gateway_settings(args.url, static_denies=floor.denies, with_token=with_token)
    if policy is not None and policy.sandbox == "required":
        from gateway.policy.sandbox import compile_sandbox
        from gateway.server.claude_settings import with_sandbox

        config = compile_sandbox(policy.layers, os.path.expanduser("~"),
                                 withheld_names(policy.withheld_env))
        settings = with_sandbox(settings, config, policy.sandbox_fingerprint)
        patterns = [p for p in policy.withheld_env if is_pattern(p)]
        if patterns:
            print(f"{PROG}: environment.withhold {', '.join(patterns)}: a pattern names "
                  "variables of an environment these settings do not see; list the names "
                  "(the sandbox is told exact names), or start sessions with "
                  "`agent-gateway run`", file=sys.stderr)
        missing = _sandbox_programs_missing()
        if missing:
            print(f"{PROG}: the policy requires Claude Code's OS sandbox (sandbox: "
                  f"required): sessions need bubblewrap and socat on Linux, and this machine "
                  f"has no {' or '.join(missing)} (apt-get install bubblewrap socat); Claude "
                  "Code refuses to start without them", file=sys.stderr)
    print(json.dumps(settings, indent=2))
    if asked:
        print(f"{PROG}: {asked}", file=sys.stderr)
    for rule_id, text in floor.gateway_only:
        print(f"{PROG}: only the gateway holds {rule_id} {text}: Claude Code reads it "
              "differently, so it is not in permissions.deny (`agent-gateway policy check` "
              "says how)", file=sys.stderr)
    if with_token:
        print(
            f"{PROG}: sessions need `export {TOKEN_ENV}=<this gateway's token>`; "
            "hooks send it as a header"
            + (" and apiKeyHelper sends it to the Messages API proxy, beside the session's "
               "own ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN" if "apiKeyHelper" in settings
               else ""),
            file=sys.stderr,
        )
    return 0


SECRET_OTEL = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
               "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS")


def _export_settings_for_hooks(settings: ClaudeSettings) -> None:
    """Local command hooks export what this environment's OTEL_* variables say: Claude Code
    hands its hooks none of them, so they go into the settings' env under the names the
    hooks read (gateway/env.py HOOK_OTEL_PREFIX). Headers may hold credentials: never
    written."""
    from gateway.env import HOOK_OTEL_PREFIX

    given = {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}
    written = {HOOK_OTEL_PREFIX + k[len("OTEL_"):]: v for k, v in sorted(given.items())
               if k not in SECRET_OTEL}
    if written:
        settings["env"] = {**settings.get("env", {}), **written}
        print(f"{PROG}: the hooks export as this environment's OTEL_* variables say "
              f"(written into env as {HOOK_OTEL_PREFIX}*)", file=sys.stderr)
    else:
        print(f"{PROG}: no OTEL_* variables here: the hooks' spans go to the local span "
              "file (`agent-gateway trace show`); set OTEL_EXPORTER_OTLP_ENDPOINT before "
              "running this to export them", file=sys.stderr)
    for name in SECRET_OTEL:
        if name in given:
            print(f"{PROG}: {name} is not written (it may hold credentials): export "
                  f"{HOOK_OTEL_PREFIX}{name[len('OTEL_'):]} in the sessions' environment",
                  file=sys.stderr)


def _sandbox_programs_missing() -> list[str]:
    """What Claude Code's OS sandbox needs on Linux and this machine lacks."""
    import shutil

    if not sys.platform.startswith("linux"):
        return []
    return [name for name in ("bwrap", "socat") if shutil.which(name) is None]


def _with_token(args: argparse.Namespace) -> tuple[bool, str]:
    """Whether sessions send a token: as the flags say, else as the gateway says it runs;
    and what was learnt by asking it."""
    if args.no_token:
        return False, ""
    if args.token:
        return True, ""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(args.url.rstrip("/") + "/healthz",
                                    timeout=ASK_TIMEOUT_S) as answer:
            auth = json.loads(answer.read()).get("auth")
    except (OSError, ValueError, AttributeError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return True, (f"could not ask {args.url} whether it needs a token ({reason}): wrote "
                      "settings that send one (--no-token for a gateway with authentication "
                      "off)")
    if auth == "off":
        return False, (f"{args.url} runs with authentication off: the settings send no token "
                       "(--token to send one anyway)")
    return True, ""


def add_parser(sub: Subcommands) -> None:
    settings = sub.add_parser(
        "settings",
        help="print Claude Code settings JSON that wires a session to a gateway",
        description="Hooks with onFailure block (a gateway that is down, slow or erroring "
        "blocks every tool call), the token through env interpolation, "
        "env.ANTHROPIC_BASE_URL and the policy's static denies in permissions.deny (the "
        "rules Claude Code reads as the gateway does, in its syntax; the others are named on "
        "stderr). Whether sessions send a token fits the gateway at --url (asked at "
        "GET /healthz), unless --token or --no-token says.",
    )
    settings.add_argument("--url", type=values.http_url,
                          help="the gateway's base URL (http:// or https://); required "
                          "unless --command-hook --policy")
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
        help="policy files whose permissions.deny rules are mirrored as a static floor "
        "(relative to where this runs; written as absolute paths)",
    )
    settings.add_argument(
        "--command-hook",
        action="store_true",
        help="command hooks for every event instead of http hooks: `agent-gateway hook EVENT "
        "--remote URL`, or without --url `agent-gateway hook EVENT --policy PATH...`, which "
        "decide, archive before compaction, record and trace on this machine",
    )
    token = settings.add_mutually_exclusive_group()
    token.add_argument(
        "--no-token", action="store_true",
        help="send no token (a gateway with authentication off); default: ask the gateway",
    )
    token.add_argument(
        "--token", action="store_true",
        help="send $AGENT_GATEWAY_TOKEN (a gateway with authentication on) without asking it",
    )
