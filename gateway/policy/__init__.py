"""Policy engine: compiled policies, the one decision function, loading and reloading.

Importing this package stays light (no pydantic, no yaml) so the command hook can decide from
a cached compiled policy; `load_policy` imports the validating loader on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.policy.compiled import Layer, Limits, Policy, Rule
from gateway.policy.evaluate import Explanation, Hit, decide, explain

if TYPE_CHECKING:
    from gateway.policy.builtin import Protected


def load_policy(paths: Sequence[str], protected: Protected | None = None) -> Policy:
    """Read, validate and combine policy files (org first); PolicyError names file:line.
    `protected`: what the built-in self-protection rules guard (default: this host's)."""
    from gateway.policy.loader import load_policy as _load

    return _load(paths, protected)


__all__ = [
    "Explanation",
    "Hit",
    "Layer",
    "Limits",
    "Policy",
    "Rule",
    "decide",
    "explain",
    "load_policy",
]
