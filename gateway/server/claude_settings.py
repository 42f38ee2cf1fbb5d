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
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

from gateway.env import TOKEN_ENV
from gateway.hookio.events import BLOCKING_EVENTS, GATEWAY_EVENTS, command_name

if TYPE_CHECKING:
    from gateway.policy import Policy
    from gateway.policy.sandbox import SandboxConfig

API_KEY_HELPER = f'printf %s "${TOKEN_ENV}"'
"""Run by Claude Code with /bin/sh; its output goes to the gateway's proxy as the token."""
MAX_RETRIES = "3"
"""Claude Code's retries against its base URL (CLAUDE_CODE_MAX_RETRIES; default 10, which
against a stopped gateway is about 3 minutes of silence). Measured on 2.1.332: with 3, a
session whose gateway is gone fails in about 4.5 s, printing `API Error: Connection refused`
and `SessionEnd hook [<gateway URL>/hooks/SessionEnd] failed`. The cost: an upstream
overload (529) the proxy passes on is retried 3 times, not 10."""


class HookHandler(TypedDict):
    """One handler in Claude Code's `hooks` settings."""

    type: Literal["http", "command"]
    url: NotRequired[str]
    command: NotRequired[str]
    timeout: NotRequired[int]
    headers: NotRequired[dict[str, str]]
    allowedEnvVars: NotRequired[list[str]]
    onFailure: NotRequired[Literal["block"]]


class HookMatcher(TypedDict):
    matcher: NotRequired[str]
    hooks: list[HookHandler]


class Permissions(TypedDict):
    deny: list[str]
    disableBypassPermissionsMode: NotRequired[Literal["disable"]]


class ClaudeSettings(TypedDict):
    """The part of Claude Code's settings JSON the gateway writes."""

    hooks: dict[str, list[HookMatcher]]
    permissions: Permissions
    sandbox: NotRequired[dict[str, Any]]
    """Claude Code's OS sandbox, compiled from a `sandbox: required` policy."""
    allowedHttpHookUrls: NotRequired[list[str]]
    httpHookAllowedEnvVars: NotRequired[list[str]]
    env: NotRequired[dict[str, str]]
    apiKeyHelper: NotRequired[str]





def gateway_settings(
    url: str,
    *,
    static_denies: Sequence[str] = (),
    with_token: bool = True,
    timeout_s: int = 10,
    compact_timeout_s: int = 300,
    proxy: bool = True,
) -> ClaudeSettings:
    """Settings JSON (for --settings, .claude/settings.json or a managed drop-in)."""
    base = url.rstrip("/")
    hooks: dict[str, list[HookMatcher]] = {}
    for event in GATEWAY_EVENTS:
        handler: HookHandler = {
            "type": "http",
            "url": f"{base}/hooks/{event}",
            "timeout": compact_timeout_s if event == "PreCompact" else timeout_s,
        }
        if with_token:
            handler["headers"] = {"Authorization": f"Bearer ${TOKEN_ENV}"}
            handler["allowedEnvVars"] = [TOKEN_ENV]
        if event in BLOCKING_EVENTS:
            handler["onFailure"] = "block"
        entry: HookMatcher = {"hooks": [handler]}
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            entry = {"matcher": "*", "hooks": [handler]}
        hooks[event] = [entry]
    settings: ClaudeSettings = {
        "hooks": hooks,
        "allowedHttpHookUrls": [f"{base}/*"],
        "permissions": {"deny": list(dict.fromkeys(static_denies))},
    }
    if with_token:
        settings["httpHookAllowedEnvVars"] = [TOKEN_ENV]
    if proxy:
        settings["env"] = {"ANTHROPIC_BASE_URL": base, "CLAUDE_CODE_MAX_RETRIES": MAX_RETRIES}
        if with_token:
            settings["apiKeyHelper"] = API_KEY_HELPER
    return settings


COMMAND_HOOK_TIMEOUT_S = 30
"""The command hook's `timeout`, set explicitly: it answers well inside it (a local decision
within handlers/command.py's HOOK_DEADLINE_S plus a grace to record a deny; a relay within its
--timeout plus a margin)."""


def command_hook_handler(command: str, event: str = "PreToolUse") -> HookHandler:
    """A command hook handler: its timeout set, and for the blocking events `onFailure:
    block`, because measured on Claude Code 2.1.332 a command hook that overran its timeout or
    was killed let the tool run ("A hook didn't answer in time, so it didn't check this
    action"); with it, both block."""
    handler: HookHandler = {"type": "command", "command": command,
                            "timeout": COMPACT_TIMEOUT_S if event == "PreCompact"
                            else COMMAND_HOOK_TIMEOUT_S}
    if event in BLOCKING_EVENTS:
        handler["onFailure"] = "block"
    return handler


COMPACT_TIMEOUT_S = 300
"""A PreCompact hook's `timeout`: the archive of a long transcript is written within it."""


def command_hook_settings(
    url: str | None, *, static_denies: Sequence[str] = (), gateway_command: str = "agent-gateway",
    with_token: bool = True, policy_paths: Sequence[str] = (),
) -> ClaudeSettings:
    """The command-hook form, for every event the gateway needs. With `url`: each relays to
    that gateway (`agent-gateway hook EVENT --remote URL`: a PreToolUse or PreCompact it cannot
    answer exits 2, a block) and the model's requests go through its proxy. Without: each
    decides, archives, records and traces on this machine (`agent-gateway hook EVENT --policy
    P...`, handlers/command.py)."""
    import shlex

    if url is not None:
        tail = f" --remote {shlex.quote(url.rstrip('/'))}"
    else:
        tail = "".join(f" --policy {shlex.quote(p)}" for p in policy_paths)
    hooks: dict[str, list[HookMatcher]] = {}
    for event in GATEWAY_EVENTS:
        handler = command_hook_handler(f"{gateway_command} hook {command_name(event)}{tail}",
                                       event)
        entry: HookMatcher = {"hooks": [handler]}
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            entry = {"matcher": "*", "hooks": [handler]}
        hooks[event] = [entry]
    settings: ClaudeSettings = {
        "hooks": hooks,
        "permissions": {"deny": list(dict.fromkeys(static_denies))},
    }
    if url is not None:
        settings["env"] = {"ANTHROPIC_BASE_URL": url.rstrip("/"),
                           "CLAUDE_CODE_MAX_RETRIES": MAX_RETRIES}
        if with_token:
            settings["apiKeyHelper"] = API_KEY_HELPER
    return settings


def static_denies(policy: Policy) -> list[str]:
    """`mirrored_floor(policy).denies` (policy/floor.py)."""
    from gateway.policy.floor import mirrored_floor

    return mirrored_floor(policy).denies


def managed_settings(url: str, *, static_denies: Sequence[str] = (), with_token: bool = True
                     ) -> ClaudeSettings:
    """A managed-settings.d drop-in: the same wiring, plus bypass mode switched off so a
    user cannot skip the gateway's decisions with --dangerously-skip-permissions."""
    settings = gateway_settings(url, static_denies=static_denies, with_token=with_token)
    settings["permissions"]["disableBypassPermissionsMode"] = "disable"
    return settings


def with_sandbox(settings: ClaudeSettings, config: SandboxConfig, fingerprint: str
                 ) -> ClaudeSettings:
    """`settings` with Claude Code's OS sandbox compiled from a `sandbox: required` policy:
    the sandbox block, its file rules among the denies, and the PreToolUse hook told the
    sandbox's fingerprint (in its URL or its arguments, which the agent cannot change), so
    the gateway leaves to the sandbox what only the kernel sees."""
    from gateway.policy.sandbox import with_hook_hosts

    fragment = config.settings()
    settings["sandbox"] = fragment["sandbox"]
    denies = [*settings["permissions"]["deny"], *fragment["permissions"]["deny"]]
    settings["permissions"]["deny"] = list(dict.fromkeys(denies))
    for matcher in settings["hooks"].get("PreToolUse", []):
        for handler in matcher["hooks"]:
            if "url" in handler:
                handler["url"] += f"?sandbox={fingerprint}"
            if "command" in handler:
                handler["command"] += f" --sandbox {fingerprint}"
    settings["sandbox"] = with_hook_hosts(cast(dict[str, Any], settings))["sandbox"]
    return settings
