"""The floor: the policy's denies as Claude Code's own `permissions.deny`.

Claude Code applies these itself, so they hold even when no gateway answers, and its search
tools leave out what they deny (a Grep over the project skips a `Read(**/.env)` file, which a
hook that sees only the directory cannot). Every way the gateway wires a session carries it:
`agent-gateway settings`, `run` and `gateway.query`.
"""

from __future__ import annotations

from typing import NamedTuple

from gateway.policy.compiled import PathRule, Policy
from gateway.policy.credential_stores import RULE_PREFIX as STORE_RULE_PREFIX


class Floor(NamedTuple):
    """The policy's denies as Claude Code's own `permissions.deny`."""

    denies: list[str]
    """Rules Claude Code enforces with the gateway's meaning, rewritten to its syntax where
    the gateway's spelling means something else to it (policy/parity.py)."""
    gateway_only: list[tuple[str, str]]
    """(rule id, rule) of the denies Claude Code has no same-meaning rule for: only the
    gateway holds them."""


def mirrored_floor(policy: Policy, *, local_secrets: bool = False) -> Floor:
    """The enforced `permissions.deny` rules of every layer, org first, as Claude Code reads
    them. Claude Code applies these itself, so they hold even when no gateway answers.
    `local_secrets`: the gateway's own key and token files on this host too, as Read denies
    (for a session on this host: `run`, `gateway.query`)."""
    from gateway.policy.parity import read_rule

    denies: list[str] = []
    gateway_only: list[tuple[str, str]] = []
    for layer in policy.layers:
        if layer.mode != "enforce":
            continue
        for rule in layer.rules:
            if (local_secrets and rule.id in ("builtin:secrets", "builtin:gateway-state")
                    and isinstance(rule.matcher, PathRule)):
                # the gateway's keys and state: Claude Code's searches leave them out too
                denies.append(f"Read({rule.matcher.pattern.source})")
            elif rule.id.startswith(STORE_RULE_PREFIX) and isinstance(rule.matcher, PathRule):
                # under ~ wherever the session runs: `grep -r ~` and Grep skip them
                source = rule.matcher.pattern.source
                denies += [f"Read({source})", f"Edit({source})"]
            elif rule.decision == "deny" and not rule.monitor and rule.listed:
                mirror = read_rule(rule.text).mirror
                if mirror is None:
                    gateway_only.append((rule.id, rule.text))
                else:
                    denies.append(mirror)
    return Floor(list(dict.fromkeys(denies)), gateway_only)
