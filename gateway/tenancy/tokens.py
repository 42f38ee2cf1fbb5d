"""Who calls the gateway: the tokens file mapping tokens to tenants, their policy layers,
the directories their remote runs may use, and their team budgets.

Read by `serve` (authentication, per-tenant policies, the budget gate) and by `run` and
`spend` (the team a run is charged to); neither shell owns it.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gateway.budgets.limits import Limit, parse_budget
from gateway.env import variable
from gateway.errors import ConfigError, one_line

ENTRY_KEYS = frozenset({"token", "token_env", "name", "policies", "runs_roots", "budget"})


@dataclass(frozen=True)
class Caller:
    """Who is calling (the tenant), and which policy layers beyond the server's apply."""

    name: str
    extra_policies: tuple[str, ...] = ()
    runs_roots: tuple[str, ...] | None = None
    """Directories this caller's remote runs may use; None: the server's --runs-root."""
    budget: tuple[Limit, ...] = ()
    """The team's spend limits (tokens file `budget:`); () means no budget."""


@dataclass(frozen=True)
class TokenTable:
    """Tokens mapped to callers; empty means authentication is off (loopback only)."""

    callers: Mapping[str, Caller]

    @property
    def enabled(self) -> bool:
        return bool(self.callers)

    def budgets(self) -> dict[str, tuple[Limit, ...]]:
        """Each team with a budget, and its limits (one team may hold several tokens)."""
        return {c.name: c.budget for c in self.callers.values() if c.budget}

    def lookup(self, token: str) -> Caller | None:
        # Compare against every token in constant time so timing reveals nothing.
        found = None
        for known, caller in self.callers.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = caller
        return found


def load_tokens(token: str | None, tokens_file: str | None) -> TokenTable:
    """AGENT_GATEWAY_TOKEN (one caller, server policies only) and/or a tokens file:

    ```yaml
    tokens:
      - token: "..."            # or token_env: TEAM_A_TOKEN
        name: team-a            # the tenant: sessions belong to it
        policies: [policies/team-a.yaml]
        runs_roots: [/srv/runs/team-a]   # where its remote runs may work (else --runs-root)
        budget: {usd: 50, per: day}      # the team's spend (day|week|month, UTC), see limits.py
    ```
    """
    callers: dict[str, Caller] = {}
    if token:
        callers[token] = Caller(name="default")
    if tokens_file:
        for secret, caller in _read_tokens_file(Path(tokens_file)).items():
            if secret in callers:
                raise ConfigError(f"{tokens_file}: a token is listed twice")
            callers[secret] = caller
    return TokenTable(callers)


def read_budgets(tokens_file: str) -> dict[str, tuple[Limit, ...]]:
    """Each team's budget in a tokens file, validated like `serve` does, without needing the
    tokens themselves (`agent-gateway spend` may run where no token_env is set)."""
    callers = _read_tokens_file(Path(tokens_file), secrets=False)
    return {c.name: c.budget for c in callers.values() if c.budget}


def _read_tokens_file(path: Path, *, secrets: bool = True) -> dict[str, Caller]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {one_line(exc)}") from None
    if not isinstance(data, dict) or set(data) != {"tokens"}:
        raise ConfigError(f"{path}: expected exactly one key, 'tokens:', holding a list")
    entries = data["tokens"]
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected a 'tokens:' list")
    callers: dict[str, Caller] = {}
    for n, entry in enumerate(entries):
        secret, caller = _entry(path, n, entry, secrets)
        if secret in callers:
            raise ConfigError(f"{path}: tokens[{n}] repeats a token listed before it")
        callers[secret] = caller
    by_team: dict[str, tuple[Limit, ...]] = {}
    for caller in callers.values():
        if by_team.setdefault(caller.name, caller.budget) != caller.budget:
            raise ConfigError(
                f"{path}: the tokens of {caller.name} give it different budgets; "
                "a team has one budget, so give each of its tokens the same one"
            )
    return callers


def _entry(path: Path, n: int, entry: Any, secrets: bool) -> tuple[str, Caller]:
    where = f"{path}: tokens[{n}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping")
    unknown = sorted(str(k) for k in set(entry) - ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    secret = entry.get("token") or variable(str(entry.get("token_env", ""))) or ""
    if not secrets:
        secret = f"entry {n}"
    if not secret or not isinstance(secret, str):
        raise ConfigError(f"{where} has no token (or its token_env is unset)")
    name = entry.get("name", f"token-{n}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name must be a non-empty string")
    base = path.parent
    policies = _paths(entry.get("policies"), f"{where}.policies", base)
    roots = entry.get("runs_roots")
    runs_roots = None if roots is None else _paths(roots, f"{where}.runs_roots", base)
    budget = () if entry.get("budget") is None else parse_budget(entry["budget"], f"{where}.budget")
    return secret, Caller(
        name=name, extra_policies=policies, runs_roots=runs_roots, budget=budget
    )


def _paths(value: Any, where: str, base: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(f"{where} must be a list of paths")
    return tuple(str(p if Path(p).is_absolute() else base / p) for p in value)
