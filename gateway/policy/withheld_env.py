"""Which environment variables the agent's commands never see. Pure.

Claude Code passes its environment to every command it runs, and its own holds the
organization's credential for the model and the gateway's tokens. Under `sandbox: required`
the sandbox is told to unset these names for sandboxed commands
(`sandbox.credentials.envVars`, mode `deny`). A policy names more (`environment: {withhold:
[DEPLOY_*]}`); a pattern is matched against the variables of the environment Claude Code
starts with, where the gateway knows it (`run`). Claude Code's own scrubbing
(`CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1`) is not used: measured with 2.1.337 it lifts the
sandbox's confinement of writes (`echo x > /outside` then succeeds), and it withholds the
gateway's token from its own hooks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from gateway.env import GATEWAY_SECRETS

BUILTIN_WITHHELD = (
    # the organization's credentials for the model
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_FOUNDRY_API_KEY",
    # Claude Code's own channel to itself
    "CLAUDE_CODE_MESSAGING_TOKEN",
    # the gateway's
    *sorted(GATEWAY_SECRETS),
)


def is_pattern(name: str) -> bool:
    return any(c in name for c in "*?")


def withheld_names(patterns: Iterable[str], environ: Mapping[str, str] | None = None
                   ) -> tuple[str, ...]:
    """The built-in names, the policy's exact names, and the variables of `environ` its
    patterns match (none without an environment)."""
    patterns = tuple(patterns)
    exact = [p for p in patterns if not is_pattern(p)]
    matched = [name for name in sorted(environ or {})
               if any(fnmatchcase(name, p) for p in patterns if is_pattern(p))]
    return tuple(dict.fromkeys((*BUILTIN_WITHHELD, *exact, *matched)))
