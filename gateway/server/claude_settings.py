"""Claude Code settings that wire a session to a running gateway: pure, JSON in and out.

Fail closed: every gateway hook handler carries `"onFailure": "block"` (on the handler, not
the matcher: Claude Code 2.1.332 ignores it there), so a gateway that is down, slow or
erroring blocks the tool call; the policy's static denies are mirrored into
`permissions.deny` as a floor that holds even with no gateway at all.

The token is never written into the file; sessions export AGENT_GATEWAY_TOKEN. Hooks send it
through header interpolation (`$AGENT_GATEWAY_TOKEN`, allowed by `allowedEnvVars`). Model
requests send it through `apiKeyHelper`: Claude Code 2.1.332 does not interpolate variables
in the settings' `env` values (measured: `ANTHROPIC_CUSTOM_HEADERS` arrived as the literal
`$AGENT_GATEWAY_TOKEN`), but it sends a helper's output as `Authorization: Bearer` beside an
`ANTHROPIC_API_KEY` in `x-api-key`, or as `x-api-key` beside an `ANTHROPIC_AUTH_TOKEN` in
`Authorization`. The gateway takes its token from whichever header holds it and forwards the
other, the session's own Anthropic credential, upstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.policy import Policy

TOKEN_ENV = "AGENT_GATEWAY_TOKEN"
API_KEY_HELPER = f'printf %s "${TOKEN_ENV}"'
"""Run by Claude Code with /bin/sh; its output goes to the gateway's proxy as the token."""
BLOCKING_EVENTS = ("PreToolUse", "PreCompact")
"""Events whose failure must stop the agent: a tool call, a compaction without archive."""
OBSERVING_EVENTS = (
    "PostToolUse",
    "PostToolUseFailure",
    "PostCompact",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "StopFailure",
    "UserPromptSubmit",
)
"""Events the trace is built from: tool ends, subagents, compactions, the prompt loop."""


def gateway_settings(
    url: str,
    *,
    static_denies: Sequence[str] = (),
    with_token: bool = True,
    timeout_s: int = 10,
    compact_timeout_s: int = 300,
    proxy: bool = True,
) -> dict[str, Any]:
    """Settings JSON (for --settings, .claude/settings.json or a managed drop-in)."""
    base = url.rstrip("/")
    hooks: dict[str, Any] = {}
    for event in (*BLOCKING_EVENTS, *OBSERVING_EVENTS):
        handler: dict[str, Any] = {
            "type": "http",
            "url": f"{base}/hooks/{event}",
            "timeout": compact_timeout_s if event == "PreCompact" else timeout_s,
        }
        if with_token:
            handler["headers"] = {"Authorization": f"Bearer ${TOKEN_ENV}"}
            handler["allowedEnvVars"] = [TOKEN_ENV]
        if event in BLOCKING_EVENTS:
            handler["onFailure"] = "block"
        entry: dict[str, Any] = {"hooks": [handler]}
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            entry = {"matcher": "*", **entry}
        hooks[event] = [entry]
    settings: dict[str, Any] = {
        "hooks": hooks,
        "allowedHttpHookUrls": [f"{base}/*"],
        "permissions": {"deny": list(dict.fromkeys(static_denies))},
    }
    if with_token:
        settings["httpHookAllowedEnvVars"] = [TOKEN_ENV]
    if proxy:
        settings["env"] = {"ANTHROPIC_BASE_URL": base}
        if with_token:
            settings["apiKeyHelper"] = API_KEY_HELPER
    return settings


def command_hook_settings(
    url: str, *, static_denies: Sequence[str] = (), gateway_command: str = "agent-gateway"
) -> dict[str, Any]:
    """The command-hook form: `agent-gateway hook pre-tool-use --remote URL`, which exits 2
    (blocks) whenever the gateway cannot answer."""
    base = url.rstrip("/")
    command = f"{gateway_command} hook pre-tool-use --remote {base}"
    return {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
        },
        "permissions": {"deny": list(dict.fromkeys(static_denies))},
        "env": {"ANTHROPIC_BASE_URL": base},
        "apiKeyHelper": API_KEY_HELPER,
    }


def static_denies(policy: Policy) -> list[str]:
    """The enforced `permissions.deny` rules of every layer, verbatim, org first.

    Claude Code applies these itself, so they hold even when no gateway answers.
    """
    denies: list[str] = []
    for layer in policy.layers:
        if layer.mode != "enforce":
            continue
        for rule in layer.rules:
            if rule.decision == "deny" and not rule.monitor and ":permissions.deny[" in rule.id:
                denies.append(rule.text)
    return list(dict.fromkeys(denies))


def managed_settings(url: str, *, static_denies: Sequence[str] = ()) -> dict[str, Any]:
    """A managed-settings.d drop-in: the same wiring, plus bypass mode switched off so a
    user cannot skip the gateway's decisions with --dangerously-skip-permissions."""
    settings = gateway_settings(url, static_denies=static_denies)
    settings["permissions"]["disableBypassPermissionsMode"] = "disable"
    return settings
